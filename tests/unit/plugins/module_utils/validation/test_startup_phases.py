# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Start-up phases read from a unit's journal (module_utils/validation/startup_phases.py)."""

from ansible_collections.pdserve.sglang.plugins.module_utils.validation import startup_phases as S

START_USEC = 100 * 10 ** 6  # systemd's ExecMainStartTimestampMonotonic: 100 s after boot
# SGLang 0.5.23's lines (texts from the wheel), as `journalctl -o short-monotonic` writes them.
LINES = [
    "[   90.000000] h sglang[1]: [2026-12-03 14:00:00] The server is fired up and ready to roll!",  # an earlier start
    "[  101.000000] h sglang[2]: [2026-12-03 14:01:01] Load weight begin. avail mem=79.11 GB",
    "[  106.000000] h sglang[2]: [2026-12-03 14:01:06] Try DeepGEMM JIT Compiling for <GEMM_NT_F8F8BF16> N=24576, "
    "K=1536, num_groups=1 with all Ms.",
    "[  109.000000] h sglang[2]: [2026-12-03 14:01:09] Load weight end. elapsed=8.10 s, type=DeepseekV4ForCausalLM, "
    "avail mem=41.17 GB, mem usage=37.94 GB.",
    "[  109.100000] h sglang[2]: [2026-12-03 14:01:09] Memory pool end. avail mem=7.62 GB",
    "[  109.200000] h sglang[2]: [2026-12-03 14:01:09] Capture target decode CUDA graph begin. avail mem=7.60 GB",
    "[  110.700000] h sglang[2]: [2026-12-03 14:01:10] Capture target decode CUDA graph end. elapsed=1.50 s",
    "[  110.800000] h sglang[2]: [2026-12-03 14:01:10] Engine startup timings (s): load_weight=8.10, "
    "kv_cache_allocation=0.10, scheduler_e2e=9.70, cuda_graph={prefill=0.00, decode=1.50, target_verify=0.00, "
    "draft_prefill=0.00, draft_decode=0.00, draft_extend=0.00}, tokenizer_e2e=9.80",
    "[  112.800000] h sglang[2]: [2026-12-03 14:01:12] The server is fired up and ready to roll!",
]


def test_a_whole_start():
    report = S.startup_report(START_USEC, LINES)
    assert report["phase"] == "ready" and report["ready_s"] == 12.8
    assert report["phases"] == {"load_weight": 8.1, "kv_cache_allocation": 0.1, "cuda_graph": 1.5, "engine": 9.8,
                                "warmup": 2.0, "kernel_compile": 3.0}
    assert S.describe("prefill-0", report) == ("prefill-0 ready in 12.8 s: load weights 8.1 s (of which DeepGEMM "
                                               "kernels 3.0 s), KV cache 0.1 s, CUDA graphs 1.5 s, warmup 2.0 s")


def test_only_the_last_start_counts():
    """The earlier start's ready line (before ExecMainStartTimestampMonotonic) is not this start's."""
    report = S.startup_report(START_USEC, LINES[:3])
    assert report["ready_s"] is None and report["phase"] == "compiling DeepGEMM kernels"


def test_a_start_that_is_not_ready_names_its_phase():
    expected = {2: "loading weights", 4: "allocating the KV cache", 6: "capturing CUDA graphs",
                8: "warming up, port open, /health 503"}
    for count, phase in expected.items():
        report = S.startup_report(START_USEC, LINES[:count])
        assert report["phase"] == phase, count
        assert S.describe("decode", report).startswith("decode not ready: " + phase)
    assert S.startup_report(START_USEC, LINES[:1])["phase"] == S.BEFORE


def test_without_a_start_time_there_is_no_report():
    assert S.startup_report(0, LINES) is None and S.startup_report("n/a", LINES) is None
    assert S.describe("x", None) == "x: no start-up lines in its journal"


def test_a_start_too_close_to_its_limit_warns_naming_what_to_raise():
    report = S.startup_report(START_USEC, LINES)  # ready in 12.8 s
    (warning,) = S.limit_warnings("decode-0", report, 15, 1.5, ["sglang_server_wait_timeout", "router_limit"])
    assert warning == ("decode-0: its last start took 12.8 s (its journal), and sglang_server_wait_timeout and "
                       "router_limit give it 15 s, less than 1.5 times that: raise sglang_server_wait_timeout and "
                       "router_limit to at least 20")


def test_a_start_within_its_margin_or_not_measured_is_quiet():
    report = S.startup_report(START_USEC, LINES)
    assert S.limit_warnings("decode-0", report, 19.2, 1.5, ["v"]) == []
    assert S.limit_warnings("decode-0", S.startup_report(START_USEC, LINES[:3]), 1, 1.5, ["v"]) == []
    assert S.limit_warnings("decode-0", None, 1, 1.5, ["v"]) == []


def test_the_emulator_says_how_many_kernels_a_start_compiled():
    """SGLang logs no such count (None: unknown); the emulator's line after the weights gives it, cold or warm."""
    assert S.startup_report(START_USEC, LINES)["kernels_compiled"] is None
    for text, count in (("cold: compiled 4 of 4 DeepGEMM kernel groups and 1 JIT module in 2.00 s", 5),
                        ("warm: compiled 0 of 4 DeepGEMM kernel groups and 0 JIT module in 0.00 s", 0)):
        lines = LINES[:4] + ["[  109.050000] h sglang[2]: [2026-12-03 14:01:09] SGLang emulator: compile caches "
                             + text + " (deep_gemm=/c/deep_gemm, jit=/c/jit, all cached now: True)"] + LINES[4:]
        report = S.startup_report(START_USEC, lines)
        assert report["kernels_compiled"] == count
        assert S.describe("p", report).startswith(
            "p ready in 12.8 s: load weights 8.1 s (of which DeepGEMM kernels 3.0 s, %d kernel(s) compiled)" % count)
    # an earlier start's line is not this start's
    early = ["[   95.000000] h sglang[1]: SGLang emulator: compile caches cold: compiled 4 of 4 DeepGEMM kernel groups "
             "and 1 JIT module in 2.00 s"]
    assert S.startup_report(START_USEC, early + LINES)["kernels_compiled"] is None
