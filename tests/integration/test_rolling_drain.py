# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The rolling-restart protocol of the collection's modules behind the real router 0.3.2, on loopback.

2 prefill + 2 decode emulators (a chat answer streams for ~1 s), the real router, and a bounded load of streaming
and non-streaming requests that requires ``data: [DONE]`` on every stream. Each worker in turn goes through what
playbooks/rolling_restart.yml does with the modules: router_worker (RouterAdmin.remove), worker_idle
(IdleWaiter.wait on the worker's own gauges), a restart of the process on the same ports, readiness, router_worker
(RouterAdmin.add, which waits until the router lists it healthy with its type). Expected: 0 failed requests.
The figures (drain, restart-to-ready per worker) are printed, not asserted.
"""
import json
import threading
import time
import urllib.error
import urllib.request

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.validation.chat_checks import CHECK_NAMES
from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import HttpClient
from ansible_collections.pdserve.sglang.plugins.module_utils.operations.pd_pair import PairClient
from ansible_collections.pdserve.sglang.plugins.module_utils.operations.router_admin import RouterAdmin, RouterError
from ansible_collections.pdserve.sglang.plugins.module_utils.operations.worker_metrics import IdleWaiter
from ansible_collections.pdserve.sglang.plugins.modules.validate_chat import ChatValidator

import stack

pytestmark = pytest.mark.integration
# Streams of ~1 s (30 tokens of a thinking answer at 0.03 s); /health stays the cheap probe (the tests here are about
# the drain, not about health generation).
SLOW = {"SGLANG_EMULATOR_TOKEN_DELAY": "0.03", "SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION": "0"}


class Load(object):
    """Clients alternating streaming and non-streaming chats through the router until stopped."""

    def __init__(self, url, clients=6, api_key=None):
        self.url = url + "/v1/chat/completions"
        self.headers = {"Content-Type": "application/json"}
        if api_key:
            self.headers["Authorization"] = "Bearer %s" % api_key
        self.clients = clients
        self.stop_event = threading.Event()
        self.records = []
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._client, args=(i,), daemon=True) for i in range(clients)]

    def _one(self, index, stream):
        body = {"model": stack.MODEL, "stream": stream, "max_tokens": 64,
                "chat_template_kwargs": {"thinking": True},
                "messages": [{"role": "user", "content": "[%d-%f] What is 17*23? Number only." % (index, time.time())}]}
        req = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=self.headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                text = resp.read().decode("utf-8", "replace")
                if resp.status != 200:
                    return "http_%s" % resp.status
        except urllib.error.HTTPError as exc:
            return "http_%s" % exc.code
        except Exception as exc:  # pylint: disable=broad-except
            return "%s: %s" % (type(exc).__name__, exc)
        if stream:
            if "data: [DONE]" not in text:
                return "stream_cut"
            if '"error"' in text:
                return "stream_error"
            return ""
        try:
            return "" if json.loads(text)["choices"][0]["message"] else "empty"
        except (ValueError, KeyError, IndexError, TypeError):
            return "empty"

    def _client(self, client):
        count = 0
        while not self.stop_event.is_set():
            stream = (count + client) % 2 == 0
            started = time.time()
            failure = self._one(client * 100000 + count, stream)
            with self.lock:
                self.records.append({"stream": stream, "start": started, "end": time.time(), "failure": failure})
            count += 1

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stop_event.set()
        for thread in self.threads:
            thread.join(90)

    def failures(self):
        return [r for r in self.records if r["failure"]]


@pytest.fixture
def two_by_two():
    procs = []
    try:
        prefill = [stack.Emulator("prefill", env=SLOW) for dummy in range(2)]
        decode = [stack.Emulator("decode", env=SLOW) for dummy in range(2)]
        procs.extend(prefill + decode)
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.wait_healthy(60)
        router = stack.Router(prefill=[(p.url, p.bootstrap_port) for p in prefill], decode=[d.url for d in decode])
        procs.append(router)
        router.start().wait_healthy(60)
        # Ready means one healthy worker of each type; the router registers the others in the background (a fresh
        # clone's run once removed the "last" decode worker before the second was listed). Every test starts from all
        # four listed healthy.
        deadline = time.monotonic() + 60
        while sorted((w["worker_type"], w["is_healthy"]) for w in (router.workers() or {}).get("workers", [])) != [
                ("decode", True), ("decode", True), ("prefill", True), ("prefill", True)]:
            assert time.monotonic() < deadline, "the router did not list all four workers healthy: %s" % router.workers()
            time.sleep(0.1)
        yield {"prefill": prefill, "decode": decode, "router": router, "procs": procs}
    finally:
        for proc in procs:
            proc.stop()


def restart(stack_, kind, index):
    """Stop the emulator and start the same command line on the same ports (what systemctl restart does)."""
    old = stack_[kind][index]
    old.stop()
    new = stack.Emulator(old.mode, port=old.port, bootstrap_port=old.bootstrap_port, env=SLOW)
    new.args = old.args
    stack_[kind][index] = new
    stack_["procs"].append(new)
    started = time.monotonic()
    new.start().wait_healthy(60)
    return new, time.monotonic() - started


def test_running_gauge_covers_the_whole_stream(two_by_two):
    router = two_by_two["router"]
    result = {}

    def stream():
        result["answer"] = stack.post_sse(router.url + "/v1/chat/completions", {
            "model": stack.MODEL, "stream": True, "max_tokens": 64, "chat_template_kwargs": {"thinking": True},
            "messages": [{"role": "user", "content": "What is 3*4?"}]})

    thread = threading.Thread(target=stream)
    thread.start()
    time.sleep(0.4)  # past the KV transfer, in the middle of the tokens
    waiters = [IdleWaiter(HttpClient(timeout=5), d.url) for d in two_by_two["decode"]]
    held = sum(w.once()["in_flight"] for w in waiters)
    thread.join(30)
    assert result["answer"][2], "the stream did not end with [DONE]"
    assert held == 1, "a decode server generating tokens must count the request in sglang:num_running_reqs"
    assert sum(w.once()["in_flight"] for w in waiters) == 0


def test_pair_validation_pins_the_server_under_test(two_by_two):
    prefill, decode = two_by_two["prefill"], two_by_two["decode"]
    client = PairClient(HttpClient(timeout=60), prefill[1].url, decode[0].url, prefill[1].bootstrap_port)
    report = ChatValidator(client, decode[0].url, stack.MODEL).run(list(CHECK_NAMES))
    assert all(r["passed"] for r in report.values()), report
    # A decode whose model emits old tool tokens: the pair check catches it every time (a router might pick another).
    broken = stack.Emulator("decode", env=dict(SLOW, SGLANG_EMULATOR_TOOL_FORMAT="v3"))
    two_by_two["procs"].append(broken)
    broken.start().wait_healthy(60)
    client = PairClient(HttpClient(timeout=60), prefill[0].url, broken.url, prefill[0].bootstrap_port)
    report = ChatValidator(client, broken.url, stack.MODEL).run(["basic", "tools", "tools_stream"])
    assert report["basic"]["passed"] and not report["tools"]["passed"] and not report["tools_stream"]["passed"]


def test_rolling_restart_of_2p2d_under_load_loses_nothing(two_by_two):
    router = two_by_two["router"]
    admin = RouterAdmin(HttpClient(timeout=10), router.url, interval=0.05)
    figures = []
    with Load(router.url) as load:
        time.sleep(2)
        for kind, index in (("prefill", 0), ("prefill", 1), ("decode", 0), ("decode", 1)):
            worker = two_by_two[kind][index]
            removed = admin.remove(worker.url, kind, timeout=10)
            assert removed["changed"]
            idle = IdleWaiter(HttpClient(timeout=5), worker.url, timeout=30, interval=0.5).wait()
            assert idle["idle"], idle
            new, ready = restart(two_by_two, kind, index)
            added = admin.add(new.url, kind, new.bootstrap_port, timeout=30)
            assert added["worker"]["is_healthy"] and added["worker"]["worker_type"] == kind
            figures.append("%s-%d: drain %.2f s (%d in flight at removal), restart-to-ready %.2f s, back in %.2f s"
                           % (kind, index, idle["seconds"], idle["first"]["in_flight"], ready, added["seconds"]))
        time.sleep(2)
    print("\n".join(figures))
    streams = sum(r["stream"] for r in load.records)
    print("requests: %d (%d streaming), failed: %d" % (len(load.records), streams, len(load.failures())))
    assert load.records and load.failures() == [], load.failures()[:5]
    # Every worker serves again after the roll.
    listing = admin.listing()
    assert sorted((w["worker_type"], w["is_healthy"]) for w in listing["workers"]) == [
        ("decode", True), ("decode", True), ("prefill", True), ("prefill", True)]


def test_the_last_healthy_worker_of_a_type_is_never_removed(two_by_two):
    router = two_by_two["router"]
    admin = RouterAdmin(HttpClient(timeout=10), router.url, interval=0.05)
    decode = two_by_two["decode"]
    admin.remove(decode[0].url, "decode")
    with pytest.raises(RouterError, match="only decode worker"):
        admin.remove(decode[1].url, "decode")
    admin.add(decode[0].url, "decode", timeout=30)
