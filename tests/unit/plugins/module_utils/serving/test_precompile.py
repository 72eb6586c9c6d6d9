# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The DeepGEMM precompile of an instance (module_utils/serving/precompile.py, server_unit's ``precompile``): the unit's
own command line with sglang.compile_deep_gemm, in a transient unit with the unit's own settings."""

from ansible_collections.pdserve.sglang.plugins.module_utils.install import inputs_record as R
from ansible_collections.pdserve.sglang.plugins.module_utils.serving import precompile as P
from ansible_collections.pdserve.sglang.plugins.module_utils.serving import units as U
from serving_support import DECODE, MODEL, PREFILL, instance  # noqa: E402  pylint: disable=wrong-import-position
from .test_units import exec_words, sections, server_settings

FINGERPRINT = {"sglang": "0.5.23", "venv": "/opt/sglang/venvs/sglang-0.5.23", "model": "/models/DeepSeek-V4-Flash"}


def _unit(mode=PREFILL, name="prefill", **overrides):
    settings = server_settings(cache_root="/var/lib/sglang/cache", fingerprint=FINGERPRINT, **overrides)
    return U.server_unit(instance(mode, name), MODEL, settings)


def test_the_compile_runs_the_units_own_command_with_compile_deep_gemm():
    unit = _unit()
    entry = unit["precompile"]
    words = exec_words(unit["unit_text"])
    launch = words.index("sglang.launch_server")
    assert entry["command"] == words[:launch] + ["sglang.compile_deep_gemm"] + words[launch + 1:]
    assert entry["command"][:3] == ["/usr/bin/numactl", "--cpunodebind=0", "--membind=0"]
    assert entry["unit"] == "sglang-precompile-prefill.service"


def test_the_transient_unit_has_the_units_settings_and_sandbox():
    unit = _unit(DECODE, "decode")
    service = sections(unit["unit_text"])["Service"]
    expected = [[k, v] for k, v in service if k not in ("Type", "ExecStart", "Restart", "RestartSec", "TimeoutStopSec")]
    entry = unit["precompile"]
    assert entry["properties"] == expected
    assert ["EnvironmentFile", "/etc/sglang/decode.env"] in expected and ["ProtectSystem", "strict"] in expected
    assert ["UMask", "0027"] in expected and ["User", "sglang"] in expected
    assert ["ReadWritePaths", "/var/lib/sglang"] in expected
    argv = P.systemd_run_argv(entry, 1200)
    assert argv[:7] == ["systemd-run", "--unit=sglang-precompile-decode.service", "--wait", "--pipe", "--quiet",
                        "--collect", "--service-type=exec"]
    props = [argv[i + 1] for i, word in enumerate(argv[:argv.index("--")]) if word == "-p"]
    assert props == ["%s=%s" % (k, v) for k, v in expected] + ["RuntimeMaxSec=1500"]
    assert argv[argv.index("--") + 1:] == entry["command"] + ["--timeout", "1200"]


def test_the_record_lives_in_the_instances_cache_key_and_holds_no_secret():
    unit = _unit(DECODE, "decode", env={"SGLANG_X": "1", "HF_TOKEN": "hf_s3cret"})
    entry = unit["precompile"]
    assert entry["record"].startswith("/var/lib/sglang/cache/sglang-0.5.23-") and entry["record"].endswith(
        "/decode/pdserve-precompile.json")
    env = entry["inputs"]["env"]
    assert env["SGLANG_X"] == "1" and "HF_TOKEN" not in env and "hf_s3cret" not in repr(entry)
    assert env["SGLANG_CACHE_DIR"] + "/pdserve-precompile.json" == entry["record"]
    assert entry["inputs"]["command"] == entry["command"]
    # another venv: another key, so another record (an upgrade starts without one)
    other = U.server_unit(instance(DECODE, "decode"), MODEL, server_settings(
        cache_root="/var/lib/sglang/cache", fingerprint=dict(FINGERPRINT, venv="/opt/sglang/venvs/sglang-0.5.24")))
    assert other["precompile"]["record"] != entry["record"]


def test_nothing_to_precompile_without_the_launch_module_caches_or_on_several_hosts():
    assert U.server_unit(instance(PREFILL, "prefill"), MODEL, server_settings())["precompile"] is None  # no cache root
    assert _unit(launch_command="/usr/bin/python3 /opt/emulator/sglang_emulator.py")["precompile"] is None
    assert P.compile_words(["python", "-m", "sglang.launch_server", "--port", 1]) == [
        "python", "-m", "sglang.compile_deep_gemm", "--port", "1"]
    assert P.compile_words(["python", "-m", "other"]) is None


def test_auto_precompiles_where_deep_gemm_runs():
    def gpus(*majors):
        return [{"compute_capability_major": m} for m in majors]
    assert P.wanted("auto", gpus(9)) and P.wanted("auto", gpus(10)) and P.wanted("auto", gpus(12, 9))
    assert not P.wanted("auto", gpus(12)) and not P.wanted("auto", gpus(8)) and not P.wanted("auto", [])
    assert P.wanted("always", []) and not P.wanted("never", gpus(9))


