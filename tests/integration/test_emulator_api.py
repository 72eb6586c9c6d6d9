# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The emulator on its own (no router): command line, HTTP API, fault and model knobs.

The emulator is a test instrument: these tests pin down that it fails the way SGLang does, so
the checks built on it (wait_ready, validate_chat) prove something.
"""
import json
import subprocess
import time

import pytest

import stack

pytestmark = pytest.mark.integration

QUESTION = "What is 17*23? Number only."
HEALTH_GEN = "SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION"
WEATHER = [{"type": "function", "function": {
    "name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


def run_cli(*argv):
    return subprocess.run([stack.PYTHON, stack.EMULATOR, "--model-path", "m"] + list(argv),
                          capture_output=True, text=True, timeout=30, check=False)


@pytest.mark.parametrize("argv, named", [
    (("--no-such-flag",), "--no-such-flag"),
    (("--reasoning-parser", "deepseekv4"), "--reasoning-parser"),
    (("--tool-call-parser", "deepseek-v4"), "--tool-call-parser"),
    (("--disaggregation-mode", "both"), "--disaggregation-mode"),
    (("--disaggregation-transfer-backend", "ucx"), "--disaggregation-transfer-backend"),
    (("--mem-fraction-static", "lots"), "--mem-fraction-static"),
    # not a flag in 0.5.23: a prefix of --cuda-graph-max-bs-decode and -prefill
    (("--cuda-graph-max-bs", "8"), "ambiguous option: --cuda-graph-max-bs"),
])
def test_cli_rejects_what_sglang_rejects(argv, named):
    result = run_cli(*argv)
    assert result.returncode == 2, result
    assert named in result.stderr


def test_cli_requires_model_path():
    result = subprocess.run([stack.PYTHON, stack.EMULATOR, "--port", "1"], capture_output=True,
                            text=True, timeout=30, check=False)
    assert result.returncode == 2
    assert "--model-path" in result.stderr


def _emulators(specs):
    """Start several emulators at once; wait until each listens (health may stay 503)."""
    started = []
    for mode, args, env in specs:
        started.append(stack.Emulator(mode, args=args, env=env).start())
    for emu in started:
        deadline = time.monotonic() + 30
        while stack.http_get(emu.url + "/health")[0] == 0:
            assert emu.alive(), emu.log_tail()
            assert time.monotonic() < deadline, emu.log_tail()
            time.sleep(0.05)
    return started


@pytest.fixture(scope="module")
def servers():
    # The fault servers come in both /health configurations of SGLang 0.5.23: generating (the
    # default) and the cheap liveness probe (SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION=0).
    specs = {
        "plain": ("null", ("--api-key", "sk-test", "--context-length", "8k"), None),
        "never": ("null", (), {"SGLANG_EMULATOR_NEVER_READY": "1"}),
        "fail": ("null", (), {"SGLANG_EMULATOR_FAIL_5XX": "1", HEALTH_GEN: "0"}),
        "fail_generating": ("null", (), {"SGLANG_EMULATOR_FAIL_5XX": "1"}),
        "hang": ("null", (), {"SGLANG_EMULATOR_HANG": "1", "SGLANG_HEALTH_CHECK_TIMEOUT": "1",
                              HEALTH_GEN: "0"}),
        "hang_generating": ("null", (), {"SGLANG_EMULATOR_HANG": "1",
                                         "SGLANG_HEALTH_CHECK_TIMEOUT": "1"}),
        "knobs": ("null", (), None),
    }
    emus = dict(zip(specs, _emulators(list(specs.values()))))
    yield emus
    for emu in emus.values():
        emu.stop()


def chat(emu, body, headers=None, timeout=30):
    status, payload, dummy_headers = stack.post_json(
        emu.url + "/v1/chat/completions", body, timeout=timeout, headers=headers)
    return status, payload


AUTH = {"Authorization": "Bearer sk-test"}


def test_plain_server_answers_without_bootstrap(servers):
    body = {"messages": [{"role": "user", "content": QUESTION}]}
    status, payload = chat(servers["plain"], body, headers=AUTH)
    assert status == 200, payload
    assert payload["choices"][0]["message"]["content"] == "391"


def test_api_key_is_enforced_except_health(servers):
    emu = servers["plain"]
    status, dummy_payload = chat(emu, {"messages": [{"role": "user", "content": "hi"}]})
    assert status == 401
    assert stack.http_get(emu.url + "/health")[0] == 200


def test_server_and_model_info(servers):
    emu = servers["plain"]
    req = stack.urllib.request.Request(emu.url + "/server_info", headers=AUTH)
    with stack.urllib.request.urlopen(req, timeout=5) as resp:
        info = json.loads(resp.read())
    assert info["served_model_name"] == stack.MODEL
    assert info["model_path"] == stack.MODEL_PATH
    assert info["tp_size"] == 1
    assert info["disaggregation_mode"] == "null"
    assert info["context_length"] == 8000  # 8k, parsed like SGLang
    assert info["port"] == emu.port
    for path in ("/get_server_info", "/model_info", "/get_model_info", "/v1/models"):
        req = stack.urllib.request.Request(emu.url + path, headers=AUTH)
        with stack.urllib.request.urlopen(req, timeout=5) as resp:
            assert resp.status == 200
    req = stack.urllib.request.Request(emu.url + "/v1/models", headers=AUTH)
    with stack.urllib.request.urlopen(req, timeout=5) as resp:
        assert json.loads(resp.read())["data"][0]["id"] == stack.MODEL


def test_load_delay_then_ready():
    # its own server: the delay runs from process start, a shared one could be ready already.
    # Like SGLang, the port opens only once the engine is up: a loading server refuses connections.
    emu = stack.Emulator("null", env={"SGLANG_EMULATOR_LOAD_DELAY": "5"}).start()
    try:
        time.sleep(1.0)
        assert emu.alive(), emu.log_tail()
        assert stack.http_get(emu.url + "/health")[0] == 0  # connection refused
        assert stack.http_get(emu.url + "/health_generate")[0] == 0
        with pytest.raises(OSError, match="Connection refused"):
            chat(emu, {"messages": [{"role": "user", "content": QUESTION}]})
        emu.wait_healthy(30)
        assert stack.http_get(emu.url + "/health_generate")[0] == 200
        status, payload = chat(emu, {"messages": [{"role": "user", "content": QUESTION}]})
        assert status == 200 and payload["choices"][0]["message"]["content"] == "391"
    finally:
        emu.stop()


def test_never_ready(servers):
    emu = servers["never"]
    with pytest.raises(TimeoutError):
        emu.wait_healthy(1.0)
    assert stack.http_get(emu.url + "/health")[0] == 503


def test_fail_5xx(servers):
    emu = servers["fail"]
    assert stack.http_get(emu.url + "/health")[0] == 200  # cheap /health: does not generate
    assert stack.http_get(emu.url + "/health_generate")[0] == 503
    status, payload = chat(emu, {"messages": [{"role": "user", "content": QUESTION}]})
    assert status == 500
    assert set(payload) == {"object", "message", "type", "param", "code"}
    assert payload["object"] == "error" and payload["code"] == 500


def test_hang_accepts_but_never_answers(servers):
    emu = servers["hang"]
    assert stack.http_get(emu.url + "/health")[0] == 200  # cheap /health
    with pytest.raises(OSError):  # the client's own timeout (socket.timeout / URLError)
        chat(emu, {"messages": [{"role": "user", "content": QUESTION}]}, timeout=1.0)
    assert stack.http_get(emu.url + "/health_generate", timeout=5.0)[0] == 503


@pytest.mark.parametrize("name", ["fail_generating", "hang_generating"])
def test_default_health_generates(servers, name):
    # 0.5.23's default: /health is /health_generate, so a server that cannot generate is unhealthy
    emu = servers[name]
    assert stack.http_get(emu.url + "/health", timeout=5.0)[0] == 503
    assert stack.http_get(emu.url + "/health_generate", timeout=5.0)[0] == 503
    assert stack.http_get(servers["knobs"].url + "/health")[0] == 200


def test_crash_after():
    emu = stack.Emulator("null", env={"SGLANG_EMULATOR_CRASH_AFTER": "3"}).start()
    try:
        emu.wait_healthy(30)
        assert emu.proc.wait(timeout=30) != 0
    finally:
        emu.stop()


def test_metrics_only_with_enable_metrics():
    emu = stack.Emulator("null", drop=("--enable-metrics",)).start()
    try:
        emu.wait_healthy(30)
        assert stack.http_get(emu.url + "/metrics")[0] == 404
    finally:
        emu.stop()


def test_metric_names_and_labels(servers):
    emu = servers["knobs"]
    status, text = stack.http_get(emu.url + "/metrics")
    assert status == 200
    for name in ("sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:gen_throughput",
                 "sglang:token_usage", "sglang:cache_hit_rate",
                 "sglang:num_prefill_bootstrap_queue_reqs",
                 "sglang:num_decode_transfer_queue_reqs"):
        samples = stack.metric_samples(text, name)
        assert samples, name
        assert samples[0][0]["model_name"] == stack.MODEL
        assert samples[0][0]["engine_type"] == "unified"
        assert samples[0][0]["tp_rank"] == "0"
    # like SGLang's multiprocess collector: no family (not even HELP/TYPE) before its first sample
    for name in ("sglang:num_bootstrap_failed_reqs_total", "sglang:num_transfer_failed_reqs_total",
                 "sglang:kv_transfer_latency_ms"):
        assert name not in text
    assert "_created" not in text
    status, payload = chat(emu, {"messages": [{"role": "user", "content": QUESTION}]})
    assert status == 200, payload
    text = stack.http_get(emu.url + "/metrics")[1]
    for name in ("sglang:time_to_first_token_seconds_count",
                 "sglang:e2e_request_latency_seconds_count", "sglang:prompt_tokens_total",
                 "sglang:generation_tokens_total", "sglang:num_requests_total"):
        samples = stack.metric_samples(text, name)
        assert samples and samples[0][0]["is_streaming"] == "false", name


def test_generation_tokens_counted(servers):
    emu = servers["knobs"]

    def generated():
        text = stack.http_get(emu.url + "/metrics")[1]
        return sum(v for dummy_labels, v in stack.metric_samples(text, "sglang:generation_tokens_total"))

    before = generated()
    body = {"messages": [{"role": "user", "content": QUESTION}],
            "chat_template_kwargs": {"thinking": True}}
    status, dummy_payload = chat(emu, body)
    assert status == 200
    assert generated() > before + 5


def test_max_tokens_truncates(servers):
    status, payload = chat(servers["knobs"], {
        "messages": [{"role": "user", "content": QUESTION}], "max_completion_tokens": 3,
        "chat_template_kwargs": {"thinking": True}})
    assert status == 200
    choice = payload["choices"][0]
    assert choice["finish_reason"] == "length"
    assert choice["message"]["content"] == ""  # cut inside the reasoning
    assert choice["message"]["reasoning_content"]


# ---- model knobs (one emulator per knob, all started together) ----------------------------

@pytest.fixture(scope="module")
def knob_servers():
    specs = {
        "ignore_thinking": {"SGLANG_EMULATOR_IGNORE_THINKING": "1"},
        "v3": {"SGLANG_EMULATOR_TOOL_FORMAT": "v3"},
        "name": {"SGLANG_EMULATOR_TOOL_NAME": "get_forecast"},
        "name_forwarded": {"SGLANG_EMULATOR_TOOL_NAME": "get_forecast",
                           "SGLANG_FORWARD_UNKNOWN_TOOLS": "1"},
        "invalid": {"SGLANG_EMULATOR_TOOL_ARGS": "invalid_json"},
    }
    emus = dict(zip(specs, _emulators([("null", (), env) for env in specs.values()])))
    for emu in emus.values():
        emu.wait_healthy(30)
    yield emus
    for emu in emus.values():
        emu.stop()


TOOL_BODY = {"messages": [{"role": "user", "content": "What is the weather in Paris?"}],
             "tools": WEATHER}


def test_template_ignoring_thinking_puts_answer_in_reasoning(knob_servers):
    # SGLang forces the deepseek-v4 reasoning parser on when thinking is requested: a model that
    # did not think then has its answer reported as reasoning and an empty content.
    status, payload = chat(knob_servers["ignore_thinking"], {
        "messages": [{"role": "user", "content": QUESTION}],
        "chat_template_kwargs": {"thinking": True}})
    assert status == 200
    message = payload["choices"][0]["message"]
    assert message["content"] == ""
    assert message["reasoning_content"] == "391"


def test_v3_tool_tokens_stay_in_content(knob_servers):
    status, payload = chat(knob_servers["v3"], TOOL_BODY)
    assert status == 200
    choice = payload["choices"][0]
    assert not choice["message"]["tool_calls"]
    assert choice["finish_reason"] == "stop"
    assert "tool\u2581calls\u2581begin" in choice["message"]["content"]


def test_unknown_tool_name_is_dropped_unless_forwarded(knob_servers):
    status, payload = chat(knob_servers["name"], TOOL_BODY)
    assert status == 200
    assert not payload["choices"][0]["message"]["tool_calls"]
    assert payload["choices"][0]["finish_reason"] == "stop"
    status, payload = chat(knob_servers["name_forwarded"], TOOL_BODY)
    calls = payload["choices"][0]["message"]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["get_forecast"]


def test_invalid_json_arguments(knob_servers):
    status, payload = chat(knob_servers["invalid"], TOOL_BODY)
    assert status == 200
    calls = payload["choices"][0]["message"]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["get_weather"]
    with pytest.raises(ValueError):
        json.loads(calls[0]["function"]["arguments"])


def test_port_conflicts_fail_at_startup(servers):
    # like SGLang: the torch.distributed rendezvous port and the bootstrap port are bound at
    # startup, so two servers given the same one on a host cannot both start
    taken = servers["plain"].port
    dist = run_cli("--port", str(stack.free_port()), "--dist-init-addr", "127.0.0.1:%d" % taken)
    assert dist.returncode == 1
    assert "DistNetworkError" in dist.stderr and "--dist-init-addr" in dist.stderr
    boot = run_cli("--port", str(stack.free_port()), "--disaggregation-mode", "prefill",
                   "--disaggregation-bootstrap-port", str(taken))
    assert boot.returncode == 1
    assert "bootstrap server" in boot.stderr


def test_an_smg_style_body_is_read_as_sglang_reads_it(servers):
    """What smg 1.13 forwards (tests/integration/test_router_smg.py): the client's body with max_tokens (not
    max_completion_tokens), fields SGLang does not know, and no separate_reasoning. SGLang 0.5.23's
    ChatCompletionRequest ignores unknown fields, reads max_tokens when max_completion_tokens is absent and defaults
    separate_reasoning to true: so does the emulator."""
    status, payload = chat(servers["knobs"], {
        "messages": [{"role": "user", "content": QUESTION}], "max_tokens": 3, "x_router_field": {"a": 1},
        "logprobs": False, "chat_template_kwargs": {"thinking": True}})
    assert status == 200
    choice = payload["choices"][0]
    assert choice["finish_reason"] == "length"
    assert choice["message"]["content"] == "" and choice["message"]["reasoning_content"]
