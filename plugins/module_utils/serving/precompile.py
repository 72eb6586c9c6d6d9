# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""DeepGEMM precompiling with an instance's own command line (``python -m sglang.compile_deep_gemm``).

SGLang 0.5.23's ``sglang.compile_deep_gemm`` takes ``launch_server``'s arguments (and ``--timeout``, default 3600),
starts a server on the instance's port and GPUs with CUDA graphs and torch.compile off, sends one request and leaves the
kernels in ``$SGLANG_DG_CACHE_DIR`` (and what the model load JIT-compiles in the other caches). So it runs where the
instance would: the same ``numactl`` prefix and flags, the instance's env file (its per-instance cache directories,
``CUDA_VISIBLE_DEVICES``), the service user, and the unit's sandbox: a transient unit (``systemd-run``) with the
instance unit's [Service] settings, so what it writes is writable, owned and masked exactly as the server's own
compiles would be. Nothing of the env file is on the command line (systemd reads the file).

Whether the cache of the instance's key is complete is the record of the last successful precompile in that key's
directory (``pdserve.sglang.inputs_record``). The directory is the SGLang version, the venv and the instance
(caches.py); the record's inputs add what else invalidates a complete cache: the compile command line, the instance's
environment without secret-looking variables, and the GPUs the instance runs on (index, name, compute capability,
from gpu_facts). So a changed flag (a TP size, a model revision in the fingerprint) compiles again, a new venv starts
without a record, and so does a GPU swap: the kernels compiled for sm_90 are no use on sm_100, and the caches' own
keys (which name the architecture) would leave them unused, not wrong, so a skip there would mean a cold start.
"""

import posixpath
from typing import Any, Dict, List, Optional, Tuple

LAUNCH_MODULE = "sglang.launch_server"
COMPILE_MODULE = "sglang.compile_deep_gemm"
RECORD_NAME = "pdserve-precompile.json"
# What DeepGEMM runs on: Hopper (sm_90) and the Blackwell datacenter family (sm_100, sm_103). Elsewhere (sm_120 and
# older parts) SGLang uses other kernels and compile_deep_gemm has nothing to compile.
DEEP_GEMM_MAJORS = (9, 10)
# Settings of the instance's unit that the transient unit does not take over: it runs once and is waited for.
_NOT_TAKEN = ("Type", "Restart", "RestartSec", "TimeoutStopSec")


def compile_words(words: List[Any]) -> Optional[List[str]]:
    """The instance's ExecStart words with ``-m sglang.launch_server`` replaced by ``-m sglang.compile_deep_gemm``;
    None when the command does not run that module (a launch command of its own: nothing to derive from)."""
    words = [str(w) for w in words]
    for index in range(len(words) - 1):
        if words[index] == "-m" and words[index + 1] == LAUNCH_MODULE:
            return words[:index + 1] + [COMPILE_MODULE] + words[index + 2:]
    return None


def precompile_entry(name: str, words: List[Any], properties: List[Tuple[str, Any]], variables: List[Tuple[str, Any]],
                     cache_base: Optional[str], gpus: Optional[List[Any]] = None) -> Optional[Dict[str, Any]]:
    """What the precompile of one instance needs, or None where it cannot run (no per-instance cache directory, or a
    launch command that is not ``-m sglang.launch_server``).

    ``words``: the unit's ExecStart words (numactl prefix included); ``properties``: the unit's [Service] settings as
    (key, value) pairs; ``variables``: its env file's (name, value) pairs; ``cache_base``: its SGLANG_CACHE_DIR;
    ``gpus``: the instance's GPU indexes (empty: every GPU of the host), which record_inputs() keys the record by.
    """
    # Here, not at the top: secrets.py imports units.py, which imports this module.
    from ansible_collections.pdserve.sglang.plugins.module_utils.secrets import looks_secret

    command = compile_words(words)
    if command is None or not cache_base:
        return None
    keep = [[str(k), str(v)] for k, v in properties if k not in _NOT_TAKEN]
    env = dict((str(k), str(v)) for k, v in variables if not looks_secret(str(k)))
    return {
        "name": name,
        "unit": "sglang-precompile-%s.service" % name,
        "command": command,
        "properties": keep,
        "record": posixpath.join(cache_base, RECORD_NAME),
        "gpus": [int(g) for g in gpus or []],
        "inputs": {"command": command, "env": env},
    }


def devices(indexes: List[Any], host_gpus: List[Dict[str, Any]]) -> List[str]:
    """What the instance's kernels are compiled for: one ``<index>: <name> (<compute capability>)`` per GPU it runs on
    (``indexes``; empty: every GPU of the host), from gpu_facts' ``gpus``. A GPU gpu_facts did not list is
    ``<index>: not found``; with no GPU read at all (no nvidia-smi) the list says so, so a later read differs."""
    by_index = dict(((gpu or {}).get("index"), gpu) for gpu in host_gpus or [])
    if not by_index:
        return ["GPUs not read"]
    wanted = [int(i) for i in indexes] if indexes else sorted(i for i in by_index if i is not None)
    out = []
    for index in wanted:
        gpu = by_index.get(index)
        if gpu is None:
            out.append("%d: not found" % index)
        else:
            out.append("%d: %s (%s)" % (index, gpu.get("name") or "unknown", gpu.get("compute_capability") or "unknown"))
    return out


def record_inputs(entry: Dict[str, Any], host_gpus: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The inputs the record of a complete precompile holds: the entry's command line and environment, and the GPUs
    the instance runs on (devices()): a GPU of another architecture, type or count compiles again."""
    return dict(entry["inputs"], gpus=devices(entry.get("gpus") or [], host_gpus))


