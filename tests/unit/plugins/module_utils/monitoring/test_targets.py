# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Scrape targets and layout problems from the serving topology (monitoring_targets)."""

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring import targets as mt
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.topology import build_topology
from serving_support import ONE_HOST_GROUPS, TOPOLOGY_DEFAULTS, one_host_vars  # noqa: E402  pylint: disable=wrong-import-position

ONE_HOST = one_host_vars()
GROUPS_MULTI = {"sglang_prefill": ["gpu-p"], "sglang_decode": ["gpu-d"], "sglang_router": ["rt"]}
MULTI = {
    "gpu-p": {"ansible_host": "10.0.0.11", "sglang_server_host": "10.0.0.11",
              "sglang_prefill_instances": [{"name": "prefill-0", "port": 30000},
                                           {"name": "prefill-1", "port": 30010, "bootstrap_port": 8999}]},
    "gpu-d": {"ansible_host": "10.0.0.21", "sglang_server_host": "10.0.0.21",
              "sglang_decode_instances": [{"name": "decode-0", "port": 30002}]},
    "rt": {"ansible_host": "10.0.0.5"},
}


def settings(**over):
    base = {"monitoring_hosts": ["box"], "gpu_hosts": ["box"]}
    base.update(over)
    return base


def addresses(found, job):
    return sorted(t["address"] for t in found if t["job"] == job)


def test_one_host_scrapes_everything_on_loopback():
    topo = build_topology(ONE_HOST, ONE_HOST_GROUPS, defaults=TOPOLOGY_DEFAULTS)
    found, problems = mt.targets(topo, "box", settings())
    assert problems == []
    assert addresses(found, "sglang-prefill") == ["127.0.0.1:30000"]
    assert addresses(found, "sglang-decode") == ["127.0.0.1:30002"]
    assert addresses(found, "sglang-router") == ["127.0.0.1:29000"]
    assert addresses(found, "node") == ["127.0.0.1:9100"]
    assert addresses(found, "gpu") == ["127.0.0.1:9400"]
    assert addresses(found, "prometheus") == ["127.0.0.1:9090"]
    decode = [t for t in found if t["job"] == "sglang-decode"][0]
    assert decode["labels"] == {"host": "box", "role": "decode", "sglang_instance": "decode"}
    assert mt.exporter_bind(topo, settings(), "box") == "127.0.0.1"
    assert mt.layout_problems(topo, settings()) == []


def test_multinode_scrapes_each_host_at_its_address():
    topo = build_topology(MULTI, GROUPS_MULTI, defaults=TOPOLOGY_DEFAULTS)
    conf = settings(monitoring_hosts=["rt"], gpu_hosts=["gpu-p", "gpu-d"])
    found, problems = mt.targets(topo, "rt", conf)
    assert problems == []
    assert addresses(found, "sglang-prefill") == ["10.0.0.11:30000", "10.0.0.11:30010"]
    assert addresses(found, "sglang-decode") == ["10.0.0.21:30002"]
    assert addresses(found, "sglang-router") == ["127.0.0.1:29000"]  # its metrics stay on loopback of rt
    assert addresses(found, "node") == ["10.0.0.11:9100", "10.0.0.21:9100", "127.0.0.1:9100"]
    assert addresses(found, "gpu") == ["10.0.0.11:9400", "10.0.0.21:9400"]
    assert mt.exporter_bind(topo, conf, "gpu-d") == "10.0.0.21"
    assert mt.exporter_bind(topo, conf, "rt") == "127.0.0.1"
    # a second decode host is an inventory change, and a new target
    more = dict(MULTI, **{"gpu-d2": {"ansible_host": "10.0.0.22", "sglang_server_host": "10.0.0.22",
                                     "sglang_decode_instances": [{"name": "decode-1", "port": 30002}]}})
    groups = dict(GROUPS_MULTI, sglang_decode=["gpu-d", "gpu-d2"])
    found, problems = mt.targets(build_topology(more, groups, defaults=TOPOLOGY_DEFAULTS), "rt", conf)
    assert problems == [] and addresses(found, "sglang-decode") == ["10.0.0.21:30002", "10.0.0.22:30002"]


