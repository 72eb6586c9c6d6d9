# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""One host's nftables ruleset from the serving topology (module_utils/host/firewall.py): every row of the README's
ports table, IPv6 peers, a host in several groups, a loopback-only layout, peers known by name, a sorted text."""

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.host import firewall as F
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.topology import build_topology
from serving_support import TOPOLOGY_DEFAULTS

EXPORTERS = {"node_exporter_port": 9100, "gpu_exporter_port": 9400}


def multinode(router_vars=None, prefill_vars=None, decode_vars=None, monitoring=("router-1",)):
    """inventories/multinode's shape: a router host (Prometheus too), a prefill host, a decode host."""
    host_vars = {
        "router-1": dict({"ansible_host": "10.0.0.5"}, **(router_vars or {})),
        "gpu-prefill-1": dict({"ansible_host": "10.0.0.11", "sglang_server_host": "10.0.0.11", "sglang_prefill_instances": [
            {"name": "prefill-0", "port": 30000, "bootstrap_port": 8998, "dist_init_port": 30335},
            {"name": "prefill-1", "port": 30010, "bootstrap_port": 8999, "dist_init_port": 30345}]}, **(prefill_vars or {})),
        "gpu-decode-1": dict({"ansible_host": "10.0.0.21", "sglang_server_host": "10.0.0.21", "sglang_decode_instances": [
            {"name": "decode-0", "port": 30002, "dist_init_port": 30435}]}, **(decode_vars or {})),
    }
    groups = {"sglang_router": ["router-1"], "sglang_prefill": ["gpu-prefill-1"], "sglang_decode": ["gpu-decode-1"]}
    topology = build_topology(host_vars, groups, TOPOLOGY_DEFAULTS)
    settings = dict(EXPORTERS, prometheus_hosts=list(monitoring), gpu_hosts=["gpu-prefill-1", "gpu-decode-1"])
    return topology, host_vars, settings


def plan(host, topology, host_vars, settings):
    return F.firewall_plan(topology, host, host_vars, settings)


def by_port(result):
    return dict((rule["port"], rule) for rule in result["rules"])


def test_prefill_host_every_row():
    result = plan("gpu-prefill-1", *multinode())
    assert result["problems"] == []
    rules = by_port(result)
    # Server HTTP: the router host and Prometheus (here the same host).
    assert rules[30000]["v4"] == ["10.0.0.5"] and rules[30010]["v4"] == ["10.0.0.5"]
    # Bootstrap: the decode hosts only.
    assert rules[8998]["v4"] == ["10.0.0.21"] and rules[8999]["v4"] == ["10.0.0.21"]
    # dist-init: the instance's nodes, one host: loopback only.
    assert rules[30335]["v4"] == [] and rules[30335]["v6"] == [] and not rules[30335]["open"]
    # Exporters: Prometheus hosts only.
    assert rules[9100]["v4"] == ["10.0.0.5"] and rules[9400]["v4"] == ["10.0.0.5"]
    assert sorted(rules) == [8998, 8999, 9100, 9400, 30000, 30010, 30335, 30345]
    text = result["content"]
    assert "tcp dport 8998 ip saddr { 10.0.0.21 } accept\n\t\ttcp dport 8998 reject with tcp reset" in text
    assert "tcp dport 30335 reject with tcp reset" in text and "tcp dport 30335 ip" not in text


def test_router_host_rows():
    result = plan("router-1", *multinode())
    rules = by_port(result)
    # The router port is open to everyone; the metrics port is on loopback (no rule); the node exporter there
    # listens on loopback too (its only Prometheus runs on the same host).
    assert sorted(rules) == [30001]
    assert rules[30001]["open"]
    assert "\t\ttcp dport 30001 accept\n" in result["content"]
    assert "reject" not in result["content"]


def test_router_metrics_off_loopback_only_for_prometheus_hosts():
    topology, host_vars, settings = multinode(router_vars={"sglang_router_prometheus_host": "0.0.0.0"},
                                              monitoring=("mon-1",))
    host_vars["mon-1"] = {"ansible_host": "10.0.0.9"}
    rules = by_port(plan("router-1", topology, host_vars, settings))
    assert rules[29000]["v4"] == ["10.0.0.9"] and not rules[29000]["open"]
    # The node exporter listens on the host's address now (Prometheus is elsewhere): Prometheus only.
    assert rules[9100]["v4"] == ["10.0.0.9"]


