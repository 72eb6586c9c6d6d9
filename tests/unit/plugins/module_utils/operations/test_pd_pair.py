# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Playing the router for one chosen prefill/decode pair."""

import threading

from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import HttpResult
from ansible_collections.pdserve.sglang.plugins.module_utils.operations.pd_pair import PairClient, bootstrap_host


class Client(object):
    timeout = 5.0

    def __init__(self, prefill_status=200):
        self.calls = []
        self.lock = threading.Lock()
        self.prefill_status = prefill_status

    def post_json(self, url, payload, timeout=None):
        with self.lock:
            self.calls.append((url, payload))
        if url.startswith("http://p"):
            return HttpResult("POST", url, self.prefill_status, {}, b'{"error": "prefill says no"}')
        return HttpResult("POST", url, 200, {}, b'{"choices": []}')

    stream_sse = post_json

    def get(self, url, timeout=None):
        self.calls.append((url, None))
        return HttpResult("GET", url, 200, {}, b"{}")


class Rand(object):
    def getrandbits(self, bits):
        return 12345


def test_the_same_body_goes_to_both_with_the_bootstrap_fields():
    client = Client()
    pair = PairClient(client, "http://pdserve-prefill:30000/", "http://decode:30002", 8999, rand=Rand())
    answer = pair.post_json("http://decode:30002/v1/chat/completions", {"model": "m", "messages": []})
    assert answer.status == 200
    bodies = dict(client.calls)
    assert set(bodies) == {"http://pdserve-prefill:30000/v1/chat/completions", "http://decode:30002/v1/chat/completions"}
    for body in bodies.values():
        assert body == {"model": "m", "messages": [], "bootstrap_host": "pdserve-prefill", "bootstrap_port": 8999,
                        "bootstrap_room": 12345}


def test_a_failing_prefill_fails_the_pair():
    pair = PairClient(Client(prefill_status=500), "http://p:1", "http://d:2", 8998)
    answer = pair.stream_sse("http://d:2/v1/chat/completions", {"stream": True})
    assert answer.status == 500 and "prefill http://p:1" in answer.error


def test_other_paths_go_to_decode_only():
    client = Client()
    PairClient(client, "http://p:1", "http://d:2", 8998).get("http://d:2/v1/models")
    assert client.calls == [("http://d:2/v1/models", None)]
    assert bootstrap_host("http://[fd00::1]:30000") == "fd00::1"