def test_loopback_server_on_another_host_is_refused_with_the_fix():
    host_vars = dict(MULTI, **{"gpu-d": {"ansible_host": "10.0.0.21",
                                         "sglang_decode_instances": [{"name": "decode-0", "port": 30002}]}})
    topo = build_topology(host_vars, GROUPS_MULTI, defaults=TOPOLOGY_DEFAULTS)
    found, problems = mt.targets(topo, "rt", settings(monitoring_hosts=["rt"], gpu_hosts=[]))
    mine = [p for p in problems if p["host"] == "gpu-d"]
    assert len(mine) == 1, problems
    assert mine[0]["variable"] == "sglang_decode_instances[decode-0].host"
    assert "Prometheus on rt cannot scrape http://127.0.0.1:30002/metrics" in mine[0]["message"]
    assert "bind the instance to an address of gpu-d that rt can reach" in mine[0]["fix"]
    assert addresses(found, "sglang-decode") == []


def test_metrics_turned_off_is_refused():
    host_vars = {"box": dict(ONE_HOST["box"], sglang_server_enable_metrics=False)}
    problems = mt.layout_problems(build_topology(host_vars, ONE_HOST_GROUPS, defaults=TOPOLOGY_DEFAULTS), settings())
    assert [p["variable"] for p in problems] == ["sglang_server_enable_metrics"] * 2
    assert "serves no /metrics" in problems[0]["message"]
    assert "--enable-metrics" in problems[0]["fix"]


def test_router_metrics_on_loopback_of_another_host_is_refused():
    topo = build_topology(MULTI, GROUPS_MULTI, defaults=TOPOLOGY_DEFAULTS)
    problems = mt.layout_problems(topo, settings(monitoring_hosts=["gpu-d"], gpu_hosts=[]))
    router = [p for p in problems if p["variable"] == "sglang_router_prometheus_host"]
    assert len(router) == 1 and router[0]["host"] == "rt"
    assert "0.0.0.0" in router[0]["fix"]


def test_router_metrics_on_a_reachable_address():
    host_vars = dict(MULTI, rt={"ansible_host": "10.0.0.5", "sglang_router_prometheus_host": "0.0.0.0"})
    found, problems = mt.targets(build_topology(host_vars, GROUPS_MULTI, defaults=TOPOLOGY_DEFAULTS), "gpu-d",
                                 settings(monitoring_hosts=["gpu-d"], gpu_hosts=[]))
    assert problems == [] and addresses(found, "sglang-router") == ["10.0.0.5:29000"]


def test_exporter_bound_to_loopback_on_a_remote_host_is_refused():
    topo = build_topology(MULTI, GROUPS_MULTI, defaults=TOPOLOGY_DEFAULTS)
    conf = settings(monitoring_hosts=["rt"], gpu_hosts=["gpu-p"], exporter_hosts={"gpu-p": "127.0.0.1"})
    problems = mt.layout_problems(topo, conf)
    assert {(p["host"], p["variable"]) for p in problems} == {("gpu-p", "monitoring_exporter_host")}
    assert len(problems) == 2  # the node and the GPU exporter


@pytest.mark.parametrize("over, variable, clash", [
    ({"node_exporter": {"port": 30000}}, "monitoring_node_exporter_port", "sglang_prefill_instances[prefill].port"),
    ({"gpu_exporter": {"port": 8998}}, "monitoring_gpu_exporter_port", "sglang_prefill_instances[prefill].bootstrap_port"),
    ({"prometheus": {"port": 29000}}, "monitoring_prometheus_port", "sglang_router_prometheus_port"),
    ({"alertmanager": {"enabled": True, "port": 9100}}, "monitoring_alertmanager_port", "monitoring_node_exporter_port"),
    ({"grafana": {"enabled": True, "port": 30001}}, "monitoring_grafana_port", "sglang_router_port"),
])
def test_port_collisions_with_serving_ports(over, variable, clash):
    problems = mt.layout_problems(build_topology(ONE_HOST, ONE_HOST_GROUPS, defaults=TOPOLOGY_DEFAULTS), settings(**over))
    assert len(problems) == 1, problems
    assert problems[0]["variable"] == variable and problems[0]["host"] == "box"
    assert clash in problems[0]["message"]


def test_grafana_port_is_free_when_grafana_is_not_installed_here():
    assert mt.layout_problems(build_topology(ONE_HOST, ONE_HOST_GROUPS, defaults=TOPOLOGY_DEFAULTS),
                              settings(grafana={"enabled": False, "port": 30001})) == []


