# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The emulator starts the way SGLang 0.5.23 does: port closed while loading, start-up lines and gauges, compile caches
that make a second start warm, sglang.compile_deep_gemm, and the crash of two unlocked compiles into one directory."""
import os
import re
import subprocess
import time

import pytest

import stack

pytestmark = pytest.mark.integration

COMPILE_DEEP_GEMM = os.path.join(os.path.dirname(stack.EMULATOR), "compile_deep_gemm.py")
TIMINGS = re.compile(r"Engine startup timings \(s\): load_weight=([\d.]+), kv_cache_allocation=[\d.]+, "
                     r"scheduler_e2e=([\d.]+), cuda_graph=\{prefill=[\d.]+, decode=[\d.]+, [^}]*\}, "
                     r"tokenizer_e2e=[\d.]+")


def _caches(tmp_path):
    return {"SGLANG_CACHE_DIR": str(tmp_path / "cache"), "SGLANG_JIT_CACHE_DIR": str(tmp_path / "cache" / "jit")}


def _gauge(emu, phase):
    status, text = stack.http_get(emu.url + "/metrics")
    assert status == 200
    match = re.search(r'^sglang:startup_time_seconds\{[^}]*phase="%s"[^}]*\} ([\d.e+-]+)$' % phase, text, re.M)
    assert match, text
    return float(match.group(1))


def _start(env, args=("--enable-metrics",)):
    # SGLang's start-up lines are INFO: the stack's default --log-level warning would hide them
    return stack.Emulator("null", args=tuple(args) + ("--log-level", "info"), env=env).start()


def _log(emu):
    with open(emu.log_path, encoding="utf-8") as handle:
        return handle.read()


def test_second_start_is_warm(tmp_path):
    env = dict(_caches(tmp_path), SGLANG_EMULATOR_LOAD_DELAY="2", SGLANG_EMULATOR_COMPILE_TIME="3")
    seconds = []
    for attempt in ("cold", "warm"):
        emu = _start(env)
        try:
            time.sleep(1.0)
            assert emu.alive(), emu.log_tail()
            assert stack.http_get(emu.url + "/health")[0] == 0  # loading: the port is not open yet
            emu.wait_healthy(30)
            log = _log(emu)
            timings = TIMINGS.search(log)
            assert timings, log
            assert "compile caches %s" % attempt in log
            assert log.index("Engine startup timings") < log.index("The server is fired up and ready to roll!")
            assert _gauge(emu, "load_weight") == pytest.approx(float(timings.group(1)), abs=0.01)
            seconds.append(_gauge(emu, "load_weight"))
        finally:
            emu.stop()
    print("load_weight cold %.2f s, warm %.2f s" % tuple(seconds))
    assert seconds[0] >= 3.0 and seconds[1] < seconds[0] - 2.0


def test_compile_deep_gemm_makes_the_first_start_warm(tmp_path):
    env = dict(os.environ, **_caches(tmp_path), SGLANG_EMULATOR_COMPILE_TIME="2")
    emu = stack.Emulator("prefill", args=("--enable-metrics", "--log-level", "info"), env=_caches(tmp_path))
    compiled = subprocess.run([stack.PYTHON, COMPILE_DEEP_GEMM] + emu.args + ["--timeout", "60"], env=env,
                              capture_output=True, text=True, timeout=60, check=False)
    assert compiled.returncode == 0, compiled.stderr
    assert "DeepGEMM Kernels compilation finished successfully." in compiled.stdout
    assert "compiled 4 of 4 DeepGEMM kernel groups" in compiled.stderr
    emu.env["SGLANG_EMULATOR_COMPILE_TIME"] = "2"
    emu.start()
    try:
        emu.wait_healthy(30)
        # the tool runs a whole server, so SGLang's own JIT module is compiled too
        assert "compile caches warm: compiled 0 of 4 DeepGEMM kernel groups and 0 JIT module" in _log(emu)
        again = subprocess.run([stack.PYTHON, COMPILE_DEEP_GEMM] + emu.args, env=env, capture_output=True,
                               text=True, timeout=60, check=False)
        assert again.returncode == 1 and "address already in use" in again.stderr  # needs the instance stopped
    finally:
        emu.stop()


def test_two_instances_compiling_into_one_directory_crash(tmp_path):
    env = dict(_caches(tmp_path), SGLANG_EMULATOR_COMPILE_TIME="5")
    emus = [_start(env, args=()), _start(env, args=("--tp-size", "2"))]
    try:
        deadline = time.monotonic() + 30
        while all(e.alive() for e in emus) and time.monotonic() < deadline:
            time.sleep(0.2)
        dead = [e for e in emus if not e.alive()]
        assert len(dead) == 1, [e.log_tail() for e in emus]
        assert dead[0].proc.returncode == 1
        assert re.search(r"FileExistsError: \[Errno 17\] File exists: '.*/deep_gemm/tmp'", _log(dead[0]))
    finally:
        for emu in emus:
            emu.stop()


def _compile_rank(tmp_path, node_rank, dist_port, timeout=30):
    """sglang.compile_deep_gemm of one node of a decode instance over two nodes (tp 2, one GPU each)."""
    emu = stack.Emulator("decode", args=("--log-level", "info", "--tp-size", "2", "--nnodes", "2", "--node-rank",
                                         str(node_rank), "--dist-init-addr", "127.0.0.1:%d" % dist_port,
                                         "--dist-timeout", str(timeout)),
                         env=_caches(tmp_path / ("node%d" % node_rank)))
    env = dict(os.environ, **emu.env, SGLANG_EMULATOR_COMPILE_TIME="1")
    return subprocess.Popen([stack.PYTHON, COMPILE_DEEP_GEMM] + emu.args + ["--timeout", "60"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_compile_deep_gemm_over_two_nodes_waits_for_every_rank(tmp_path):
    """Each node compiles its own rank; rank 0 holds the dist-init port and compiles only once the other rank joined,
    which leaves on rank 0's broadcast; both fill their own cache."""
    dist = stack.free_port()
    leader = _compile_rank(tmp_path, 0, dist)
    time.sleep(2)
    assert leader.poll() is None  # waiting for rank 1 at its rendezvous, compiling nothing yet
    assert not (tmp_path / "node0" / "cache").exists() or not any((tmp_path / "node0" / "cache").rglob("kernel.cubin"))
    other = _compile_rank(tmp_path, 1, dist)
    out0, err0 = leader.communicate(timeout=60)
    out1, err1 = other.communicate(timeout=60)
    assert leader.returncode == 0 and other.returncode == 0, (err0, err1)
    assert "Rendezvous: node rank 1 joined" in err0 and "Sent ShutdownReq to node rank 1" in err0
    for out, err in ((out0, err0), (out1, err1)):
        assert "DeepGEMM Kernels compilation finished successfully." in out
        assert "compiled 4 of 4 DeepGEMM kernel groups" in err
    assert any((tmp_path / "node1" / "cache").rglob("kernel.cubin"))


def test_compile_deep_gemm_over_two_nodes_fails_without_the_other_rank(tmp_path):
    leader = _compile_rank(tmp_path, 0, stack.free_port(), timeout=2)
    out, err = leader.communicate(timeout=60)
    assert leader.returncode == 1 and "DeepGEMM Kernels compilation finished successfully." not in out
    assert "DistStoreError: Timed out after 3 seconds waiting for clients. 0/1 clients joined." in err