def test_decode_host_rows_and_no_gpu_exporter_off_gpu_hosts():
    topology, host_vars, settings = multinode()
    settings["gpu_hosts"] = ["gpu-prefill-1"]
    rules = by_port(plan("gpu-decode-1", topology, host_vars, settings))
    assert sorted(rules) == [9100, 30002, 30435]
    assert rules[30002]["v4"] == ["10.0.0.5"]


def test_server_ports_allow_router_and_prometheus_hosts():
    topology, host_vars, settings = multinode(monitoring=("mon-1", "mon-2"))
    host_vars.update({"mon-1": {"ansible_host": "10.0.0.9"}, "mon-2": {"ansible_host": "10.0.0.8"}})
    rules = by_port(plan("gpu-prefill-1", topology, host_vars, settings))
    assert rules[30000]["v4"] == ["10.0.0.5", "10.0.0.8", "10.0.0.9"]
    assert rules[9100]["v4"] == ["10.0.0.8", "10.0.0.9"]


def test_ipv6_peers_get_ip6_rules():
    topology, host_vars, settings = multinode(router_vars={"ansible_host": "fd00::5"},
                                              decode_vars={"sglang_firewall_host_addresses": ["10.0.1.21", "[fd00::21]"]})
    result = plan("gpu-prefill-1", topology, host_vars, settings)
    rules = by_port(result)
    assert rules[30000]["v4"] == [] and rules[30000]["v6"] == ["fd00::5"]
    assert rules[8998]["v4"] == ["10.0.1.21"] and rules[8998]["v6"] == ["fd00::21"]
    assert "tcp dport 30000 ip6 saddr { fd00::5 } accept" in result["content"]
    assert "tcp dport 30000 ip saddr" not in result["content"]


def test_a_host_in_several_groups_lets_itself_in_through_loopback():
    # The router and Prometheus run on the decode host: its own traffic arrives on lo, the prefill host's peers are
    # the decode host's address.
    host_vars = {
        "p": {"ansible_host": "10.0.0.11", "sglang_server_host": "0.0.0.0", "sglang_prefill_instances": [
            {"name": "prefill", "port": 30000, "bootstrap_port": 8998}]},
        "d": {"ansible_host": "10.0.0.21", "sglang_server_host": "0.0.0.0", "sglang_decode_instances": [
            {"name": "decode", "port": 30002}]},
    }
    groups = {"sglang_router": ["d"], "sglang_prefill": ["p"], "sglang_decode": ["d"]}
    topology = build_topology(host_vars, groups, TOPOLOGY_DEFAULTS)
    settings = dict(EXPORTERS, prometheus_hosts=["d"], gpu_hosts=[])
    own = by_port(plan("d", topology, host_vars, settings))
    assert own[30001]["open"] and own[30002]["v4"] == [] and not own[30002]["open"]
    other = by_port(plan("p", topology, host_vars, settings))
    assert other[30000]["v4"] == ["10.0.0.21"] and other[8998]["v4"] == ["10.0.0.21"] and other[9100]["v4"] == ["10.0.0.21"]


def test_loopback_only_layout():
    """One host, servers on loopback, Prometheus there too: only loopback, the router row and the ports SGLang may
    bind on every interface whatever it is given (bootstrap, dist-init), closed to everyone else."""
    host_vars = {"one": {"ansible_host": "192.0.2.10", "sglang_prefill_instances": [
        {"name": "prefill", "port": 30000, "bootstrap_port": 8998, "dist_init_port": 30335}],
        "sglang_decode_instances": [{"name": "decode", "port": 30002}]}}
    groups = {"sglang_router": ["one"], "sglang_prefill": ["one"], "sglang_decode": ["one"]}
    topology = build_topology(host_vars, groups, TOPOLOGY_DEFAULTS)
    result = plan("one", topology, host_vars, dict(EXPORTERS, prometheus_hosts=["one"], gpu_hosts=["one"]))
    assert result["problems"] == []
    assert [(r["port"], r["open"], r["v4"], r["v6"]) for r in result["rules"]] == [
        (8998, False, [], []), (30001, True, [], []), (30335, False, [], [])]
    chain = [line.strip() for line in result["content"].split("chain input {", 1)[1].splitlines()
             if line.strip() and not line.strip().startswith("#")]
    assert chain == ["type filter hook input priority filter; policy accept;", "iif lo accept",
                     "ct state established,related accept", "tcp dport 8998 reject with tcp reset",
                     "tcp dport 30001 accept", "tcp dport 30335 reject with tcp reset", "}", "}"]


