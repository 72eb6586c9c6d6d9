# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""systemd unit and environment files of the model servers and the router, rendered as text.

Both kinds share one layout: a marker line (how the roles find the units they rendered), [Unit],
[Service] with one flag per ExecStart line and every value quoted, the lifecycle settings, the
hardening options, [Install]. The roles write the text with ansible.builtin.copy (diff, check mode).
"""

import json
import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ansible_collections.pdserve.sglang.plugins.module_utils.serving.cmdline import (
    ROUTER_IMPLEMENTATIONS,
    credential_lines,
    router_args,
    worker_lines,
    worker_set,
    router_credentials,
    server_args,
)
from ansible_collections.pdserve.sglang.plugins.module_utils.serving import unit_values as V
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.caches import instance_caches
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.nodes import rank_stop_timeout
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.precompile import precompile_entry

# Flags and paths are written bare for readability; anything else is quoted.
_BARE_WORD = re.compile(r"(--?[A-Za-z0-9]|/)[A-Za-z0-9_.,:/=+-]*")
HEADER = "# Ansible managed (pdserve.sglang): local changes are overwritten on the next run."
SERVER_MARKER = "# pdserve.sglang.sglang_server mode=%s"
ROUTER_MARKER = "# pdserve.sglang.sglang_router"
# What a unit runs, first in its env file as PDSERVE_<FIELD>: a new version, venv or model revision changes the file,
# so the unit restarts and the restart plan names the field (module_utils/serving/restart_plan.py).
FINGERPRINT_FIELDS = ("sglang", "sglang_router", "smg", "venv", "model")
# Settings whose values systemd expands specifiers in: a % of the value is written %%.
SPECIFIER_SETTINGS = ("Description", "WorkingDirectory", "EnvironmentFile", "ReadWritePaths", "CacheDirectory",
                      "After", "Wants")


class UnitValueError(ValueError):
    """A value that cannot be written into a unit or env file; the message names the variable behind it."""


def _refuse(unit: str, variable: str, why: str):
    raise UnitValueError("cannot render %s: %s %s (the preflight names the inventory variable and the fix: "
                         "--tags preflight)" % (unit, variable, why))


def fingerprint_variables(fingerprint: Optional[Dict[str, Any]]) -> List[Tuple[str, Any]]:
    """``[(PDSERVE_SGLANG, "0.5.23"), (PDSERVE_VENV, ...), ...]`` for the fields that have a value."""
    fingerprint = fingerprint or {}
    return [("PDSERVE_" + field.upper(), fingerprint[field]) for field in FINGERPRINT_FIELDS
            if fingerprint.get(field) not in (None, "")]


def _text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def systemd_quote(value: Any) -> str:
    """One word of an ExecStart= line: double quotes, with \\, ", % and $ escaped for systemd.

    A control character is refused (UnitValueError), never escaped: no value this collection writes has one.
    """
    text = _text(value)
    why = V.control_message(text)
    if why:
        raise UnitValueError("an ExecStart word %s: %r" % (why, text))
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$")
    return '"%s"' % text


def env_quote(value: Any) -> str:
    """One value of an EnvironmentFile= line (KEY="value"); a control character is refused (UnitValueError)."""
    text = _text(value)
    why = V.control_message(text)
    if why:
        raise UnitValueError("an environment value %s: %r" % (why, text))
    return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"')


def exec_word(value: Any) -> str:
    """A value word of an ExecStart= line: quoted, except exactly ``${NAME}``, left for systemd to expand."""
    text = _text(value)
    if V.ENV_REFERENCE.fullmatch(text):
        return '"%s"' % text
    return systemd_quote(text)


def exec_start(first: List[Any], lines: List[List[Any]]) -> str:
    """``ExecStart=`` with ``first`` (the executable and its leading words) and one line per flag."""
    why = V.executable_problem(first[0]) if first else "is empty"
    if why:
        raise UnitValueError("the program of ExecStart= %s" % why)
    head = [str(first[0]).replace("%", "%%")] + [systemd_quote(word) for word in first[1:]]
    rows = ["ExecStart=" + " ".join(head)]
    for line in lines:
        flag = str(line[0])
        # Quoted when extra_args made it a --flag=value word that systemd would split, expand ($) or
        # read as a specifier (%).
        words = [flag if _BARE_WORD.fullmatch(flag) else systemd_quote(flag)]
        words += [exec_word(value) for value in line[1:]]
        rows.append("    " + " ".join(words))
    return " \\\n".join(rows)


def render_env(marker: str, comment: str, variables: Iterable[Tuple[str, Any]]) -> str:
    """An environment file: the header and marker, a comment, then KEY="value" lines in the given order."""
    out = [HEADER, marker, "# " + comment]
    for key, value in variables:
        if not isinstance(key, str) or not V.ENV_NAME.fullmatch(key):
            raise UnitValueError("an environment variable name is not valid: %r" % (key,))
        out.append("%s=%s" % (key, env_quote(value)))
    return "\n".join(out) + "\n"


def server_unit(instance: Dict[str, Any], model: Dict[str, Any], settings: Dict[str, Any]) -> Dict[str, Any]:
    """Unit and env file of one model server instance.

    ``instance``: a normalized instance of the topology (its ``metrics`` says whether it serves /metrics).
    ``settings``: launch_command, numa_binding, numactl_path, user, group, home,
    config_dir, unit_dir, restart_sec, timeout_stop_sec, start_limit_interval_sec, start_limit_burst,
    limit_nofile, hardening (dict), env (dict: transfer + model environment), disaggregation_bootstrap_timeout and
    disaggregation_waiting_timeout (SGLang's PD timeouts, seconds: each written into the env file of the side that reads
    it, unless env sets it), disaggregation_heartbeat_interval (seconds) and disaggregation_heartbeat_max_failure (the
    decode's heartbeat to each prefill: written into the decode's env file, unless env sets it), fingerprint (dict:
    sglang, venv, model; written first into the env file), cache_root (the instance's compile caches go below it, keyed
    by the fingerprint's sglang and venv; empty: SGLang's defaults under the home).
    Returns {name, unit, mode, unit_path, env_file, unit_text, env_text, argv_lines, files, directories, precompile
    (precompile.precompile_entry: the sglang.compile_deep_gemm run of this instance, or None)}.
    """
    _guard(settings, "sglang_server_", instance["unit"])
    launch = str(settings["launch_command"]).split()
    lines = server_args(instance, model, settings.get("numa_binding", "numactl"), instance.get("metrics", True))
    numactl = settings.get("numa_binding", "numactl") == "numactl" and instance.get("numa_node") is not None
    if numactl:
        first = [settings["numactl_path"], "--cpunodebind=%s" % instance["numa_node"], "--membind=%s" % instance["numa_node"]]
        lines = [launch] + lines
    else:
        first = launch
    env_file = "%s/%s.env" % (str(settings["config_dir"]).rstrip("/"), instance["name"])
    service = [
        ("Type", "exec"),
        ("User", settings["user"]),
        ("Group", settings["group"]),
        ("WorkingDirectory", settings["home"]),
        ("EnvironmentFile", env_file),
    ]
    exec_line = _exec_start_of(instance["unit"], first, lines)
    timeout_stop = settings["timeout_stop_sec"]
    if instance.get("node_rank"):
        # A rank > 0 ignores SIGTERM and exits on rank 0's shutdown broadcast: wait for rank 0's stop and its grace.
        timeout_stop = rank_stop_timeout(timeout_stop)
    tail = [
        # Over several nodes too: a crash fails every rank, all restart and meet again; after a clean stop of rank 0
        # the other ranks exit 0 and stay down.
        ("Restart", "on-failure"),
        ("RestartSec", settings["restart_sec"]),
        # SGLang leaves scheduler and tokenizer children: stop the whole cgroup and give it time.
        ("KillMode", "control-group"),
        ("TimeoutStopSec", timeout_stop),
        ("LimitMEMLOCK", "infinity"),
        ("LimitNOFILE", settings["limit_nofile"]),
    ]
    hardening = dict(settings.get("hardening") or {})
    writable = [("ReadWritePaths", settings["home"])]
    caches = None
    if settings.get("cache_root"):
        fingerprint = settings.get("fingerprint") or {}
        caches = instance_caches(str(settings["cache_root"]), fingerprint.get("sglang", ""),
                                 str(fingerprint.get("venv", "")), instance["name"])
        home = str(settings["home"]).rstrip("/") + "/"
        if not (str(settings["cache_root"]) + "/").startswith(home):
            writable.append(("ReadWritePaths", settings["cache_root"]))
    text = _render(
        SERVER_MARKER % instance["mode"],
        [
            ("Description", "SGLang %s server %s (tp %s, port %s%s)" % (
                instance["mode"], instance["name"], instance["tp_size"], instance["port"],
                ", node rank %s of %s" % (instance["node_rank"], instance["nnodes"]) if instance.get("nodes") else "")),
            ("Documentation", "https://docs.sglang.ai/"),
            ("After", "network-online.target"),
            ("Wants", "network-online.target"),
            ("StartLimitIntervalSec", settings["start_limit_interval_sec"]),
            ("StartLimitBurst", settings["start_limit_burst"]),
        ],
        service, exec_line, tail, hardening, writable, instance["unit"])
    variables = fingerprint_variables(settings.get("fingerprint"))
    if instance.get("gpus"):
        variables.append(("CUDA_VISIBLE_DEVICES", ",".join(str(g) for g in instance["gpus"])))
    # SGLang's PD timeout (and on a decode its heartbeat) first: the shared and the instance's env may still set it.
    merged = V.pd_env(settings, instance["mode"])
    merged.update(settings.get("env") or {})
    if instance.get("nodes") and instance.get("advertise_ip"):
        # Where the other nodes and the KV transfer reach this rank (bootstrap registration, Mooncake/NIXL), not the
        # address SGLang would guess (the route to 8.8.8.8, or the hostname's, possibly 127.0.1.1).
        merged["SGLANG_HOST_IP"] = instance["advertise_ip"]
    if instance.get("nodes") and instance.get("net_ifname"):
        # Unset, gloo resolves the hostname and may land on loopback; NCCL may pick another NIC than its peers.
        merged["GLOO_SOCKET_IFNAME"] = instance["net_ifname"]
        merged["NCCL_SOCKET_IFNAME"] = instance["net_ifname"]
    merged.update(instance.get("env") or {})
    if caches:
        # Last: the collection's own per instance (the preflight refuses an inventory env that sets them).
        merged.update(caches["env"])
    variables += sorted(merged.items())
    unit_path = "%s/%s" % (str(settings.get("unit_dir", "/etc/systemd/system")).rstrip("/"), instance["unit"])
    env_text = _render_env_of(instance["unit"], SERVER_MARKER % instance["mode"],
                              "Environment of %s: what it runs (PDSERVE_*), transfer backend, shared model env, then the "
                              "instance's own env." % instance["unit"], variables)
    # The same command with sglang.compile_deep_gemm, in a transient unit with this unit's settings (precompile.py).
    # Over several hosts each node runs its own rank's: the play runs them at once, and rank 0 waits for the others
    # at its rendezvous as the server does.
    precompile = precompile_entry(
        instance["name"], list(first) + [word for line in lines for word in line],
        service + tail + V.hardening_lines(hardening) + writable, variables,
        caches["env"]["SGLANG_CACHE_DIR"] if caches else None, instance.get("gpus"))
    if precompile is not None:
        # Its ranks compile at once, one per node: precompile_runs orders such runs first, alike on every node.
        precompile["spans"] = bool(instance.get("nodes"))
    return {
        "name": instance["name"],
        "unit": instance["unit"],
        "unit_path": unit_path,
        "env_file": env_file,
        "unit_text": text,
        "env_text": env_text,
        "files": _files(settings, env_file, env_text, unit_path, text),
        "argv_lines": lines if not numactl else lines[1:],
        "precompile": precompile,
        "directories": [{"path": path, "owner": settings["user"], "group": settings["group"], "mode": "0750"}
                        for path in (caches["directories"] if caches else [])],
    }


def router_unit(router: Dict[str, Any], workers: Dict[str, List[Dict[str, Any]]], settings: Dict[str, Any]) -> Dict[str, Any]:
    """Unit, env file and credential files of the router on one host.

    ``settings``: launch_command (the router's python and the launcher), user, group, config_dir, credentials_dir,
    unit_dir, local_units (server units on this host to order after), restart_sec, timeout_stop_sec,
    start_limit_interval_sec, start_limit_burst, limit_nofile, hardening, api_key and control_plane_api_key (the
    secrets: each goes into a root-only credential file under credentials_dir, loaded by systemd with
    LoadCredential= and read by the launcher; never into the unit, the env file or a command line), tls_cert and
    tls_key (the PEM texts of the client port's certificate and key, when TLS is on: credentials too, whose paths the
    launcher hands the router), hf_hub_offline,
    hf_endpoint, env, fingerprint (dict: sglang_router or smg, venv), implementation (sglang-router or smg: the
    launcher's --implementation), and the router flags of
    serving_cmdline.ROUTER_FLAGS/ROUTER_SWITCHES plus extra_args.
    """
    _guard(settings, "sglang_router_", "sglang-router.service")
    launch = str(settings["launch_command"]).split()
    credentials = router_credentials(settings)
    credentials_dir = str(settings["credentials_dir"]).rstrip("/")
    for item in credentials:
        item["path"] = "%s/%s" % (credentials_dir, item["name"])
    config_dir = str(settings["config_dir"]).rstrip("/")
    workers_file = "%s/workers.json" % config_dir
    # The launcher's own options: the router implementation (always named: its default is sglang_defaults', not the
    # launcher's), the credentials' names (never their values) and the worker set file; "--" ends them.
    implementation = settings["implementation"]
    if implementation not in ROUTER_IMPLEMENTATIONS:
        _refuse("sglang-router.service", "sglang_router_implementation", "is %r, not one of %s"
                % (implementation, ", ".join(ROUTER_IMPLEMENTATIONS)))
    launch += ["--implementation", implementation]
    launch += [word for item in credentials for word in (item["option"], item["name"])]
    launch += ["--workers-file", workers_file, "--"]
    lines = router_args(router, settings)
    env_file = "%s/router.env" % config_dir
    order = " ".join(["network-online.target"] + list(settings.get("local_units") or []))
    text = _render(
        ROUTER_MARKER,
        [
            # No worker count here: the worker set changes without a restart (the worker set file).
            ("Description", "SGLang PD router on %s:%s" % (router["host"], router["port"])),
            ("Documentation", "https://docs.sglang.ai/advanced_features/router.html"),
            ("After", order),
            ("Wants", order),
            ("StartLimitIntervalSec", settings["start_limit_interval_sec"]),
            ("StartLimitBurst", settings["start_limit_burst"]),
        ],
        [
            ("Type", "exec"),
            ("User", settings["user"]),
            ("Group", settings["group"]),
            ("EnvironmentFile", env_file),
        ] + [("LoadCredential", "%s:%s" % (item["name"], item["path"])) for item in credentials] + [
            ("CacheDirectory", "sglang-router"),
        ],
        _exec_start_of("sglang-router.service", launch, lines),
        [
            ("Restart", "on-failure"),
            ("RestartSec", settings["restart_sec"]),
            ("KillMode", "control-group"),
            ("TimeoutStopSec", settings["timeout_stop_sec"]),
            ("LimitNOFILE", settings["limit_nofile"]),
        ],
        dict(settings.get("hardening") or {}), [], "sglang-router.service")
    variables = fingerprint_variables(settings.get("fingerprint"))
    variables.append(("HF_HOME", "/var/cache/sglang-router/huggingface"))
    if settings.get("hf_hub_offline"):
        variables.append(("HF_HUB_OFFLINE", "1"))
    if settings.get("hf_endpoint"):
        variables.append(("HF_ENDPOINT", settings["hf_endpoint"]))
    variables += sorted((settings.get("env") or {}).items())
    unit_path = "%s/sglang-router.service" % str(settings.get("unit_dir", "/etc/systemd/system")).rstrip("/")
    env_text = _render_env_of("sglang-router.service", ROUTER_MARKER,
                              "Environment of sglang-router.service: what it runs (PDSERVE_*), then its "
                              "settings. Its keys are systemd credentials (LoadCredential=), never here.", variables)
    files = _files(settings, env_file, env_text, unit_path, text)
    # Root only: systemd (PID 1) reads them and hands the router a private copy in $CREDENTIALS_DIRECTORY.
    files += [{"path": item["path"], "content": str(settings[item["setting"]]), "owner": "root", "group": "root",
               "mode": "0600"} for item in credentials]
    # The workers the router reads at its next start; not a unit file: a change registers or deregisters workers at
    # run time (pdserve.sglang.router_workers) and restarts nothing. The router's group reads it.
    worker_file = {"path": workers_file, "owner": "root", "group": settings["group"], "mode": "0640",
                   "content": json.dumps(worker_set(workers), indent=2, sort_keys=True) + "\n"}
    return {
        "name": "router",
        "unit": "sglang-router.service",
        "worker_set_file": worker_file,
        "unit_path": unit_path,
        "env_file": env_file,
        "credential_files": [item["path"] for item in credentials],
        "unit_text": text,
        "env_text": env_text,
        "files": files,
        "argv_lines": lines,
        # What the flag check parses: the unit's lines and the launcher's key flags with a placeholder for each key.
        "check_lines": lines + worker_lines(workers) + credential_lines(settings),
    }


def _files(settings, env_file, env_text, unit_path, unit_text):
    """Entries for pdserve.sglang.managed_files: the env file readable by the service group only."""
    return [
        {"path": env_file, "content": env_text, "owner": "root", "group": settings["group"], "mode": "0640"},
        {"path": unit_path, "content": unit_text, "owner": "root", "group": "root", "mode": "0644"},
    ]


def changed_units(units: List[Dict[str, Any]], changed_paths: Iterable[str]) -> List[str]:
    """The unit names whose unit or env file is among ``changed_paths``."""
    changed = set(changed_paths or [])
    return [u["unit"] for u in units if u["unit_path"] in changed or u["env_file"] in changed]


def _guard(settings, prefix, unit):
    """The renderer's last guard over the role's settings: the first value the preflight would refuse, raised."""
    found = V.settings_problems(settings, prefix, {"hardening": prefix + "systemd_hardening_overrides"})
    if found:
        variable, message, _fix = found[0]
        _refuse(unit, variable, message)


def _exec_start_of(unit, first, lines):
    for line in lines:
        for word in line:
            why = V.control_message(word) if V.is_scalar(word) else "is not a single word"
            if why:
                _refuse(unit, "the value of %s (ExecStart=)" % _text(line[0]).encode("unicode_escape").decode(), why)
    try:
        return exec_start(first, lines)
    except UnitValueError as exc:
        _refuse(unit, "ExecStart=", str(exc))


def _render_env_of(unit, marker, comment, variables):
    try:
        return render_env(marker, comment, variables)
    except UnitValueError as exc:
        # The value itself may be a secret: name the variable only.
        names = [k for k, v in variables if not isinstance(k, str) or not V.ENV_NAME.fullmatch(k) or V.control_message(v)]
        _refuse(unit, "the environment variable %r" % (names[0] if names else "?",),
                "is not a valid name or holds a control character" if names else str(exc))


def _lines(unit, pairs):
    rows = []
    for key, value in pairs:
        why = V.setting_problem(key, value)
        if why:
            _refuse(unit, "%s=" % key, why)
        text = _text(value)
        if key in SPECIFIER_SETTINGS:
            text = text.replace("%", "%%")
        rows.append("%s=%s" % (key, text))
    return rows


def _render(marker, unit, service, exec_line, tail, hardening, trailing, name="the unit"):
    found = V.hardening_problems(hardening)
    if found:
        option, message, _fix = found[0]
        _refuse(name, "the hardening option %s" % option, message)
    out = [HEADER, marker, "[Unit]"]
    out += _lines(name, unit)
    out += ["", "[Service]"]
    out += _lines(name, service)
    out.append(exec_line)
    out += _lines(name, tail)
    out += ["%s=%s" % (k, v) for k, v in V.hardening_lines(hardening)]
    out += _lines(name, list(trailing))
    out += ["", "[Install]", "WantedBy=multi-user.target"]
    return "\n".join(out) + "\n"
