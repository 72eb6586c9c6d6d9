# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""monitoring_preflight: every problem at once, changing nothing (its judgement: module_utils/monitoring/test_checks.py)."""

import functools

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.host import observe as host_observe
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.topology import build_topology
from ansible_collections.pdserve.sglang.plugins.modules import monitoring_preflight
from serving_support import TOPOLOGY_DEFAULTS  # noqa: E402  pylint: disable=wrong-import-position

GROUPS = {"sglang_prefill": ["gpu-p"], "sglang_decode": ["gpu-d"], "sglang_router": ["rt"]}
HOST_VARS = {
    "gpu-p": {"ansible_host": "10.0.0.11", "sglang_server_host": "10.0.0.11",
              "sglang_prefill_instances": [{"name": "prefill-0", "port": 30000}]},
    # decode left on loopback although Prometheus runs on rt
    "gpu-d": {"ansible_host": "10.0.0.21", "sglang_decode_instances": [{"name": "decode-0", "port": 30002}]},
    "rt": {"ansible_host": "10.0.0.5"},
}
SETTINGS = {"monitoring_hosts": ["rt"], "gpu_hosts": ["gpu-p", "gpu-d"], "node_exporter": {"port": 30000}}


@pytest.fixture
def run(module_runner, monkeypatch):
    monkeypatch.setattr(host_observe, "listeners", lambda: [])
    return functools.partial(module_runner, monitoring_preflight.main)


def test_every_problem_of_the_monitoring_host_at_once(run):
    topo = build_topology(HOST_VARS, GROUPS, defaults=TOPOLOGY_DEFAULTS)
    result, failed = run({"host": "rt", "topology": topo, "settings": SETTINGS,
                          "options": {"grafana_source": "apt_repo"}})
    assert failed and result["changed"] is False
    pairs = [(p["host"], p["variable"]) for p in result["problems"]]
    assert ("gpu-d", "sglang_decode_instances[decode-0].host") in pairs
    assert ("rt", "monitoring_grafana_admin_password") in pairs
    assert result["msg"].startswith("monitoring preflight found %d problem(s)" % len(pairs))
    assert "Prometheus on rt cannot scrape http://127.0.0.1:30002/metrics" in result["msg"]


def test_exporter_host_sees_only_its_own_ports(run):
    topo = build_topology(HOST_VARS, GROUPS, defaults=TOPOLOGY_DEFAULTS)
    result, failed = run({"host": "gpu-p", "topology": topo, "settings": SETTINGS})
    assert failed
    assert [(p["host"], p["variable"]) for p in result["problems"]] == [("gpu-p", "monitoring_node_exporter_port")]
    assert {"port": 30000, "variable": "monitoring_node_exporter_port"} in result["ports"]


def test_clean_layout_passes_in_check_mode(run):
    host_vars = dict(HOST_VARS, **{"gpu-d": dict(HOST_VARS["gpu-d"], sglang_server_host="10.0.0.21")})
    topo = build_topology(host_vars, GROUPS, defaults=TOPOLOGY_DEFAULTS)
    result, failed = run({"host": "rt", "topology": topo, "settings": dict(SETTINGS, node_exporter={})},
                         check_mode=True)
    assert not failed and result["problems"] == []


def test_not_a_topology(run):
    result, failed = run({"host": "rt", "topology": {"hosts": {}}, "settings": SETTINGS})
    assert failed and "pass the result of the pdserve.sglang.serving_topology filter" in result["msg"]


def test_monitoring_facts_makes_the_same_judgement_in_its_read(module_runner, monkeypatch):
    """The deploy's read (monitoring_facts, option judge) fails on the problems the preflight finds, and passes the
    layout the preflight passes."""
    from ansible_collections.pdserve.sglang.plugins.modules import monitoring_facts
    monkeypatch.setattr(host_observe, "listeners", lambda: [])
    topo = build_topology(HOST_VARS, GROUPS, defaults=TOPOLOGY_DEFAULTS)
    judge = {"host": "rt", "topology": topo, "settings": SETTINGS, "options": {"grafana_source": "apt_repo"}}
    preflight = module_runner(monitoring_preflight.main, dict(judge))[0]
    read, failed = module_runner(monitoring_facts.main, {"judge": judge})
    assert failed and read["problems"] == preflight["problems"] and read["msg"] == preflight["msg"]
    assert "packages" not in read
    clean = dict(HOST_VARS, **{"gpu-d": dict(HOST_VARS["gpu-d"], sglang_server_host="10.0.0.21")})
    good = {"host": "rt", "topology": build_topology(clean, GROUPS, defaults=TOPOLOGY_DEFAULTS),
            "settings": dict(SETTINGS, node_exporter={})}
    read, failed = module_runner(monitoring_facts.main, {"judge": good}, True)
    assert not failed and read["missing_packages"] == []
    read, failed = module_runner(monitoring_facts.main, {"judge": dict(good, topology={"hosts": {}})})
    assert failed and "serving_topology" in read["msg"]