def test_the_outcome_line():
    out = ("Begin DeepGEMM Kernels compilation...\n[2026-12-03] SGLang emulator: compile caches cold: compiled 4 of 4 "
           "DeepGEMM kernel groups and 1 JIT module in 2.00 s (deep_gemm=/c, jit=/j, all cached now: True)\n"
           "DeepGEMM Kernels compilation finished successfully.\n")
    assert P.outcome("p", 0, out) == ("p: precompiled: compile caches cold: compiled 4 of 4 DeepGEMM kernel groups and "
                                      "1 JIT module in 2.00 s (deep_gemm=/c, jit=/j, all cached now: True)")
    assert P.outcome("p", 0, "DeepGEMM Kernels compilation finished successfully.\n") == (
        "p: precompiled (DeepGEMM Kernels compilation finished successfully.)")
    assert P.outcome("p", 1, "a\nTimeoutError: DeepGEMM Kernels compilation timeout.\n").startswith(
        "p: sglang.compile_deep_gemm failed (rc 1): a | TimeoutError")


# The record of a complete precompile is keyed by what invalidates the cache: the venv and SGLang version (its
# directory), the command line and environment, and the GPUs of the instance (its inputs).

def _gpus(spec):
    """gpu_facts' ``gpus`` from {index: (name, compute capability)}."""
    return [{"index": i, "name": name, "compute_capability": cc, "compute_capability_major": int(cc.split(".")[0])}
            for i, (name, cc) in sorted(spec.items())]


H200 = ("NVIDIA H200", "9.0")
B200 = ("NVIDIA B200", "10.0")


def _inputs(unit, host_gpus):
    return P.record_inputs(unit["precompile"], host_gpus)


def test_the_record_is_keyed_by_the_gpus_the_instance_runs_on():
    unit = _unit()  # prefill on GPUs 0-3
    assert unit["precompile"]["gpus"] == [0, 1, 2, 3]
    hopper = _gpus(dict((i, H200) for i in range(8)))
    inputs = _inputs(unit, hopper)
    assert inputs["gpus"] == ["%d: NVIDIA H200 (9.0)" % i for i in range(4)]
    assert inputs["command"] == unit["precompile"]["command"] and inputs["env"] == unit["precompile"]["inputs"]["env"]
    # The same GPUs: the record matches, so a restart or a second run skips the compile.
    assert R.differs(_inputs(unit, hopper), R.normalize(inputs)) == []
    # An sm_90 card swapped for an sm_100 one under the instance: compiled again.
    swapped = _gpus(dict((i, B200 if i == 2 else H200) for i in range(8)))
    assert R.differs(_inputs(unit, swapped), R.normalize(inputs)) == ["gpus"]
    # Another type of the same architecture is another key too (the compiled configs follow the SM count).
    h100 = _gpus(dict((i, ("NVIDIA H100 80GB HBM3", "9.0")) for i in range(8)))
    assert R.differs(_inputs(unit, h100), R.normalize(inputs)) == ["gpus"]
    # A GPU the instance does not run on changes nothing.
    other = _gpus(dict((i, B200 if i == 6 else H200) for i in range(8)))
    assert R.differs(_inputs(unit, other), R.normalize(inputs)) == []


def test_fewer_gpus_or_none_read_is_another_key():
    unit = _unit()
    inputs = _inputs(unit, _gpus(dict((i, H200) for i in range(8))))
    half = _inputs(unit, _gpus(dict((i, H200) for i in range(2))))
    assert half["gpus"] == ["0: NVIDIA H200 (9.0)", "1: NVIDIA H200 (9.0)", "2: not found", "3: not found"]
    assert R.differs(half, R.normalize(inputs)) == ["gpus"]
    unread = _inputs(unit, [])
    assert unread["gpus"] == ["GPUs not read"] and R.differs(unread, R.normalize(inputs)) == ["gpus"]


def test_an_instance_without_a_gpu_list_is_keyed_by_every_gpu_of_the_host():
    assert P.devices([], _gpus({0: H200, 1: B200})) == ["0: NVIDIA H200 (9.0)", "1: NVIDIA B200 (10.0)"]
    assert P.devices(["1"], _gpus({0: H200, 1: B200})) == ["1: NVIDIA B200 (10.0)"]


def test_the_cache_directories_are_keyed_by_version_venv_and_instance():
    base = _unit(DECODE, "decode")["precompile"]["record"]
    venv = U.server_unit(instance(DECODE, "decode"), MODEL, server_settings(
        cache_root="/var/lib/sglang/cache", fingerprint=dict(FINGERPRINT, venv="/opt/sglang/venvs/other")))
    version = U.server_unit(instance(DECODE, "decode"), MODEL, server_settings(
        cache_root="/var/lib/sglang/cache", fingerprint=dict(FINGERPRINT, sglang="0.5.24")))
    other = U.server_unit(instance(DECODE, "decode", name="decode-1", port=31002), MODEL, server_settings(
        cache_root="/var/lib/sglang/cache", fingerprint=FINGERPRINT))
    records = [base, venv["precompile"]["record"], version["precompile"]["record"], other["precompile"]["record"]]
    assert len(set(records)) == 4
    assert all(r.startswith("/var/lib/sglang/cache/sglang-") and r.endswith("/pdserve-precompile.json") for r in records)


def test_a_failure_names_the_instance_the_phase_the_output_and_the_journal():
    out = "Begin DeepGEMM Kernels compilation...\n[t] TimeoutError: DeepGEMM Kernels compilation timeout.\n"
    msg = P.failure("prefill-0", "gpu1", 1, out, "before its first start", "sglang-precompile-prefill-0.service")
    assert msg.startswith("DeepGEMM precompile of prefill-0 on gpu1 failed before its first start: "
                          "sglang.compile_deep_gemm failed (rc 1): ")
    assert "TimeoutError: DeepGEMM Kernels compilation timeout." in msg
    assert "journalctl -u sglang-precompile-prefill-0.service" in msg
    assert "sglang_server_precompile_timeout" in msg and "sglang_server_precompile=never" in msg
