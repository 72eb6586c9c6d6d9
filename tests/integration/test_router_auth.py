# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The real sglang-router 0.3.2 started the way its unit starts it: keys from credential files through the role's
launcher, none on its command line. Without a key the API answers 401; the client key chats but gets 401 on worker
management; the control-plane key manages workers (200) and router_worker uses it."""
import json
import os
import subprocess
import sys

import pytest

import stack

pytestmark = pytest.mark.integration
CLIENT = "client-key-7f3a"
ADMIN = "admin-key-91c2"

sys.path.insert(0, os.path.join(stack.REPO, "tests", "support"))
from module_runner import run_module  # noqa: E402  pylint: disable=wrong-import-position


def call(url, method="GET", key=None, body=None):
    return stack.call(url, method, key, body)[0]


@pytest.fixture(scope="module")
def authed():
    pre, dec = stack.Emulator("prefill"), stack.Emulator("decode")
    pre.start()
    dec.start()
    router = stack.Router(prefill=[(pre.url, pre.bootstrap_port)], decode=[dec.url], api_key=CLIENT,
                          control_plane_api_key=ADMIN)
    try:
        pre.wait_healthy(60)
        dec.wait_healthy(60)
        router.start()
        router.wait_healthy(60)
        yield router
    finally:
        router.stop()
        dec.stop()
        pre.stop()


def test_no_key_on_the_command_line(authed):
    with open("/proc/%d/cmdline" % authed.proc.pid, "rb") as handle:
        cmdline = handle.read().decode("utf-8", "replace")
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=False).stdout
    for key in (CLIENT, ADMIN):
        assert key not in cmdline and key not in ps
        assert key not in authed.log_tail(400)
    # Started through the launcher (the router then renames itself: setproctitle("sglang::router"), smg's
    # "smg::router").
    assert authed.command()[1] == stack.LAUNCHER and "--api-key-credential" in authed.command()
    title = {"sglang-router": "sglang::router", "smg": "smg::router"}[authed.implementation]
    assert cmdline.split("\0")[0] in (title, authed.command()[0])


def test_401_without_key_401_with_the_client_key_on_workers_200_with_the_control_plane_key(authed):
    chat = {"model": stack.MODEL, "messages": [{"role": "user", "content": "What is 17 * 23?"}], "max_tokens": 8}
    worker = {"url": "http://127.0.0.1:9", "worker_type": "decode"}
    assert call(authed.url + "/v1/chat/completions", "POST", None, chat) == 401
    assert call(authed.url + "/workers") == 401
    assert call(authed.url + "/workers", "POST", None, worker) == 401
    assert call(authed.url + "/v1/chat/completions", "POST", CLIENT, chat) == 200
    assert call(authed.url + "/workers", key=CLIENT) == 401
    assert call(authed.url + "/workers", "POST", CLIENT, worker) == 401
    assert call(authed.url + "/workers", key=ADMIN) == 200
    # The control-plane key is not a client key.
    assert call(authed.url + "/v1/chat/completions", "POST", ADMIN, chat) == 401


def test_router_worker_and_wait_ready_with_the_control_plane_key(authed):
    from ansible_collections.pdserve.sglang.plugins.modules import router_worker, wait_ready
    decode_url = authed.decode[0]
    args = {"url": authed.url, "worker_url": decode_url, "worker_type": "decode", "state": "present", "timeout": 30}
    result, failed = run_module(router_worker.main, dict(args, api_key=CLIENT))
    assert failed and "control-plane key" in result["msg"]
    result, failed = run_module(router_worker.main, dict(args, api_key=CLIENT, control_plane_api_key=ADMIN))
    assert not failed and result["changed"] is False, result
    ready = {"endpoints": [{"url": authed.url, "kind": "router"}], "timeout": 30}
    result, failed = run_module(wait_ready.main, dict(ready, api_key=CLIENT, control_plane_api_key=ADMIN))
    assert not failed, result
    assert CLIENT not in json.dumps(result) and ADMIN not in json.dumps(result)
