# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The emulator's /metrics behind the real router: what monitoring and the drain protocol read.

- sglang:num_running_reqs counts a request from admission to its last byte, on both servers;
- injected KV-transfer and bootstrap failures are counted by both servers, as SGLang's prefill and
  decode schedulers both count them, and the counters exist only after the first failure;
- /metrics is prometheus_client's: with Prometheus 2.x's Accept header the sample names lose the colon.
"""
import threading
import time
import urllib.request

import pytest

import stack

pytestmark = pytest.mark.integration

FAILURES = ("sglang:num_bootstrap_failed_reqs_total", "sglang:num_transfer_failed_reqs_total")
COUNTER_OF = {"bootstrap": FAILURES[0], "kv_transfer": FAILURES[1]}


def chat_body(model, stream=False, question="What is 17*23? Number only.", thinking=False):
    body = {"model": model, "messages": [{"role": "user", "content": question}], "max_tokens": 64}
    if stream:
        body["stream"] = True
    if thinking:
        body["chat_template_kwargs"] = {"thinking": True}
    return body


def value(server, name):
    status, text = stack.http_get(server.url + "/metrics")
    assert status == 200, text
    samples = stack.metric_samples(text, name)
    return sum(v for dummy_labels, v in samples) if samples else None


@pytest.fixture(scope="module")
def slow(pd_stack_module):
    """A stack whose servers take 30 ms per generated token (a request lasts about a second)."""
    env = {"SGLANG_EMULATOR_TOKEN_DELAY": "0.03"}
    return pd_stack_module(prefill_env=env, decode_env=env)


@pytest.fixture(scope="module")
def good(pd_stack_module):
    return pd_stack_module()


def _watch(server, stop, seen):
    while not stop.is_set():
        current = value(server, "sglang:num_running_reqs")
        seen.append(current)
        time.sleep(0.02)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streaming"])
def test_running_reqs_cover_the_whole_request(slow, stream):
    assert value(slow.decode, "sglang:num_running_reqs") == 0
    stop, seen = threading.Event(), []
    watcher = threading.Thread(target=_watch, args=(slow.decode, stop, seen))
    watcher.start()
    started = time.monotonic()
    try:
        body = chat_body(slow.model, stream=stream, thinking=True)
        if stream:
            status, events, done = stack.post_sse(slow.router_url + "/v1/chat/completions", body)
            assert status == 200 and done, events
        else:
            status, payload, dummy_headers = stack.post_json(slow.router_url + "/v1/chat/completions", body)
            assert status == 200, payload
    finally:
        stop.set()
        watcher.join()
    elapsed = time.monotonic() - started
    assert elapsed > 0.5, "the request was too quick to watch (%.2fs)" % elapsed
    # counted while generating (most of the request's life), never twice, and released at the end
    running = [v for v in seen if v == 1]
    assert len(running) >= 0.5 * len(seen) - 2, seen
    assert max(seen) == 1, seen
    assert value(slow.decode, "sglang:num_running_reqs") == 0
    assert value(slow.prefill, "sglang:num_running_reqs") == 0


def test_no_failure_counters_before_a_failure(good):
    status, dummy_payload, dummy_headers = stack.post_json(
        good.router_url + "/v1/chat/completions", chat_body(good.model))
    assert status == 200
    for server in (good.prefill, good.decode):
        for name in FAILURES:
            assert value(server, name) is None, (server.name, name)
        assert value(server, "sglang:num_requests_total") >= 1


@pytest.mark.parametrize("side, fault", [
    ("decode", "kv_transfer"), ("prefill", "kv_transfer"), ("prefill", "bootstrap"), ("decode", "bootstrap")])
def test_injected_failure_is_counted_on_both_sides(good, side, fault):
    server = getattr(good, side)
    before = dict(((s.name, n), value(s, n) or 0) for s in (good.prefill, good.decode) for n in FAILURES)
    retries_before = _router_value(good, "smg_worker_retries_total")
    status, payload, dummy_headers = stack.post_json(server.url + "/emulator/faults", {fault: 1})
    assert status == 200 and payload["pending"][fault] == 1, payload
    # the router retries the 500 with a new bootstrap room: the client still gets its answer
    status, payload, dummy_headers = stack.post_json(
        good.router_url + "/v1/chat/completions", chat_body(good.model))
    assert status == 200, payload
    assert payload["choices"][0]["message"]["content"] == "391"
    counter = COUNTER_OF[fault]
    for s in (good.prefill, good.decode):
        for name in FAILURES:
            expected = before[(s.name, name)] + (1 if name == counter else 0)
            assert (value(s, name) or 0) == expected, (s.name, name)
        assert value(s, "sglang:num_running_reqs") == 0, s.name
    assert _router_value(good, "smg_worker_retries_total") > retries_before
    status, payload, dummy_headers = stack.post_json(server.url + "/emulator/faults", {})
    assert status == 400, payload


def _router_value(pd, name):
    status, text = stack.http_get(pd.router.metrics_url)
    assert status == 200
    return sum(v for dummy_labels, v in stack.metric_samples(text, name))


@pytest.mark.parametrize("body", [{"kv_transfer": -1}, {"oom": 1}, {"bootstrap": "1"}, []])
def test_fault_endpoint_rejects_bad_requests(good, body):
    status, payload, dummy_headers = stack.post_json(good.decode.url + "/emulator/faults", body)
    assert status == 400, payload
    status, text = stack.http_get(good.decode.url + "/emulator/faults")
    assert status == 200 and '"pending"' in text


def test_prometheus_2_accept_header_mangles_sample_names(good):
    """prometheus/client_python#1177: the TYPE line keeps the colon, the samples do not."""
    request = urllib.request.Request(good.decode.url + "/metrics", headers={
        "Accept": "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;"
                  "version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"})
    with urllib.request.urlopen(request, timeout=10) as resp:
        text = resp.read().decode()
        content_type = resp.headers["Content-Type"]
    assert "escaping=underscores" in content_type, content_type
    assert "# TYPE sglang:num_running_reqs gauge" in text
    assert stack.metric_samples(text, "sglang_num_running_reqs")
    assert not stack.metric_samples(text, "sglang:num_running_reqs")
