# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The real sglang-router 0.3.2, started the way its unit starts it (the launcher, keys from credential files, workers
from the worker set file), learns and forgets workers at run time through pdserve.sglang's reconcile
(module_utils/operations/worker_set) without a restart: same PID, chats answered after every step. A restart reads
the worker set file again."""
import time

import pytest

import stack
from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import HttpClient
from ansible_collections.pdserve.sglang.plugins.module_utils.operations import router_admin as ra
from ansible_collections.pdserve.sglang.plugins.module_utils.operations import worker_set as ws
from ansible_collections.pdserve.sglang.plugins.module_utils.validation import readiness as rd

pytestmark = pytest.mark.integration
CLIENT = "client-key-set-71aa"
ADMIN = "admin-key-set-5e02"


@pytest.fixture(scope="module")
def servers():
    made = {"prefill": stack.Emulator("prefill"), "decode-0": stack.Emulator("decode"), "decode-1": stack.Emulator("decode")}
    for emulator in made.values():
        emulator.start()
    try:
        for emulator in made.values():
            emulator.wait_healthy(60)
        yield made
    finally:
        for emulator in made.values():
            emulator.stop()


def wanted(servers, decodes):
    return {"prefill": [{"url": servers["prefill"].url, "bootstrap_port": servers["prefill"].bootstrap_port}],
            "decode": [{"url": servers[name].url} for name in decodes]}


def as_list(workers):
    return ([{"url": w["url"], "worker_type": "prefill", "bootstrap_port": w["bootstrap_port"]} for w in workers["prefill"]]
            + [{"url": w["url"], "worker_type": "decode", "bootstrap_port": None} for w in workers["decode"]])


def listed(router):
    """The router's workers as (type, url, healthy); none while it does not answer GET /workers yet."""
    return sorted((w["worker_type"], w["url"], w["is_healthy"]) for w in (router.workers() or {}).get("workers") or [])


def chat(router):
    status, _body, _headers = stack.post_json(router.url + "/v1/chat/completions", {
        "model": stack.MODEL, "messages": [{"role": "user", "content": "hello"}], "max_tokens": 8},
        headers={"Authorization": "Bearer " + CLIENT})
    return status


def wait_listed(router, expected, timeout=30):
    deadline = time.monotonic() + timeout
    while listed(router) != expected and time.monotonic() < deadline:
        time.sleep(0.2)
    return listed(router)


def test_workers_come_and_go_without_a_restart_and_a_restart_reads_the_worker_set_file(servers):
    start = wanted(servers, ["decode-0"])
    router = stack.Router(prefill=[(servers["prefill"].url, servers["prefill"].bootstrap_port)],
                          decode=[servers["decode-0"].url], api_key=CLIENT, control_plane_api_key=ADMIN)
    assert "--decode" not in router.args and "--workers-file" in router.launcher_args
    client = HttpClient(api_key=CLIENT, control_plane_api_key=ADMIN, timeout=10)
    admin = ra.RouterAdmin(client, router.url, interval=0.1)
    try:
        router.start()
        router.wait_healthy(60)
        pid = router.proc.pid
        assert wait_listed(router, sorted([("prefill", servers["prefill"].url, True),
                                           ("decode", servers["decode-0"].url, True)])) == sorted(
            [("prefill", servers["prefill"].url, True), ("decode", servers["decode-0"].url, True)])

        # Scale out: decode-1 joins the inventory.
        out = ws.reconcile(admin, as_list(wanted(servers, ["decode-0", "decode-1"])), client, api_key=CLIENT, timeout=30)
        assert [w["url"] for w in out["registered"]] == [servers["decode-1"].url] and out["deregistered"] == []
        assert ("decode", servers["decode-1"].url, True) in listed(router)
        assert router.proc.pid == pid and router.alive()
        assert chat(router) == 200

        # Scale in: decode-0 leaves (or is marked in_service: false); it is drained, the router keeps running.
        into = ws.reconcile(admin, as_list(wanted(servers, ["decode-1"])), client, api_key=CLIENT, timeout=30)
        assert [w["url"] for w in into["deregistered"]] == [servers["decode-0"].url]
        assert into["drained"] and into["drained"][0]["idle"]
        assert sorted(u for _t, u, _h in listed(router)) == sorted([servers["prefill"].url, servers["decode-1"].url])
        assert router.proc.pid == pid and router.alive()
        assert chat(router) == 200

        # Nothing to do: the router already serves the set.
        again = ws.reconcile(admin, as_list(wanted(servers, ["decode-1"])), client, api_key=CLIENT, timeout=30)
        assert not again["changed"]

        # A restart reads the worker set file: the role wrote the new set there.
        router.write_workers(wanted(servers, ["decode-1"]))
        router.stop()
        router.proc = None
        router.start()
        router.wait_healthy(60)
        expected = sorted([("prefill", servers["prefill"].url, True), ("decode", servers["decode-1"].url, True)])
        assert wait_listed(router, expected) == expected
    finally:
        router.stop()


