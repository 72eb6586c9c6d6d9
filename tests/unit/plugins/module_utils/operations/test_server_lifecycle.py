# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Restarting one server unit and timing it until ready, with a scripted systemctl/journalctl and HTTP client."""

import json

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.operations import server_lifecycle as sl
from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import HttpResult
from ansible_collections.pdserve.sglang.plugins.module_utils.validation.readiness import SystemdInspector

JOURNAL = [
    "[  100.000000] h systemd[1]: Started sglang-decode-0.service.",
    "[  100.500000] h python[42]: [2026-12-01 10:00:00] The server is fired up and ready to roll!",
    "[  200.000000] h systemd[1]: Started sglang-decode-0.service.",
    "[  312.250000] h python[43]: [2026-12-01 10:03:32] Load weight end.",
    "[  413.750000] h python[43]: [2026-12-01 10:03:33] The server is fired up and ready to roll!",
]


class System(object):
    def __init__(self, active="active", start_usec=200000000):
        self.calls = []
        self.active = active
        self.start_usec = start_usec

    def __call__(self, args):
        self.calls.append(args[1:] if args[0].endswith("systemctl") else args)
        if args[0].endswith("journalctl"):
            return 0, "\n".join(JOURNAL), ""
        if args[1] == "show" and "--property=ExecMainStartTimestampMonotonic" in args:
            return 0, "ExecMainStartTimestampMonotonic=%d\n" % self.start_usec, ""
        if args[1] == "show":
            return 0, "LoadState=loaded\nActiveState=%s\nSubState=running\nResult=success\nNRestarts=0\n" % self.active, ""
        return 0, "", ""


class Client(object):
    timeout = 5.0

    def __init__(self, down_for=2):
        self.down_for = down_for
        self.health = 0

    def get(self, url, timeout=None):
        if url.endswith("/health"):
            self.health += 1
            return HttpResult("GET", url, 200 if self.health > self.down_for else 503)
        if url.endswith("/server_info"):
            return HttpResult("GET", url, 200, {}, json.dumps({"disaggregation_mode": "decode"}).encode())
        return HttpResult("GET", url, 200)


def restarter(system, client):
    return sl.ServerRestarter(system, client, SystemdInspector(system))


def test_last_load_time_from_the_journal():
    assert sl.last_load_seconds(200000000, JOURNAL) == 213.75
    assert sl.last_load_seconds(100000000, JOURNAL) == 0.5
    assert sl.last_load_seconds(500000000, JOURNAL) is None
    assert sl.last_load_seconds("", JOURNAL) is None


def test_previous_load_reads_systemd_and_the_journal():
    system = System()
    assert restarter(system, Client()).previous_load("sglang-decode-0.service") == 213.75


def test_restart_then_wait_until_it_generates():
    system = System()
    details = restarter(system, Client(down_for=2)).restart(
        "sglang-decode-0.service", "http://127.0.0.1:30002", 10, interval=0.01, daemon_reload=True)
    assert ["daemon-reload"] in system.calls and ["restart", "sglang-decode-0.service"] in system.calls
    assert system.calls.index(["daemon-reload"]) < system.calls.index(["restart", "sglang-decode-0.service"])
    assert details["restart_to_ready"] >= details["restart_seconds"] >= 0
    assert details["unit_state"]["ActiveState"] == "active"
    # the new start's phases, from the journal lines after the unit's start (the scripted one: ready after 213.75 s)
    assert details["startup"]["ready_s"] == 213.75 and details["startup"]["phase"] == "ready"


def test_a_unit_that_dies_fails_at_once_with_its_journal():
    system = System(active="failed")
    with pytest.raises(sl.RestartError) as exc:
        restarter(system, Client(down_for=10 ** 6)).restart(
            "sglang-decode-0.service", "http://127.0.0.1:30002", 30, interval=0.01)
    assert "unit failed" in str(exc.value)
    assert exc.value.details["journal"][-1].endswith("ready to roll!")


def test_a_failing_systemctl_is_an_error():
    def run(args):
        return (1, "", "Unit x.service not found.") if "restart" in args else (0, "", "")
    with pytest.raises(sl.RestartError, match="not found"):
        sl.ServerRestarter(run, Client(), SystemdInspector(run)).restart("x.service", "http://h:1", 1)