def test_the_file_is_a_table_of_its_own_and_never_drops():
    text = plan("gpu-prefill-1", *multinode())["content"]
    assert text.startswith("#!/usr/sbin/nft -f\n")
    # Replaced in one transaction: created (so the delete succeeds on a fresh host), deleted, defined.
    assert "\ntable inet pdserve\ndelete table inet pdserve\n\ntable inet pdserve {\n" in text
    assert "type filter hook input priority filter; policy accept;" in text
    body = text.split("table inet pdserve {", 1)[1]
    assert body.index("iif lo accept") < body.index("tcp dport")
    for word in ("drop", "flush", "policy drop", "dport 22 ", "ip filter", "table ip "):
        assert word not in body
    assert text.endswith("}\n}\n")


def test_deterministic_order():
    topology, host_vars, settings = multinode(
        decode_vars={"sglang_firewall_host_addresses": ["10.0.0.30", "10.0.0.4", "10.0.0.21"]})
    first = plan("gpu-prefill-1", topology, host_vars, settings)
    reordered = dict(reversed(list(host_vars.items())))
    settings["prometheus_hosts"] = list(reversed(settings["prometheus_hosts"]))
    second = plan("gpu-prefill-1", topology, reordered, settings)
    assert first["content"] == second["content"]
    ports = [r["port"] for r in first["rules"]]
    assert ports == sorted(ports)
    # Addresses sorted as addresses, not as text.
    assert by_port(first)[8998]["v4"] == ["10.0.0.4", "10.0.0.21", "10.0.0.30"]


def test_a_peer_known_by_name_is_a_problem_naming_its_variable():
    topology, host_vars, settings = multinode(router_vars={"ansible_host": "router.example.com"})
    result = plan("gpu-prefill-1", topology, host_vars, settings)
    assert [(p["host"], p["variable"]) for p in result["problems"]] == [("router-1", "ansible_host")]
    message = result["problems"][0]["message"]
    assert "'router.example.com'" in message and "resolves no names" in message and "30000" in message
    fix = result["problems"][0]["fix"]
    assert "ansible_host of router-1" in fix and "sglang_firewall_enabled: false" in fix


def test_a_peer_without_ansible_host_is_a_problem():
    topology, host_vars, settings = multinode()
    del host_vars["gpu-decode-1"]["ansible_host"]
    problems = plan("gpu-prefill-1", topology, host_vars, settings)["problems"]
    assert [(p["host"], p["variable"]) for p in problems] == [("gpu-decode-1", "ansible_host")]
    # The decode host itself needs no peer that is a name: its firewall is fine.
    assert plan("gpu-decode-1", topology, host_vars, settings)["problems"] == []


@pytest.mark.parametrize("value", [["decode.internal"], ["0.0.0.0"], [5], "not-an-ip", [{"a": 1}], ["10.0.0.21\n"], ["fe80::1%eth0"]])
def test_bad_host_addresses_are_problems(value):
    topology, host_vars, settings = multinode(decode_vars={"sglang_firewall_host_addresses": value})
    problems = plan("gpu-prefill-1", topology, host_vars, settings)["problems"]
    assert [(p["host"], p["variable"]) for p in problems] == [("gpu-decode-1", "sglang_firewall_host_addresses")]


def test_host_addresses_replace_ansible_host():
    topology, host_vars, settings = multinode(router_vars={"sglang_firewall_host_addresses": ["10.1.0.5"]})
    rules = by_port(plan("gpu-prefill-1", topology, host_vars, settings))
    assert rules[30000]["v4"] == ["10.1.0.5"]


def test_loopback_peer_addresses_are_covered_by_lo():
    topology, host_vars, settings = multinode(decode_vars={"ansible_host": "127.0.0.1"})
    result = plan("gpu-prefill-1", topology, host_vars, settings)
    assert result["problems"] == [] and by_port(result)[8998]["v4"] == []


