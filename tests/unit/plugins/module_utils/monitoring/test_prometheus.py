# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Is a Prometheus doing its job (module_utils/monitoring/prometheus.py): the pure judgements of its API's answers,
the failure message, and the poller against a scripted client and clock (the module through HTTP:
tests/unit/plugins/modules/test_monitoring_verify.py)."""

import json
from urllib.parse import unquote

from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import HttpResult
from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring import prometheus as P

DECODE = {"job": "sglang-decode", "address": "127.0.0.1:30002", "labels": {"host": "box"}}
NODE = {"job": "node", "address": "127.0.0.1:9100", "labels": {"host": "box"}}


def target(job, address, health="up", error="", discovered=True):
    out = {"labels": {"job": job, "instance": address}, "health": health, "lastError": error}
    if discovered:
        out["discoveredLabels"] = {"__address__": address}
    return out


class Client(object):
    """Answers GETs from ``routes``: {path prefix: (status, payload)}; records the paths asked."""

    def __init__(self, routes):
        self.routes = routes
        self.paths = []

    def get(self, url):
        path = url.split("9090", 1)[1]
        self.paths.append(unquote(path))
        for prefix, (status, payload) in self.routes.items():
            if path.startswith(prefix):
                body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                return HttpResult("GET", url, status, {}, body)
        return HttpResult("GET", url, None, error="connection refused")


def healthy(colon=3, underscore=(), rules=None):
    return {
        "/-/ready": (200, b"Prometheus Server is Ready."),
        "/api/v1/targets": (200, {"status": "success", "data": {"activeTargets": [
            target("sglang-decode", "127.0.0.1:30002"), target("node", "127.0.0.1:9100")]}}),
        "/api/v1/rules": (200, {"status": "success", "data": {"groups": rules or [
            {"name": "g", "file": "f.yml", "rules": [{"name": "A", "health": "ok"}]}]}}),
        "/api/v1/query?query=" + P._quote(P.UNDERSCORE_QUERY): (200, {"status": "success", "data": {"result": [
            {"metric": {"__name__": n}} for n in underscore]}}),
        "/api/v1/query?query=" + P._quote(P.COLON_QUERY): (200, {"status": "success", "data": {"result": (
            [{"value": [0, str(colon)]}] if colon else [])}}),
    }


def test_judge_targets_up_down_missing():
    active = [target("sglang-decode", "127.0.0.1:30002", "down", "connection refused"),
              target("node", "127.0.0.1:9100"), target("other", "10.0.0.1:1")]
    expected = [DECODE, NODE, {"job": "gpu", "address": "127.0.0.1:9400", "labels": {"host": "box"}}]
    up, down, missing = P.judge_targets(active, expected)
    assert up == [{"job": "node", "address": "127.0.0.1:9100", "host": "box"}]
    assert down == [{"job": "sglang-decode", "address": "127.0.0.1:30002", "host": "box", "health": "down",
                     "last_error": "connection refused"}]
    assert missing == [{"job": "gpu", "address": "127.0.0.1:9400", "host": "box"}]


def test_a_target_is_matched_by_its_instance_label_without_discovered_labels():
    up, down, missing = P.judge_targets([target("node", "127.0.0.1:9100", discovered=False)], [NODE])
    assert [t["job"] for t in up] == ["node"] and down == [] and missing == []
    # the same address under another job is not the expected target
    assert P.judge_targets([target("gpu", "127.0.0.1:9100")], [NODE])[2] == [
        {"job": "node", "address": "127.0.0.1:9100", "host": "box"}]
    assert P.judge_targets(None, [NODE])[2][0]["job"] == "node"


def test_judge_rules():
    groups = [{"name": "g1", "file": "a.yml",
               "rules": [{"name": "A", "health": "ok"}, {"name": "B", "health": "err", "lastError": "bad"}]},
              {"name": "g2", "file": "b.yml", "rules": [{"name": "C", "health": "unknown"}]}, {"name": "g3"}]
    total, bad = P.judge_rules(groups)
    assert total == 3
    assert bad == [{"group": "g1", "file": "a.yml", "rule": "B", "health": "err", "last_error": "bad"},
                   {"group": "g2", "file": "b.yml", "rule": "C", "health": "unknown", "last_error": ""}]
    assert P.judge_rules(None) == (0, [])


def test_describe_names_everything_that_is_wrong():
    state = {"url": "http://p:9090", "ready": False, "last_status": "GET /-/ready -> 503",
             "down": [{"job": "node", "address": "a:1", "host": "h", "health": "down", "last_error": ""}],
             "missing": [{"job": "gpu", "address": "a:2", "host": "h"}],
             "rules_bad": [{"rule": "A", "group": "g", "health": "err", "last_error": "x"},
                           {"rule": "B", "group": "g", "health": "unknown", "last_error": ""}],
             "sglang_underscore_names": ["sglang_num_running_reqs"], "expect_colon": True, "sglang_colon_series": 0}
    assert P.describe(state).split("; ") == [
        "Prometheus at http://p:9090 is not ready (GET /-/ready -> 503)",
        "target node a:1 (host h) is down: no error given",
        "target gpu a:2 (host h) is not scraped (not in /api/v1/targets)",
        "rule A of group g is err: x",
        "rule B of group g is unknown",
        "series stored with '_' instead of SGLang's ':' (the sglang_ relabel rule is missing from the scrape jobs): "
        "sglang_num_running_reqs",
        "no sglang:* series stored although SGLang servers are scraped",
    ]
    assert P.describe({"ready": True}) == ""


def test_once_on_a_healthy_prometheus():
    check = P.PrometheusCheck(Client(healthy()), "http://p:9090/", [DECODE, NODE])
    state = check.once()
    assert state["ready"] and state["down"] == [] and state["missing"] == [] and state["rules_bad"] == []
    assert (state["rules_total"], state["sglang_colon_series"], state["expect_colon"]) == (1, 3, True)
    assert P.PrometheusCheck.done(state)
    assert check.client.paths[0] == "/-/ready"
    assert P.UNDERSCORE_QUERY in check.client.paths[3] and P.COLON_QUERY in check.client.paths[4]


def test_not_ready_lists_every_target_missing():
    routes = healthy()
    routes["/-/ready"] = (503, b"Service Unavailable")
    state = P.PrometheusCheck(Client(routes), "http://p:9090", [DECODE, NODE]).once()
    assert not state["ready"] and [t["job"] for t in state["missing"]] == ["sglang-decode", "node"]
    assert state["last_status"] == "GET /-/ready -> 503 Service Unavailable"
    assert not P.PrometheusCheck.done(state)


def test_unreadable_rules_are_a_bad_rule():
    routes = healthy()
    routes["/api/v1/rules"] = (500, b"boom")
    state = P.PrometheusCheck(Client(routes), "http://p:9090", [NODE]).once()
    assert [(r["rule"], r["health"]) for r in state["rules_bad"]] == [("/api/v1/rules", "unreadable")]
    assert not P.PrometheusCheck.done(state)


def test_names_with_underscores_or_without_colon_series_are_not_done():
    state = P.PrometheusCheck(Client(healthy(underscore=["sglang_x", "sglang_a"])), "http://p:9090", [DECODE]).once()
    assert state["sglang_underscore_names"] == ["sglang_a", "sglang_x"] and not P.PrometheusCheck.done(state)
    state = P.PrometheusCheck(Client(healthy(colon=0)), "http://p:9090", [DECODE]).once()
    assert state["sglang_colon_series"] == 0 and not P.PrometheusCheck.done(state)
    # no SGLang job expected: no colon series needed, and check_names=False asks nothing about names
    assert P.PrometheusCheck.done(P.PrometheusCheck(Client(healthy(colon=0)), "http://p:9090", [NODE]).once())
    check = P.PrometheusCheck(Client(healthy(colon=0)), "http://p:9090", [DECODE], check_names=False)
    assert P.PrometheusCheck.done(check.once()) and len(check.client.paths) == 3


def test_wait_polls_until_done_or_timeout():
    now = [0.0]
    sleeps = []

    def sleep(seconds):
        sleeps.append(seconds)
        now[0] += seconds

    routes = healthy()
    routes["/-/ready"] = (503, b"")
    client = Client(routes)
    check = P.PrometheusCheck(client, "http://p:9090", [NODE], clock=lambda: now[0], sleep=sleep)
    state = check.wait(timeout=3, interval=1.0)
    assert state["ok"] is False and state["seconds"] == 3.0 and sleeps == [1.0, 1.0, 1.0]
    routes["/-/ready"] = (200, b"ready")
    now[0], sleeps[:] = 0.0, []
    state = check.wait(timeout=3, interval=1.0)
    assert state["ok"] is True and state["seconds"] == 0.0 and sleeps == []
