# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The emulator's compile caches resolve and behave as SGLang 0.5.23's (tests/emulator/sglemu/startup.py)."""
import os
import threading

import pytest

from sglemu import cli, startup


def _args(*extra):
    return cli.parse_args(["--model-path", "/models/m"] + list(extra))


@pytest.mark.parametrize("env, base, deep_gemm, jit", [
    ({}, "/h/.cache/sglang", "/h/.cache/sglang/deep_gemm", "/h/.cache/sglang/jit"),
    # SGLANG_JIT_CACHE_DIR does not follow SGLANG_CACHE_DIR (kernels/jit/utils/compile/cache.py)
    ({"SGLANG_CACHE_DIR": "/c"}, "/c", "/c/deep_gemm", "/h/.cache/sglang/jit"),
    ({"SGLANG_CACHE_DIR": "/c", "SGLANG_JIT_CACHE_DIR": "/j", "SGLANG_DG_CACHE_DIR": "/d"}, "/c", "/d", "/j"),
    ({"SGLANG_CACHE_DIR": "~/x", "SGLANG_JIT_CACHE_DIR": ""}, "/h/x", "/h/x/deep_gemm", "/h/.cache/sglang/jit"),
])
def test_cache_directories_resolve_like_sglang(env, base, deep_gemm, jit):
    caches = startup.Caches(dict(env, HOME="/h"))
    assert (caches.base, caches.deep_gemm, caches.jit) == (base, deep_gemm, jit)


def test_kernel_groups_follow_model_and_tp():
    tp1, tp2 = startup.kernel_groups(_args()), startup.kernel_groups(_args("--tp-size", "2"))
    assert len(tp1) == 4 and tp1 != tp2
    assert set(tp1) & set(tp2)  # the row-parallel shapes do not depend on TP


def _env(tmp_path, **extra):
    env = {"HOME": str(tmp_path / "home"), "SGLANG_CACHE_DIR": str(tmp_path / "cache"),
           "SGLANG_JIT_CACHE_DIR": str(tmp_path / "jit")}
    env.update(extra)
    return env


def test_a_cold_start_compiles_and_a_warm_one_does_not(tmp_path):
    cold = startup.Compiler(_args(), _env(tmp_path), compile_time=0.5)
    assert cold.cached() == (0, 4, False)
    assert cold.run() >= 0.45
    assert len(cold.compiled) == 5 and "cold: compiled 4 of 4" in cold.summary()
    warm = startup.Compiler(_args(), _env(tmp_path), compile_time=0.5)
    assert warm.cached() == (4, 4, True)
    assert warm.run() < 0.3
    assert warm.compiled == [] and "warm: compiled 0 of 4" in warm.summary()
    assert os.path.isdir(tmp_path / "cache" / "deep_gemm" / "locks")
    assert not os.path.exists(tmp_path / "cache" / "deep_gemm" / "tmp")


def _together(compilers):
    errors = []

    def run(compiler):
        try:
            compiler.run()
        except startup.StartupError as exc:
            errors.append(str(exc))
    threads = [threading.Thread(target=run, args=(c,)) for c in compilers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return errors


def test_the_same_command_line_twice_takes_turns_through_the_locks(tmp_path):
    first, second = (startup.Compiler(_args(), _env(tmp_path), compile_time=1.0) for dummy in range(2))
    assert _together([first, second]) == []
    assert len([c for c in first.compiled + second.compiled if c != startup.JIT_MODULE]) == 4


@pytest.mark.parametrize("second_args, env", [
    (("--tp-size", "2"), {}),  # other kernel groups: other locks, one tmp directory
    ((), {"SGLANG_JIT_DEEPGEMM_PRECOMPILE": "0"}),  # no pre-compile: no locks at all
])
def test_unlocked_compiles_into_one_directory_fail_like_sglang_27604(tmp_path, second_args, env):
    first = startup.Compiler(_args(), _env(tmp_path, **env), compile_time=2.5)
    second = startup.Compiler(_args(*second_args), _env(tmp_path, **env), compile_time=2.5)
    errors = _together([first, second])
    assert len(errors) == 1, errors
    assert errors[0].startswith("FileExistsError:") and errors[0].endswith("/deep_gemm/tmp'")


def test_separate_directories_compile_side_by_side(tmp_path):
    first = startup.Compiler(_args(), _env(tmp_path / "a"), compile_time=1.0)
    second = startup.Compiler(_args("--tp-size", "2"), _env(tmp_path / "b"), compile_time=1.0)
    assert _together([first, second]) == []


def test_a_cache_that_cannot_be_created_fails_the_start(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    env = _env(tmp_path, SGLANG_CACHE_DIR=str(tmp_path / "file" / "c"))
    with pytest.raises(startup.StartupError, match="NotADirectoryError"):
        startup.Compiler(_args(), env, compile_time=0).run()


def test_startup_timings_and_gauges(tmp_path):
    now = [0.0]

    def sleep(seconds):
        now[0] += seconds
    env = _env(tmp_path, SGLANG_EMULATOR_LOAD_DELAY="3", SGLANG_EMULATOR_CUDA_GRAPH_TIME="1.5")
    plan = startup.Startup(_args("--disaggregation-mode", "decode"), env, started=-1.0, sleep=sleep,
                           clock=lambda: now[0])
    timings = plan.run()
    assert timings["load_weight"] == pytest.approx(2.0)
    assert timings["cuda_graph"]["decode"] == pytest.approx(1.5) and timings["cuda_graph"]["prefill"] == 0.0
    assert timings["scheduler_e2e"] == pytest.approx(3.5)
    assert set(timings) == set(startup.ENGINE_PHASES) | {"cuda_graph"}