def systemd_run_argv(entry: Dict[str, Any], timeout: int, systemd_run: str = "systemd-run") -> List[str]:
    """``systemd-run`` as a transient unit with the instance unit's settings, waiting for it and passing its output
    through; ``--timeout`` is the tool's own limit, ``RuntimeMaxSec=`` a hard stop a little after it."""
    timeout = int(timeout)
    argv = [systemd_run, "--unit=%s" % entry["unit"], "--wait", "--pipe", "--quiet", "--collect", "--service-type=exec"]
    for key, value in entry["properties"]:
        argv += ["-p", "%s=%s" % (key, value)]
    argv += ["-p", "RuntimeMaxSec=%d" % (timeout + 300), "--"] + list(entry["command"]) + ["--timeout", str(timeout)]
    return argv


def deep_gemm_runs(gpus: List[Dict[str, Any]]) -> bool:
    """Whether DeepGEMM runs on this host's GPUs (gpu_facts' ``gpus``): any GPU of compute capability 9.x or 10.x."""
    return any((gpu or {}).get("compute_capability_major") in DEEP_GEMM_MAJORS for gpu in gpus or [])


def wanted(setting: str, gpus: List[Dict[str, Any]]) -> bool:
    """``always``, ``never``, or ``auto`` (where DeepGEMM runs)."""
    if setting == "always":
        return True
    if setting == "never":
        return False
    return deep_gemm_runs(gpus)


def failure(name: str, host: str, rc: Any, stdout: str, phase: str, unit: str) -> str:
    """Why the play stops after a failed precompile: the instance, where it failed, the tool's last lines, and where
    its record is (the transient unit's journal; its output came through systemd-run's --pipe and is shown above)."""
    return ("DeepGEMM precompile of %s on %s failed %s: %s. Its output is above; systemd's record of the run: "
            "journalctl -u %s. Fix the cause (the instance's command line, its GPUs, a busy port), raise "
            "sglang_server_precompile_timeout, or set sglang_server_precompile=never to let the server compile during "
            "its start" % (name, host, phase, outcome(name, rc, stdout).split(": ", 1)[1].rstrip("."), unit))


def outcome(name: str, rc: Any, stdout: str) -> str:
    """One line about a precompile run, from its output: the emulator's count of compiled kernels when it printed it,
    SGLang's success line otherwise."""
    lines = [line for line in (stdout or "").splitlines() if line.strip()]
    said = [line for line in lines if "compile caches" in line and "compiled" in line]
    if rc != 0:
        return "%s: sglang.compile_deep_gemm failed (rc %s): %s" % (name, rc, " | ".join(lines[-5:]))
    if said:
        return "%s: precompiled: %s" % (name, said[-1].split("SGLang emulator: ", 1)[-1])
    return "%s: precompiled (%s)" % (name, lines[-1] if lines else "no output")