def test_a_router_just_started_with_a_server_still_loading_is_reconciled_at_once_without_a_double_registration(servers):
    """As right after the router's unit started on a first deploy: the reconcile waits for the router to answer and
    for the loading server's /health. The router answers before its own start-up jobs list even a healthy worker,
    so the reconcile may register workers the router also registers itself: each is then listed once, healthy (the
    router's own job ends with "already exists"), and the router serves."""
    loading = stack.Emulator("decode", env={"SGLANG_EMULATOR_LOAD_DELAY": "4"})
    loading.start()
    workers = {"prefill": [{"url": servers["prefill"].url, "bootstrap_port": servers["prefill"].bootstrap_port}],
               "decode": [{"url": servers["decode-0"].url}, {"url": loading.url}]}
    router = stack.Router(prefill=[(servers["prefill"].url, servers["prefill"].bootstrap_port)],
                          decode=[servers["decode-0"].url, loading.url], api_key=CLIENT, control_plane_api_key=ADMIN)
    client = HttpClient(api_key=CLIENT, control_plane_api_key=ADMIN, timeout=10)
    try:
        router.start()
        out = ws.reconcile(ra.RouterAdmin(client, router.url, interval=0.1), as_list(workers), client, api_key=CLIENT,
                           timeout=60)
        assert out["deregistered"] == []
        # Any of them, the healthy prefill too: the router may answer before its own start-up job listed it.
        wanted = set([servers["prefill"].url, servers["decode-0"].url, loading.url])
        assert set(w["url"] for w in out["registered"]) <= wanted
        expected = sorted([("prefill", servers["prefill"].url, True), ("decode", servers["decode-0"].url, True),
                           ("decode", loading.url, True)])
        assert listed(router) == expected
        assert chat(router) == 200
        # The router's own start-up jobs for the same servers end without a second entry.
        time.sleep(3)
        assert listed(router) == expected
        assert not ws.reconcile(ra.RouterAdmin(client, router.url, interval=0.1), as_list(workers), client,
                                api_key=CLIENT, timeout=30)["changed"]
    finally:
        router.stop()
        loading.stop()


def test_the_wait_registers_a_server_that_came_up_between_the_routers_own_retries(servers):
    """sglang-router 0.3.2 retries a worker that refused it at start after 1, 2, 3, 4 and then 5 s pauses, counted
    from when it starts serving (tries at 10 and 15 s). A server up 12.5 s after that, in the middle of the gap:
    wait_ready, told to register the router's worker set, registers it once it answers /health, the router serves
    within a probe of that, the server is listed once, and the router's own retry ends without a second entry."""
    loading = stack.Emulator("decode", env={"SGLANG_EMULATOR_LOAD_DELAY": "12.5"})
    workers = {"prefill": [{"url": servers["prefill"].url, "bootstrap_port": servers["prefill"].bootstrap_port}],
               "decode": [{"url": loading.url}]}
    router = stack.Router(prefill=[(servers["prefill"].url, servers["prefill"].bootstrap_port)], decode=[loading.url],
                          api_key=CLIENT, control_plane_api_key=ADMIN)
    client = HttpClient(api_key=CLIENT, control_plane_api_key=ADMIN, timeout=10)
    endpoint = rd.Endpoint(router.url, kind="router", workers=workers, register=True, model=stack.MODEL)
    try:
        router.start()
        # The prefill server is up already: the router lists it at its start (on a busy machine a moment after its
        # port opens; a wait probing before that would register it too).
        assert wait_listed(router, [("prefill", servers["prefill"].url, True)], timeout=10) == [
            ("prefill", servers["prefill"].url, True)]
        started = time.monotonic()
        loading.start()
        states, outcome = rd.Waiter([endpoint], client, timeout=60, interval=0.25).run()
        assert outcome == "ready", states[0].last_status
        # Registered by the wait: the router had not listed it yet (its own retry comes 15 s after its start).
        assert states[0].registered == [loading.url]
        # The server is up 12.5 s after its start: the router served within a probe, a POST and a chat of that.
        assert time.monotonic() - started < 12.5 + 2.5
        expected = sorted([("prefill", servers["prefill"].url, True), ("decode", loading.url, True)])
        assert listed(router) == expected
        time.sleep(5)
        assert listed(router) == expected
        assert chat(router) == 200
    finally:
        router.stop()
        loading.stop()
