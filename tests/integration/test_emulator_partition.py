# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A prefill cut off from its decode, as SGLang 0.5.23 handles it (no router: the two servers alone).

The prefill process is stopped (SIGSTOP): its bootstrap server accepts connections and answers nothing, which is
what the decode sees through a firewall drop. SGLang's timeouts (SGLANG_DISAGGREGATION_*) decide how fast each
side gives up, and which counter the failure goes to; the multihost stand's partition stage does the same across
two hosts with nftables.
"""
import concurrent.futures
import os
import random
import signal
import time

import pytest

import stack

pytestmark = pytest.mark.integration

BOOTSTRAP = "sglang:num_bootstrap_failed_reqs_total"
TRANSFER = "sglang:num_transfer_failed_reqs_total"


@pytest.fixture()
def pair():
    # The waiting timeout is long: a decode that fails fast did so through its heartbeat (every 2 s, one miss).
    prefill = stack.Emulator("prefill", env={"SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT": "3"})
    decode = stack.Emulator("decode", env={"SGLANG_DISAGGREGATION_WAITING_TIMEOUT": "60",
                                           "SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL": "2",
                                           "SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE": "1"})
    with prefill, decode:
        prefill.wait_healthy()
        decode.wait_healthy()
        yield prefill, decode
        os.killpg(prefill.proc.pid, signal.SIGCONT)


def body(prefill):
    return {"model": stack.MODEL, "messages": [{"role": "user", "content": "What is 17*23? Number only."}],
            "bootstrap_host": prefill.host, "bootstrap_port": prefill.bootstrap_port,
            "bootstrap_room": random.randint(1, 2 ** 62)}


def chat(server, payload, timeout=90):
    start = time.monotonic()
    status, answer, dummy_headers = stack.post_json(server.url + "/v1/chat/completions", payload, timeout=timeout)
    return status, answer, time.monotonic() - start


def both(prefill, decode):
    payload = body(prefill)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(chat, server, payload) for server in (prefill, decode)]
        return [f.result() for f in futures]


def count(server, name):
    return sum(v for dummy_labels, v in stack.metric_samples(stack.http_get(server.url + "/metrics")[1], name))


def test_decode_fails_fast_when_the_prefill_is_cut_off_then_serves_again(pair):
    prefill, decode = pair
    assert [r[0] for r in both(prefill, decode)] == [200, 200]  # the decode knows this prefill now
    os.killpg(prefill.proc.pid, signal.SIGSTOP)
    # In flight when the heartbeat loses the prefill: a transfer failure, long before the 60 s waiting timeout.
    status, answer, took = chat(decode, body(prefill))
    assert status == 500 and took < 15, (status, took, answer)
    assert "Losing connection with prefill instance" in answer["message"], answer
    assert count(decode, TRANSFER) == 1 and count(decode, BOOTSTRAP) == 0
    # The lost prefill's address is forgotten: the next request's handshake (GET /route) fails.
    status, answer, took = chat(decode, body(prefill))
    assert status == 500 and took < 10, (status, took, answer)
    assert "Could not fetch prefill parallel info" in answer["message"], answer
    assert count(decode, BOOTSTRAP) == 1
    os.killpg(prefill.proc.pid, signal.SIGCONT)
    results = both(prefill, decode)
    assert [r[0] for r in results] == [200, 200], results
    assert results[1][1]["choices"][0]["message"]["content"] == "391"


def test_prefill_fails_a_room_no_decode_bootstraps_after_its_bootstrap_timeout(pair):
    prefill, dummy_decode = pair
    status, answer, took = chat(prefill, body(prefill))
    assert status == 500 and 3 <= took < 8, (status, took, answer)
    assert "timed out after" in answer["message"] and "KVPoll.Bootstrapping" in answer["message"], answer
    assert count(prefill, BOOTSTRAP) == 1 and count(prefill, TRANSFER) == 0
