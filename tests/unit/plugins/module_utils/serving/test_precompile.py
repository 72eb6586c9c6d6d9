# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The DeepGEMM precompile of an instance (module_utils/serving/precompile.py, server_unit's ``precompile``): the unit's
own command line with sglang.compile_deep_gemm, in a transient unit with the unit's own settings."""

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
