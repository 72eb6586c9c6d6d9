# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""monitoring_verify against a scripted Prometheus HTTP API on loopback."""

import functools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring import prometheus as prometheus_check
from ansible_collections.pdserve.sglang.plugins.modules import monitoring_verify

EXPECTED = [
    {"job": "sglang-decode", "address": "127.0.0.1:30002", "labels": {"host": "box"}},
    {"job": "node", "address": "127.0.0.1:9100", "labels": {"host": "box"}},
]


def _target(job, address, health="up", error=""):
    return {"labels": {"job": job, "instance": address}, "discoveredLabels": {"__address__": address},
            "health": health, "lastError": error}


@pytest.fixture
def prom():
    """A loopback Prometheus API whose answers the test scripts."""
    state = {"ready": 200, "targets": [_target("sglang-decode", "127.0.0.1:30002"), _target("node", "127.0.0.1:9100")],
             "rules": [{"name": "pdserve-availability", "file": "/etc/prometheus/rules/a.yml",
                        "rules": [{"name": "SGLangServerDown", "health": "ok"}]}],
             "underscore": [], "colon": 42, "auth": None}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, status, payload):
            body = json.dumps(payload).encode() if not isinstance(payload, bytes) else payload
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):  # noqa: N802
            if state["auth"] and self.headers.get("Authorization") != state["auth"]:
                return self._send(401, b"Unauthorized")
            url = urlparse(self.path)
            if url.path == "/-/ready":
                return self._send(state["ready"], b"Prometheus Server is Ready.")
            if url.path == "/api/v1/targets":
                return self._send(200, {"status": "success", "data": {"activeTargets": state["targets"]}})
            if url.path == "/api/v1/rules":
                return self._send(200, {"status": "success", "data": {"groups": state["rules"]}})
            if url.path == "/api/v1/query":
                query = parse_qs(url.query)["query"][0]
                if query == prometheus_check.UNDERSCORE_QUERY:
                    result = [{"metric": {"__name__": n}, "value": [0, "1"]} for n in state["underscore"]]
                else:
                    result = [{"metric": {}, "value": [0, str(state["colon"])]}] if state["colon"] else []
                return self._send(200, {"status": "success", "data": {"resultType": "vector", "result": result}})
            return self._send(404, b"")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state["url"] = "http://127.0.0.1:%d" % server.server_address[1]
    yield state
    server.shutdown()


@pytest.fixture
def run(module_runner):
    return functools.partial(module_runner, monitoring_verify.main)


def args(prom, **over):
    base = {"url": prom["url"], "expected_targets": EXPECTED, "timeout": 1.0, "interval": 0.1}
    base.update(over)
    return base


def test_everything_right(run, prom):
    result, failed = run(args(prom))
    assert not failed, result
    assert result["ok"] and result["ready"] and result["changed"] is False
    assert (result["targets_up"], result["targets_total"], result["rules_total"]) == (2, 2, 1)
    assert result["sglang_colon_series"] == 42


def test_a_down_target_is_named_with_its_error(run, prom):
    prom["targets"][0] = _target("sglang-decode", "127.0.0.1:30002", "down", 'Get "http://127.0.0.1:30002/metrics": '
                                 "connection refused")
    result, failed = run(args(prom))
    assert failed
    assert "target sglang-decode 127.0.0.1:30002 (host box) is down" in result["msg"]
    assert "connection refused" in result["msg"]
    assert result["targets_up"] == 1


def test_a_target_prometheus_does_not_scrape_is_named(run, prom):
    prom["targets"] = prom["targets"][1:]
    result, failed = run(args(prom))
    assert failed and "target sglang-decode 127.0.0.1:30002 (host box) is not scraped" in result["msg"]


def test_unhealthy_rules_and_underscore_names_fail(run, prom):
    prom["rules"][0]["rules"].append({"name": "Broken", "health": "err", "lastError": "many-to-many matching"})
    prom["underscore"] = ["sglang_token_usage"]
    result, failed = run(args(prom))
    assert failed
    assert "rule Broken of group pdserve-availability is err: many-to-many matching" in result["msg"]
    assert "sglang_token_usage" in result["msg"] and "relabel" in result["msg"]


def test_no_colon_series_while_sglang_is_scraped_fails(run, prom):
    prom["colon"] = 0
    result, failed = run(args(prom))
    assert failed and "no sglang:* series" in result["msg"]
    result, failed = run(args(prom, expected_targets=EXPECTED[1:]))
    assert not failed, result


def test_not_ready_and_check_mode(run, prom):
    prom["ready"] = 503
    result, failed = run(args(prom))
    assert failed and "is not ready" in result["msg"]
    result, failed = run(args(prom), check_mode=True)
    assert not failed and result["ok"] is False


def test_basic_auth(run, prom):
    prom["auth"] = "Basic cHJvbTpzM2NyZXQ="  # prom:s3cret
    result, failed = run(args(prom))
    assert failed
    result, failed = run(args(prom, username="prom", password="s3cret"))
    assert not failed, result


@pytest.mark.parametrize("bad, message", [
    ({"timeout": 0}, "timeout and interval must be greater than 0"),
    ({"expected_targets": [{"job": "node"}]}, "every expected target needs job and address"),
    ({"username": "x"}, "parameters are required together"),
])
def test_bad_arguments(run, prom, bad, message):
    result, failed = run(args(prom, **bad))
    assert failed and message in result["msg"]
