# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""One emulated instance over several "nodes" on loopback (sglemu/ranks.py), as SGLang 0.5.23 runs one
(shared/research/multinode-tp.md): rank 0 waits for the other ranks before it is ready, a rank > 0 serves only a
dummy /health, ignores SIGTERM until rank 0's shutdown broadcast, and the rendezvous times out as torch's does."""
import json
import os
import signal
import time
import urllib.request

import pytest

from stack import Emulator, free_port, http_get


def rank(mode, node_rank, nnodes, dist_port, port=None, bootstrap_port=None, timeout=30, tp=None):
    args = ["--nnodes", str(nnodes), "--node-rank", str(node_rank),
            "--dist-init-addr", "127.0.0.1:%d" % dist_port, "--dist-timeout", str(timeout),
            "--log-level", "info"]
    if tp is not None:
        args += ["--tp-size", str(tp)]
    emu = Emulator(mode, port=port, bootstrap_port=bootstrap_port, args=args)
    emu.name = "emulator-%s-rank%d" % (mode, node_rank)
    return emu


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("not within %ss: %s" % (timeout, what))


def log_of(emu):
    with open(emu.log_path, "rb") as handle:
        return handle.read().decode("utf-8", "replace")


@pytest.fixture
def procs():
    started = []
    yield started
    for emu in started:
        if emu.alive():
            os.killpg(emu.proc.pid, signal.SIGKILL)
        emu.stop(timeout=5)


def test_rank0_not_ready_until_other_ranks_join(procs):
    dist = free_port()
    leader = rank("decode", 0, 3, dist)
    procs.append(leader.start())
    time.sleep(1.5)
    assert leader.alive(), leader.log_tail()
    assert http_get(leader.url + "/health", timeout=1)[0] == 0  # port not bound: refused
    assert "Load weight end" not in log_of(leader)
    one = procs.append(rank("decode", 1, 3, dist).start()) or procs[-1]
    one.wait_healthy(30)  # its dummy health answers once it joined and loaded
    time.sleep(1.0)
    assert http_get(leader.url + "/health", timeout=1)[0] == 0, "rank 0 ready with one of two other ranks"
    assert "Load weight end" not in log_of(leader)
    procs.append(rank("decode", 2, 3, dist).start())
    leader.wait_healthy(30)
    assert "Load weight end" in log_of(leader)
    assert http_get(leader.url + "/model_info", timeout=2)[0] == 200


def test_rank_above_zero_serves_only_dummy_health(procs):
    dist = free_port()
    procs.append(rank("decode", 0, 2, dist).start())
    other = rank("decode", 1, 2, dist, tp=2)
    procs.append(other.start())
    other.wait_healthy(30)
    for path in ("/health", "/health_generate", "/ping"):
        assert http_get(other.url + path, timeout=2)[0] == 200, path
    for path in ("/model_info", "/server_info", "/get_server_info", "/v1/models", "/emulator/faults"):
        assert http_get(other.url + path, timeout=2)[0] == 404, path
    # /metrics only with --enable-metrics (the role's command line has it)
    assert http_get(other.url + "/metrics", timeout=2)[0] == (200 if "--enable-metrics" in other.args else 404)
    request = urllib.request.Request(other.url + "/generate", data=b'{"text": "x"}', method="POST")
    try:
        urllib.request.urlopen(request, timeout=2)
        status = 200
    except urllib.error.HTTPError as exc:
        status = exc.code
    assert status == 404


def test_rank_above_zero_ignores_sigterm_until_rank0_stops(procs):
    dist = free_port()
    leader = rank("decode", 0, 2, dist)
    other = rank("decode", 1, 2, dist)
    procs.extend([leader.start(), other.start()])
    leader.wait_healthy(30)
    other.proc.send_signal(signal.SIGTERM)
    time.sleep(1.5)
    assert other.alive(), "a rank > 0 exited on SIGTERM:\n" + other.log_tail()
    assert http_get(other.url + "/health", timeout=2)[0] == 200
    assert "ignored, waiting for the rank-0 ShutdownReq broadcast" in log_of(other)
    leader.proc.send_signal(signal.SIGTERM)
    wait_for(lambda: not other.alive(), 20, "rank 1 exits after rank 0's shutdown broadcast")
    assert other.proc.returncode == 0, other.log_tail()
    wait_for(lambda: not leader.alive(), 20, "rank 0 exits")
    assert "Sent ShutdownReq to node rank 1" in log_of(leader)
    assert "Received ShutdownReq from rank 0" in log_of(other)


def test_rank_above_zero_dies_when_rank0_is_killed_and_sigkill_kills_it(procs):
    dist = free_port()
    leader = rank("decode", 0, 2, dist)
    other = rank("decode", 1, 2, dist)
    procs.extend([leader.start(), other.start()])
    leader.wait_healthy(30)
    os.killpg(leader.proc.pid, signal.SIGKILL)
    wait_for(lambda: not other.alive(), 20, "rank 1 exits when rank 0's connection drops")
    assert other.proc.returncode != 0
    assert "Connection closed by peer (rank 0)" in log_of(other)
    # SIGKILL still kills a rank > 0 (and rank 0 dies with it: the cascade)
    leader2 = rank("decode", 0, 2, free_port())
    other2 = rank("decode", 1, 2, int(leader2.args[leader2.args.index("--dist-init-addr") + 1].rsplit(":", 1)[1]))
    procs.extend([leader2.start(), other2.start()])
    leader2.wait_healthy(30)
    os.killpg(other2.proc.pid, signal.SIGKILL)
    wait_for(lambda: not other2.alive(), 5, "SIGKILL kills a rank > 0")
    wait_for(lambda: not leader2.alive(), 20, "rank 0 dies when a rank's connection drops")
    assert leader2.proc.returncode != 0
    assert "Connection closed by peer (node rank 1)" in log_of(leader2)


def test_rendezvous_timeout_fails_rank0(procs):
    dist = free_port()
    leader = rank("decode", 0, 3, dist, timeout=2, tp=6)
    procs.append(leader.start())
    procs.append(rank("decode", 1, 3, dist, timeout=2, tp=6).start())
    wait_for(lambda: not leader.alive(), 30, "rank 0 gives up after --dist-timeout")
    assert leader.proc.returncode != 0
    text = log_of(leader)
    # 6 ranks, 2 per node: rank 0's other local rank and node 1's two joined, node 2's did not
    assert "DistStoreError: Timed out after 3 seconds waiting for clients. 3/5 clients joined." in text
    assert "Load weight" not in text


def test_rank_above_zero_gives_up_without_rank0(procs):
    other = rank("decode", 1, 2, free_port(), timeout=1)
    procs.append(other.start())
    wait_for(lambda: not other.alive(), 30, "rank 1 gives up connecting")
    assert other.proc.returncode != 0
    assert "DistNetworkError" in log_of(other)


def test_prefill_bootstrap_route_503_until_every_rank_registered(procs):
    dist, boot = free_port(), free_port()
    leader = rank("prefill", 0, 2, dist, bootstrap_port=boot, tp=2)
    procs.append(leader.start())
    route = "http://127.0.0.1:%d/route?prefill_dp_rank=-1&prefill_cp_rank=-1&target_tp_rank=-1&target_pp_rank=-1" % boot
    wait_for(lambda: http_get(route, timeout=1)[0] != 0, 30, "the bootstrap server opens early on rank 0")
    status, body = http_get(route, timeout=2)
    assert status == 503 and "Prefill server not fully registered yet (1 workers registered)" in body
    other = rank("prefill", 1, 2, dist, bootstrap_port=boot, tp=2)
    procs.append(other.start())
    # the rank > 0 registers at <dist-init host>:<bootstrap port>, not at a bootstrap of its own
    wait_for(lambda: http_get(route, timeout=1)[0] == 200, 30, "/route 200 once node rank 1 registered")
    assert json.loads(http_get(route, timeout=2)[1])["prefill_attn_tp_size"] == 2
    leader.wait_healthy(30)


def test_wait_ready_never_takes_a_rank_above_zero_for_the_instance(procs):
    """wait_ready's probe against real emulated ranks: a rank > 0's dummy /health is that rank's readiness only; the
    same URL given as an instance (rank 0, or of unknown rank) is not ready."""
    from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import HttpClient
    from ansible_collections.pdserve.sglang.plugins.module_utils.validation import readiness as rd

    dist = free_port()
    leader, other = rank("decode", 0, 2, dist), rank("decode", 1, 2, dist)
    procs.extend([leader.start(), other.start()])
    leader.wait_healthy(30)
    other.wait_healthy(30)

    def wait(url, **kwargs):
        waiter = rd.Waiter([rd.Endpoint(url, **kwargs)], HttpClient(timeout=5), timeout=2, interval=0.1)
        states, outcome = waiter.run()
        return outcome, states[0]

    assert wait(other.url)[0] == "timeout"
    assert wait(other.url, rank=0, nnodes=2)[0] == "timeout"
    outcome, state = wait(other.url, rank=1, nnodes=2)
    assert outcome == "ready" and "node rank 1" in state.last_status
    assert wait(leader.url, rank=0, nnodes=2)[0] == "ready"
    outcome, state = wait(leader.url, rank=1, nnodes=2)
    assert outcome == "fatal" and "answers GET /model_info" in state.fatal


def test_wait_ready_counts_every_prefill_rank_at_rank0s_bootstrap(procs, monkeypatch):
    """wait_ready's probe of a prefill rank 0 with its bootstrap_url: ready once the other node's rank registered; a rank
    that cannot reach the bootstrap (here: told another port, as a firewall would drop it) leaves rank 0 healthy but
    /route 503, and the wait fails naming that node once the registration window (shortened here) passed."""
    from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import HttpClient
    from ansible_collections.pdserve.sglang.plugins.module_utils.validation import readiness as rd

    def wait(leader, boot):
        endpoint = rd.Endpoint(leader.url, rank=0, nnodes=2, nodes=["node-a", "node-b"], name="prefill-0 (node rank 0)",
                               bootstrap_url="http://127.0.0.1:%d" % boot)
        states, outcome = rd.Waiter([endpoint], HttpClient(timeout=5), timeout=40, interval=0.1).run()
        return outcome, states[0]

    dist, boot = free_port(), free_port()
    leader = rank("prefill", 0, 2, dist, bootstrap_port=boot, tp=2)
    procs.extend([leader.start(), rank("prefill", 1, 2, dist, bootstrap_port=boot, tp=2).start()])
    outcome, state = wait(leader, boot)
    assert outcome == "ready", state.as_dict()
    assert "bootstrap /route -> 200" in state.last_status

    monkeypatch.setattr(rd, "REGISTRATION_WINDOW", 2.0)
    dist, boot = free_port(), free_port()
    leader = rank("prefill", 0, 2, dist, bootstrap_port=boot, tp=2)
    procs.extend([leader.start(), rank("prefill", 1, 2, dist, bootstrap_port=free_port(), tp=2).start()])
    leader.wait_healthy(30)
    outcome, state = wait(leader, boot)
    assert outcome == "fatal", state.as_dict()
    assert "node-b" in state.fatal and "1 workers registered" in state.fatal