def test_a_host_outside_the_topology_gets_loopback_only():
    result = plan("elsewhere", *multinode())
    assert result["rules"] == [] and "iif lo accept" in result["content"]


def test_an_instance_name_cannot_leave_its_comment_line():
    topology, host_vars, settings = multinode()
    topology["hosts"]["gpu-prefill-1"]["prefill"][0]["name"] = "x\ntcp dport 22 drop"
    text = plan("gpu-prefill-1", topology, host_vars, settings)["content"]
    assert "# 8998: x?tcp dport 22 drop bootstrap (decode hosts)" in text
    assert all(line.strip().startswith("#") for line in text.splitlines() if "dport 22 " in line)


# --- instances over several hosts ----------------------------------------------------------------------------

def spanning(decode_extra=None, host_vars_extra=None):
    """inventories/multinode_tp's shape: prefill-0 over p0, p1; decode-0 (attention DP) over d0, d1; router r."""
    prefill = {"name": "prefill-0", "nodes": ["p0", "p1"], "gpus": [0, 1], "port": 30000, "bootstrap_port": 8998,
               "dist_init_port": 30335}
    decode = dict({"name": "decode-0", "nodes": ["d0", "d1"], "gpus": [0, 1], "port": 30002, "dist_init_port": 30435,
                   "attn_dp_size": 4}, **(decode_extra or {}))
    addresses = {"p0": "10.0.1.11", "p1": "10.0.1.12", "d0": "10.0.1.21", "d1": "10.0.1.22"}
    host_vars = {"r": {"ansible_host": "10.0.1.5"}}
    for host, address in addresses.items():
        host_vars[host] = {"ansible_host": address, "sglang_server_host": address}
        host_vars[host]["sglang_prefill_instances" if host.startswith("p") else "sglang_decode_instances"] = \
            [dict(prefill if host.startswith("p") else decode)]
    for host, values in (host_vars_extra or {}).items():
        host_vars[host].update(values)
    groups = {"sglang_router": ["r"], "sglang_prefill": ["p0", "p1"], "sglang_decode": ["d0", "d1"]}
    topology = build_topology(host_vars, groups, TOPOLOGY_DEFAULTS)
    settings = dict(EXPORTERS, prometheus_hosts=["r"], gpu_hosts=list(addresses))
    return topology, host_vars, settings


def test_prefill_rank_0_lets_its_other_node_in_on_dist_init_and_bootstrap():
    rules = by_port(plan("p0", *spanning()))
    assert rules[30335]["v4"] == ["10.0.1.12"]
    # Each prefill rank registers with rank 0's bootstrap; every decode node reads it.
    assert rules[8998]["v4"] == ["10.0.1.12", "10.0.1.21", "10.0.1.22"]
    assert rules[30000]["v4"] == ["10.0.1.5"]


def test_a_rank_above_0_opens_its_health_port_only():
    rules = by_port(plan("p1", *spanning()))
    assert sorted(rules) == [9100, 9400, 30000]


def test_decode_rank_0_opens_the_attention_dp_ports_to_its_other_node_and_nothing_wider():
    rules = by_port(plan("d0", *spanning()))
    for port in [30435, 30436, 30437, 30438, 30439, 30440, 30441, 30448]:
        assert rules[port]["v4"] == ["10.0.1.22"] and not rules[port]["open"], port
    assert 30442 not in rules and 30447 not in rules
    assert sorted(rules) == [9100, 9400, 30002] + [30435 + o for o in (0, 1, 2, 3, 4, 5, 6, 13)]


def test_a_node_whose_traffic_leaves_from_another_address_than_the_firewall_allows():
    topology, host_vars, settings = spanning(host_vars_extra={"d1": {"ansible_host": "192.0.2.22",
                                                                     "sglang_server_host": "10.0.1.22"}})
    result = plan("d0", topology, host_vars, settings)
    [problem] = result["problems"]
    assert (problem["host"], problem["variable"]) == ("d1", "sglang_firewall_host_addresses")
    assert "connects from 10.0.1.22" in problem["message"] and "192.0.2.22 (ansible_host)" in problem["message"]
    assert "[10.0.1.22, 192.0.2.22]" in problem["fix"]
    host_vars["d1"]["sglang_firewall_host_addresses"] = ["10.0.1.22"]
    assert plan("d0", topology, host_vars, settings)["problems"] == []