def test_scrape_configs_fix_sglang_names_and_carry_labels():
    topo = build_topology(ONE_HOST, ONE_HOST_GROUPS, defaults=TOPOLOGY_DEFAULTS)
    auth = {"basic_auth": {"username": "prom", "password": "x"}}
    conf = settings(node_exporter={"scrape_auth": auth})
    configs = mt.scrape_configs(mt.targets(topo, "box", conf)[0], conf)
    by_job = dict((c["job_name"], c) for c in configs)
    assert list(by_job) == ["sglang-prefill", "sglang-decode", "sglang-router", "node", "gpu", "prometheus"]
    for job in ("sglang-prefill", "sglang-decode"):
        assert by_job[job]["metric_relabel_configs"] == [
            {"source_labels": ["__name__"], "regex": "sglang_(.+)", "target_label": "__name__",
             "replacement": "sglang:$1"}]
    for job in ("sglang-router", "node", "gpu", "prometheus"):
        assert "metric_relabel_configs" not in by_job[job]
    assert by_job["node"]["basic_auth"] == auth["basic_auth"]
    assert by_job["sglang-prefill"]["static_configs"] == [
        {"targets": ["127.0.0.1:30000"], "labels": {"host": "box", "role": "prefill", "sglang_instance": "prefill"}}]


@pytest.mark.parametrize("prom, want", [
    ({"scrape_interval": 15, "scrape_timeout": 10, "sglang_scrape_interval": 5},
     {"scrape_interval": "5s", "scrape_timeout": "5s"}),
    ({"scrape_interval": 15, "scrape_timeout": 3, "sglang_scrape_interval": 5},
     {"scrape_interval": "5s", "scrape_timeout": "3s"}),
    ({"scrape_interval": 2, "scrape_timeout": 2, "sglang_scrape_interval": 5}, {}),  # the global one is shorter
    ({"scrape_interval": 15, "scrape_timeout": 10, "sglang_scrape_interval": 0}, {}),
])
def test_sglang_jobs_get_their_own_shorter_interval(prom, want):
    topo = build_topology(ONE_HOST, ONE_HOST_GROUPS, defaults=TOPOLOGY_DEFAULTS)
    conf = settings(prometheus=prom)
    by_job = dict((c["job_name"], c) for c in mt.scrape_configs(mt.targets(topo, "box", conf)[0], conf))
    for job in ("sglang-prefill", "sglang-decode", "sglang-router"):
        assert dict((k, by_job[job][k]) for k in ("scrape_interval", "scrape_timeout") if k in by_job[job]) == want
    for job in ("node", "gpu", "prometheus"):
        assert "scrape_interval" not in by_job[job] and "scrape_timeout" not in by_job[job]


def test_prometheus_scrapes_itself_with_its_own_credentials():
    topo = build_topology(ONE_HOST, ONE_HOST_GROUPS, defaults=TOPOLOGY_DEFAULTS)
    auth = {"basic_auth": {"username": "pdserve", "password": "p"}}
    conf = settings(prometheus={"scrape_auth": auth})
    by_job = dict((c["job_name"], c) for c in mt.scrape_configs(mt.targets(topo, "box", conf)[0], conf))
    assert by_job["prometheus"]["basic_auth"] == auth["basic_auth"]
    assert "basic_auth" not in by_job["node"] and "basic_auth" not in by_job["sglang-router"]


def test_hand_made_topology_per_the_contract():
    """The function reads only the contract's keys (TOPOLOGY.md), not how the topology was built."""
    inst = {"name": "d0", "mode": "decode", "metrics": True, "inventory_host": "h2", "url": "http://[fd00::2]:30002",
            "local_url": "http://127.0.0.1:30002", "metrics_url": "http://[fd00::2]:30002/metrics",
            "reach_host": "fd00::2", "port": 30002, "host": "fd00::2"}
    topo = {"hosts": {"h2": {"address": "fd00::2", "groups": ["sglang_decode"], "prefill": [], "decode": [inst],
                             "router": None}},
            "workers": {"prefill": [], "decode": [inst]}, "routers": [], "problems": []}
    found, problems = mt.targets(topo, "mon", {"monitoring_hosts": ["mon"], "addresses": {"mon": "fd00::9"}})
    assert problems == []
    assert addresses(found, "sglang-decode") == ["[fd00::2]:30002"]
    assert addresses(found, "node") == ["127.0.0.1:9100", "[fd00::2]:9100"]


