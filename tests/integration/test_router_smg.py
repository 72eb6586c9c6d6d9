# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The real smg 1.13 (sglang_router_implementation: smg) in front of the emulated servers, started as its unit starts
it: the role's launcher with --implementation smg, keys from credential files, workers from the worker set file.

What must hold behind either router: PD chat, thinking and tool calls parsed through it (validate_chat), no key on a
command line, the client key refused on worker management and the control-plane key accepted, workers registered and
removed at run time, the metric names the monitoring reads. And what differs, found here from what the servers
receive (the emulator logs request bodies with SGLANG_EMULATOR_LOG_REQUESTS=1): smg forwards the client's chat body
nearly as sent (max_tokens stays max_tokens, unknown fields pass, no separate_reasoning or other defaults added),
where sglang-router 0.3.2 re-serializes it from a typed struct; and smg asks the template for thinking
(chat_template_kwargs.thinking: true) on every DeepSeek chat request that does not set it.
(Other modules run behind smg with PDSERVE_ROUTER_IMPLEMENTATION=smg.)"""
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

import pytest

import stack
from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import HttpClient
from ansible_collections.pdserve.sglang.plugins.module_utils.operations import router_admin as ra
from ansible_collections.pdserve.sglang.plugins.modules import validate_chat

sys.path.insert(0, os.path.join(stack.REPO, "tests", "support"))
from module_runner import run_module  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.integration
CLIENT = "client-key-5d1e"
ADMIN = "admin-key-c04b"
LOGGED = {"SGLANG_EMULATOR_LOG_REQUESTS": "1"}
# The router metrics the monitoring role's rules and router dashboard read.
MONITORED = ("smg_http_requests_total", "smg_http_responses_total", "smg_router_requests_total",
             "smg_router_request_duration_seconds_bucket", "smg_worker_requests_active", "smg_worker_health",
             "smg_worker_cb_state", "smg_worker_health_checks_total", "smg_worker_pool_size")


call = stack.call


@pytest.fixture(scope="module")
def smg():
    pre, dec = stack.Emulator("prefill", env=LOGGED), stack.Emulator("decode", env=LOGGED)
    extra = stack.Emulator("decode")
    for server in (pre, dec, extra):
        server.start()
    router = stack.Router(prefill=[(pre.url, pre.bootstrap_port)], decode=[dec.url], api_key=CLIENT,
                          control_plane_api_key=ADMIN, implementation="smg")
    try:
        for server in (pre, dec, extra):
            server.wait_healthy(60)
        router.start()
        router.wait_healthy(90)
        yield {"router": router, "prefill": pre, "decode": dec, "extra": extra}
    finally:
        router.stop()
        for server in (extra, dec, pre):
            server.stop()


def bodies(server, since=0):
    """The chat bodies ``server`` received (its request log), oldest first."""
    found = []
    for line in server.log_tail(4000).splitlines():
        match = re.search(r"request POST /v1/chat/completions headers=.* body=(\{.*\})$", line)
        if match:
            found.append(json.loads(match.group(1)))
    return found[since:]


def chat(router, body, key=CLIENT):
    status, text = call(router.url + "/v1/chat/completions", "POST", key,
                        dict({"model": stack.MODEL, "max_tokens": 64}, **body))
    return status, (json.loads(text) if status == 200 else text)


def test_it_is_smg_started_by_the_launcher_with_no_key_on_a_command_line(smg):
    router = smg["router"]
    assert router.command()[1] == stack.LAUNCHER and router.command()[2:4] == ["--implementation", "smg"]
    with open("/proc/%d/cmdline" % router.proc.pid, "rb") as handle:
        cmdline = handle.read().decode("utf-8", "replace")
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=False).stdout
    for key in (CLIENT, ADMIN):
        assert key not in cmdline and key not in ps and key not in router.log_tail(400)
    # smg's launch_router renames the process (setproctitle "smg::router"); sglang-router's is "sglang::router".
    assert cmdline.split("\0")[0] in ("smg::router", router.command()[0])
    assert "version  1.13.0" in router.log_tail(400) or "1.13.0" in router.log_tail(400)


def test_keys_guard_the_api_and_the_control_plane(smg):
    url = smg["router"].url
    # As sglang-router 0.3.2: /v1/models, /health and /engine_metrics answer without a key; the API and the worker
    # management do not.
    assert call(url + "/workers")[0] == 401
    assert call(url + "/workers", "POST", None, {"url": "http://127.0.0.1:9", "worker_type": "decode"})[0] == 401
    assert call(url + "/get_loads")[0] == 401
    assert call(url + "/workers", key=CLIENT)[0] == 401
    assert call(url + "/workers", key=ADMIN)[0] == 200
    question = {"messages": [{"role": "user", "content": "What is 17*23? Number only."}]}
    assert chat(smg["router"], question, key=None)[0] == 401
    # The control-plane key is not a client key.
    assert chat(smg["router"], question, key=ADMIN)[0] == 401


def test_validate_chat_passes_every_check_through_smg(smg):
    result, failed = run_module(validate_chat.main, {"url": smg["router"].url, "api_key": CLIENT, "timeout": 60})
    assert not failed, result
    assert result["failed_checks"] == []


def test_what_smg_sends_the_servers(smg):
    """The same request reaches prefill and decode; smg passes the client's fields, adds bootstrap_* and thinking."""
    router, dec, pre = smg["router"], smg["decode"], smg["prefill"]
    seen_dec, seen_pre = len(bodies(dec)), len(bodies(pre))
    status, answer = chat(router, {"messages": [{"role": "user", "content": "What is 17*23? Number only."}],
                                   "max_tokens": 48, "x_pdserve_probe": 1})
    assert status == 200 and answer["choices"][0]["message"]["content"] == "391"
    time.sleep(0.5)
    (decode_body,), (prefill_body,) = bodies(dec, seen_dec), bodies(pre, seen_pre)
    strip = ("bootstrap_room",)
    assert dict((k, v) for k, v in decode_body.items() if k not in strip) == \
        dict((k, v) for k, v in prefill_body.items() if k not in strip)
    assert decode_body["bootstrap_room"] == prefill_body["bootstrap_room"]
    assert decode_body["bootstrap_host"] == "127.0.0.1" and decode_body["bootstrap_port"] == pre.bootstrap_port
    # Not re-serialized as sglang-router 0.3.2 does: max_tokens kept, unknown fields kept, no defaults added.
    assert decode_body["max_tokens"] == 48 and "max_completion_tokens" not in decode_body
    assert decode_body["x_pdserve_probe"] == 1
    assert "separate_reasoning" not in decode_body and "skip_special_tokens" not in decode_body
    # Thinking asked for although the client did not: a DeepSeek answer through smg carries reasoning_content.
    assert decode_body["chat_template_kwargs"] == {"thinking": True}
    assert answer["choices"][0]["message"]["reasoning_content"]
    # An explicit choice is kept.
    seen_dec = len(bodies(dec))
    status, answer = chat(router, {"messages": [{"role": "user", "content": "What is 17*23? Number only."}],
                                   "chat_template_kwargs": {"thinking": False}})
    time.sleep(0.5)
    assert status == 200 and bodies(dec, seen_dec)[0]["chat_template_kwargs"] == {"thinking": False}
    assert not answer["choices"][0]["message"].get("reasoning_content")


