# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The real sglang-router 0.3.2 (PD mode) in front of emulated SGLang prefill and decode servers.

Every request goes through the router, so these tests show what a client of the deployed stack
sees: the answer, thinking separated by the decode server's reasoning parser, parsed parallel
tool calls, streaming, and the failures a broken PD handshake or a misconfigured decode server
produces.
"""
import json
import re

import pytest

import stack

pytestmark = pytest.mark.integration

QUESTION = "What is 17*23? Number only."
TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "get_time", "description": "Current time in a timezone",
        "parameters": {"type": "object", "properties": {"timezone": {"type": "string"}},
                       "required": ["timezone"]}}},
]
TOOL_QUESTION = "What is the weather in Paris and the time in Tokyo?"
CALL_ID = re.compile(r"^call_[0-9a-f]{24}$")


def chat_body(model, content=QUESTION, thinking=None, **extra):
    body = {"model": model, "messages": [{"role": "user", "content": content}],
            "max_tokens": 256}
    if thinking is not None:
        body["chat_template_kwargs"] = {"thinking": thinking}
    body.update(extra)
    return body


def chat(url, body, timeout=30.0):
    status, payload, dummy_headers = stack.post_json(url + "/v1/chat/completions", body, timeout=timeout)
    return status, payload


@pytest.fixture(scope="module")
def good(pd_stack_module):
    """One correctly configured stack shared by the module."""
    return pd_stack_module()


@pytest.fixture(scope="module")
def misconfigured(pd_stack_module):
    """A decode server started without --reasoning-parser and --tool-call-parser."""
    return pd_stack_module(decode_drop=("--reasoning-parser", "--tool-call-parser"))


def test_router_sees_one_prefill_and_one_decode(good):
    workers = good.router.workers()
    assert workers is not None, good.logs()
    kinds = sorted((w["worker_type"], w["url"], w["is_healthy"]) for w in workers["workers"])
    assert kinds == [("decode", good.decode.url, True), ("prefill", good.prefill.url, True)]
    prefill = [w for w in workers["workers"] if w["worker_type"] == "prefill"][0]
    assert prefill["bootstrap_port"] == good.prefill.bootstrap_port


def test_plain_answer(good):
    status, payload = chat(good.router_url, chat_body(good.model))
    assert status == 200, payload
    choice = payload["choices"][0]
    assert choice["message"]["content"] == "391"
    if stack.ROUTER_IMPLEMENTATION == "smg":
        # smg asks for thinking on a request that does not say (test_router_smg.py): the reasoning is separated.
        assert choice["message"]["reasoning_content"]
    else:
        assert choice["message"]["reasoning_content"] is None
    assert not choice["message"]["tool_calls"]
    assert choice["finish_reason"] == "stop"
    assert payload["usage"]["completion_tokens"] >= 1


def test_thinking_is_separated(good):
    status, payload = chat(good.router_url, chat_body(good.model, thinking=True))
    assert status == 200, payload
    message = payload["choices"][0]["message"]
    assert message["content"] == "391"
    assert message["reasoning_content"] and "391" in message["reasoning_content"]
    for tag in ("<think>", "</think>"):
        assert tag not in message["content"]
        assert tag not in message["reasoning_content"]


def test_thinking_off_gives_no_reasoning(good):
    status, payload = chat(good.router_url, chat_body(good.model, thinking=False))
    assert status == 200, payload
    message = payload["choices"][0]["message"]
    assert message["content"] == "391"
    assert message["reasoning_content"] is None


def test_streaming_with_thinking(good):
    status, events, done = stack.post_sse(
        good.router_url + "/v1/chat/completions",
        chat_body(good.model, thinking=True, stream=True))
    assert status == 200, events
    assert done, "stream did not end with data: [DONE]"
    assert len(events) > 3  # really streamed in pieces
    assert all(e.get("object") == "chat.completion.chunk" for e in events)
    msg = stack.assemble_stream(events)
    assert msg["errors"] == []
    assert msg["role"] == "assistant"
    assert msg["content"] == "391"
    assert "17 * 23 = 391" in msg["reasoning_content"]
    assert "<think>" not in msg["content"] + msg["reasoning_content"]
    assert msg["finish_reason"] == "stop"


def _check_weather_and_time(calls):
    assert [c["function"]["name"] for c in calls] == ["get_weather", "get_time"]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [
        {"city": "Paris"}, {"timezone": "Tokyo"}]
    ids = [c["id"] for c in calls]
    assert all(CALL_ID.match(i) for i in ids), ids
    assert len(set(ids)) == 2


def test_two_parallel_tool_calls(good):
    status, payload = chat(good.router_url,
                           chat_body(good.model, TOOL_QUESTION, tools=TOOLS))
    assert status == 200, payload
    choice = payload["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    _check_weather_and_time(choice["message"]["tool_calls"])
    assert "DSML" not in (choice["message"]["content"] or "")


def test_two_parallel_tool_calls_streaming_with_thinking(good):
    status, events, done = stack.post_sse(
        good.router_url + "/v1/chat/completions",
        chat_body(good.model, TOOL_QUESTION, thinking=True, tools=TOOLS, stream=True))
    assert status == 200 and done, events
    msg = stack.assemble_stream(events)
    assert msg["finish_reason"] == "tool_calls"
    assert msg["reasoning_content"]
    _check_weather_and_time(msg["tool_calls"])
    assert "DSML" not in msg["content"]


def test_same_tool_for_two_cities(good):
    status, payload = chat(good.router_url, chat_body(
        good.model, "What is the weather in Paris and in Berlin?", tools=TOOLS))
    assert status == 200, payload
    calls = payload["choices"][0]["message"]["tool_calls"]
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls] == [
        ("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Berlin"})]


def test_generate_through_router(good):
    body = {"text": "What is 6*7?", "sampling_params": {"max_new_tokens": 8}}
    status, payload, dummy_headers = stack.post_json(good.router_url + "/generate", body)
    assert status == 200, payload
    assert payload["text"] == "42"
    assert payload["meta_info"]["finish_reason"]["type"] == "stop"


def test_pd_server_rejects_requests_without_bootstrap_room(good):
    for server in (good.prefill, good.decode):
        status, payload = chat(server.url, chat_body(good.model))
        assert status == 400, payload
        assert payload["object"] == "error" and payload["code"] == 400
        assert "bootstrap room" in payload["message"]


def test_metrics_move_with_traffic(good):
    def requests_total(server):
        status, text = stack.http_get(server.url + "/metrics")
        assert status == 200
        return sum(v for dummy_labels, v in stack.metric_samples(text, "sglang:num_requests_total"))

    before = (requests_total(good.prefill), requests_total(good.decode))
    status, dummy_payload = chat(good.router_url, chat_body(good.model))
    assert status == 200
    after = (requests_total(good.prefill), requests_total(good.decode))
    assert after[0] == before[0] + 1 and after[1] == before[1] + 1
    # SGLang 0.5.23 observes the KV transfer (latency, size, speed) on the sending prefill and the
    # bootstrap on both sides (req_time_stats.py)
    text = stack.http_get(good.prefill.url + "/metrics")[1]
    transfers = stack.metric_samples(text, "sglang:kv_transfer_latency_ms_count")
    assert transfers and transfers[0][0]["engine_type"] == "prefill"
    assert transfers[0][0]["model_name"] == good.model
    assert transfers[0][1] >= 1
    text = stack.http_get(good.decode.url + "/metrics")[1]
    bootstraps = stack.metric_samples(text, "sglang:kv_transfer_bootstrap_ms_count")
    assert bootstraps and bootstraps[0][0]["engine_type"] == "decode" and bootstraps[0][1] >= 1
    assert stack.metric_samples(text, "sglang:kv_transfer_latency_ms_count") == []
    # failure counters only appear once something failed
    for name in ("sglang:num_bootstrap_failed_reqs_total", "sglang:num_transfer_failed_reqs_total"):
        assert stack.metric_samples(text, name) == []


def test_router_engine_metrics_merge_both_workers(good):
    status, dummy_payload = chat(good.router_url, chat_body(good.model))
    assert status == 200
    status, text = stack.http_get(good.router_url + "/engine_metrics")
    assert status == 200, text
    # sglang-router 0.3.2 rewrites the names (sglang_...); smg 1.13 keeps SGLang's (sglang:...).
    samples = stack.metric_samples(text, "sglang:num_requests_total" if stack.ROUTER_IMPLEMENTATION == "smg"
                                   else "sglang_num_requests_total")
    engines = {labels["engine_type"]: labels["worker_addr"] for labels, dummy_v in samples}
    assert engines == {"prefill": good.prefill.url, "decode": good.decode.url}


def test_decode_without_reasoning_parser_leaks_reasoning(misconfigured):
    status, payload = chat(misconfigured.router_url,
                           chat_body(misconfigured.model, thinking=True))
    assert status == 200, payload
    message = payload["choices"][0]["message"]
    assert message["reasoning_content"] is None
    assert message["content"].startswith("<think>")
    assert "</think>391" in message["content"]


def test_decode_without_tool_parser_leaves_dsml_in_content(misconfigured):
    status, payload = chat(misconfigured.router_url,
                           chat_body(misconfigured.model, TOOL_QUESTION, tools=TOOLS))
    assert status == 200, payload
    choice = payload["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert not choice["message"]["tool_calls"]
    assert "<\uff5cDSML\uff5ctool_calls>" in choice["message"]["content"]
    assert 'invoke name="get_weather"' in choice["message"]["content"]


FAULT_ENV = {"SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT": "2", "SGLANG_DISAGGREGATION_WAITING_TIMEOUT": "2"}
FAULT_ROUTER = ("--disable-retries", "--disable-circuit-breaker")


def test_wrong_bootstrap_port_fails_with_5xx(pd_stack):
    pd = pd_stack(prefill_env=FAULT_ENV, decode_env=FAULT_ENV, router_args=FAULT_ROUTER,
                  router_bootstrap_port=stack.free_port())
    status, payload = chat(pd.router_url, chat_body(pd.model), timeout=60)
    assert 500 <= status < 600, payload
    text = stack.http_get(pd.decode.url + "/metrics")[1]
    failed = stack.metric_samples(text, "sglang:num_bootstrap_failed_reqs_total")
    assert failed and failed[0][1] >= 1, text


def test_stopped_prefill_fails_with_5xx(pd_stack):
    pd = pd_stack(prefill_env=FAULT_ENV, decode_env=FAULT_ENV, router_args=FAULT_ROUTER)
    pd.prefill.stop()
    status, payload = chat(pd.router_url, chat_body(pd.model), timeout=60)
    assert 500 <= status < 600, payload