def test_inventory_settings_read_the_driver_layers_expected_gpu_count():
    host_vars = {"g1": {"ansible_host": "10.0.0.1", "pdserve_expected_gpu_count": 8},
                 "g2": {"pdserve_expected_gpu_count": 8, "nvidia_driver_expected_gpu_count": 4},
                 "g3": {"monitoring_exporter_host": "192.168.1.3"}}
    settings = mt.inventory_settings(host_vars, {"monitoring": ["g1"], "gpu_hosts": ["g1", "g2", "g3"]},
                                     {"monitoring_group": "monitoring", "gpu_group": "gpu_hosts"})
    assert settings["expected_gpus"] == {"g1": 8, "g2": 4, "g3": None}
    assert settings["addresses"]["g1"] == "10.0.0.1" and settings["addresses"]["g3"] == "g3"
    assert settings["exporter_hosts"] == {"g3": "192.168.1.3"}
    topo = build_topology({}, {}, defaults=TOPOLOGY_DEFAULTS)
    assert mt.expected_gpu_counts(topo, settings) == {"g1": 8, "g2": 4, "g3": None}


@pytest.mark.parametrize("bind,port,listen,local", [
    ("127.0.0.1", 9090, "127.0.0.1:9090", "http://127.0.0.1:9090"),
    ("0.0.0.0", 9090, "0.0.0.0:9090", "http://127.0.0.1:9090"),
    ("", 9090, ":9090", "http://127.0.0.1:9090"),
    ("::", 9090, "[::]:9090", "http://[::1]:9090"),
    ("fd00::5", 9100, "[fd00::5]:9100", "http://[fd00::5]:9100"),
    ("10.0.0.5", 9100, "10.0.0.5:9100", "http://10.0.0.5:9100"),
])
def test_listen_address_and_local_url_bracket_ipv6_once(bind, port, listen, local):
    assert mt.listen_address(bind, port) == listen
    assert mt.local_url(bind, port) == local


def test_local_url_with_tls():
    assert mt.local_url("::1", 9090, tls=True) == "https://[::1]:9090"


def test_dashboard_files_are_every_shipped_dashboard_under_the_directory():
    out = mt.dashboard_files("/var/lib/grafana/dashboards/pdserve/", lambda name: "{%s}" % name)
    assert [f["path"] for f in out] == ["/var/lib/grafana/dashboards/pdserve/%s.json" % n for n in mt.DASHBOARDS]
    assert out[0]["content"] == "{pdserve-sglang-pd}"


def test_an_instance_over_several_hosts_is_one_instance_with_a_target_per_node():
    """decode-1 over gpu-d and gpu-d2: both nodes are scraped (each at its own address), labelled as the one instance
    with their node rank; a single-host instance carries no node labels."""
    spanning = dict(MULTI, **{"gpu-d2": {"ansible_host": "10.0.0.22", "sglang_server_host": "10.0.0.22"}})
    spanning["gpu-d"] = dict(MULTI["gpu-d"], sglang_decode_instances=[
        {"name": "decode-1", "port": 30002, "gpus": [0, 1], "nodes": ["gpu-d", "gpu-d2"], "dist_init_port": 30335}])
    spanning["gpu-d2"]["sglang_decode_instances"] = spanning["gpu-d"]["sglang_decode_instances"]
    groups = dict(GROUPS_MULTI, sglang_decode=["gpu-d", "gpu-d2"])
    topo = build_topology(spanning, groups, defaults=TOPOLOGY_DEFAULTS)
    found, problems = mt.targets(topo, "rt", settings(monitoring_hosts=["rt"], gpu_hosts=["gpu-p", "gpu-d", "gpu-d2"]))
    assert problems == []
    decode = sorted((t["address"], t["labels"]["host"], t["labels"]["sglang_instance"], t["labels"]["node_rank"],
                     t["labels"]["nnodes"]) for t in found if t["job"] == "sglang-decode")
    assert decode == [("10.0.0.21:30002", "gpu-d", "decode-1", "0", "2"), ("10.0.0.22:30002", "gpu-d2", "decode-1", "1", "2")]
    assert all("node_rank" not in t["labels"] for t in found if t["job"] == "sglang-prefill")