def test_workers_are_registered_and_removed_at_run_time(smg):
    router, extra = smg["router"], smg["extra"]
    admin = ra.RouterAdmin(HttpClient(api_key=CLIENT, control_plane_api_key=ADMIN, timeout=10), router.url,
                           interval=0.2)
    added = admin.add(extra.url, "decode", api_key=CLIENT, timeout=60)
    assert added["changed"] and added["worker"]["is_healthy"]
    assert admin.add(extra.url, "decode", api_key=CLIENT, timeout=60)["changed"] is False
    listing = json.loads(call(router.url + "/workers", key=ADMIN)[1])
    assert sorted((w["worker_type"], w["url"]) for w in listing["workers"]) == sorted(
        [("prefill", smg["prefill"].url), ("decode", smg["decode"].url), ("decode", extra.url)])
    removed = admin.remove(extra.url, "decode", timeout=60)
    assert removed["changed"]
    assert chat(router, {"messages": [{"role": "user", "content": "What is 2+3?"}]})[0] == 200


def test_the_monitored_router_metrics_are_served(smg):
    chat(smg["router"], {"messages": [{"role": "user", "content": "What is 2+3?"}]})
    with urllib.request.urlopen(smg["router"].metrics_url, timeout=10) as resp:
        text = resp.read().decode()
    served = set(re.findall(r"(?m)^(smg_[a-z0-9_]+)", text))
    assert [name for name in MONITORED if name not in served] == []


def test_without_a_reasoning_parser_even_the_plain_check_fails_behind_smg(pd_stack):
    """Behind sglang-router 0.3.2 a decode server without --reasoning-parser fails the thinking checks only (a plain
    request does not think). smg asks for thinking on every request, so the plain answer carries the raw thinking
    block too: validate_chat fails the basic check as well, with the same cause."""
    pd = pd_stack(decode_drop=("--reasoning-parser",), router=False)
    router = stack.Router(prefill=[(pd.prefill.url, pd.prefill.bootstrap_port)], decode=[pd.decode.url],
                          implementation="smg")
    pd.router = router
    router.start()
    router.wait_healthy(90)
    result, failed = run_module(validate_chat.main, {"url": router.url, "checks": ["basic", "thinking"], "timeout": 60})
    assert failed
    assert result["failed_checks"] == ["basic", "thinking"]
    assert "reasoning leaked into content" in json.dumps(result)


def test_engine_metrics_keep_sglangs_colon_names_behind_smg(smg):
    """sglang-router 0.3.2's /engine_metrics rewrites the workers' names (sglang_num_requests_total); smg 1.13 keeps
    SGLang's own (sglang:num_requests_total), with the same worker_addr label. (The collection reads the servers'
    /metrics itself, never /engine_metrics.)"""
    router = smg["router"]
    assert chat(router, {"messages": [{"role": "user", "content": "What is 2+3?"}]})[0] == 200
    status, text = stack.http_get(router.url + "/engine_metrics")
    assert status == 200, text
    engines = {labels["engine_type"]: labels["worker_addr"]
               for labels, dummy_v in stack.metric_samples(text, "sglang:num_requests_total")}
    assert engines.get("prefill") == smg["prefill"].url and engines.get("decode") == smg["decode"].url
    assert not stack.metric_samples(text, "sglang_num_requests_total")
