# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Instances over several hosts (module_utils/serving/nodes.py and their part of the topology): ranks, the derived
addresses, and one test per preflight mistake, each asserting the host, the variable and the fix it names."""

import copy

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.serving import nodes as N
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.cmdline import argv, server_args
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.rules import host_warnings, judge
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.topology import build_topology
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.units import server_unit
from serving_support import MODEL, ROUTER_KEYS, SERVER_SETTINGS, TOPOLOGY_DEFAULTS  # noqa: E402

PREFILL = {"name": "prefill-0", "nodes": ["a", "b"], "gpus": list(range(8)), "port": 30000, "bootstrap_port": 8998,
           "dist_init_port": 30335}
DECODE = {"name": "decode-0", "nodes": ["c", "d"], "gpus": list(range(8)), "port": 30002, "dist_init_port": 30435,
          "attn_dp_size": 16}
GROUPS = {"sglang_prefill": ["a", "b"], "sglang_decode": ["c", "d"], "sglang_router": ["r"]}


def topology(prefill=None, decode=None, hosts=None, groups=None):
    """Four GPU hosts a, b (prefill-0) and c, d (decode-0) on 10.0.1.11-14, the instances declared once for their
    group (as group_vars gives every host of the group the same list), and a router host r."""
    prefill = PREFILL if prefill is None else prefill
    decode = DECODE if decode is None else decode
    host_vars = {}
    for index, host in enumerate("abcd"):
        address = "10.0.1.%d" % (11 + index)
        host_vars[host] = {"ansible_host": address, "sglang_server_host": address}
        if host in "ab":
            host_vars[host]["sglang_prefill_instances"] = copy.deepcopy(prefill if isinstance(prefill, list) else [prefill])
        else:
            host_vars[host]["sglang_decode_instances"] = copy.deepcopy(decode if isinstance(decode, list) else [decode])
    host_vars["r"] = dict(ROUTER_KEYS, ansible_host="10.0.1.5")
    for host, values in (hosts or {}).items():
        host_vars.setdefault(host, {}).update(values)
    return build_topology(host_vars, groups or GROUPS, TOPOLOGY_DEFAULTS)


def found(topo, host, variable):
    """The problems of ``host`` about ``variable``."""
    return [p for p in topo["problems"] if p["host"] == host and p["variable"] == variable]


def one(topo, host, variable, *words):
    """The one problem of ``host`` about ``variable``, whose message has every word and which has a fix."""
    matches = found(topo, host, variable)
    assert len(matches) == 1, topo["problems"]
    for word in words:
        assert word in matches[0]["message"], matches[0]
    assert matches[0]["fix"], matches[0]
    return matches[0]


# --- the layout itself -------------------------------------------------------------------------------

def test_every_node_renders_its_rank_and_the_router_gets_rank_0_only():
    topo = topology()
    assert topo["problems"] == [] and topo["warnings"] == []
    ranks = dict((h, topo["hosts"][h]["prefill"][0]) for h in "ab")
    assert [ranks[h]["node_rank"] for h in "ab"] == [0, 1]
    assert all(r["nnodes"] == 2 and r["tp_size"] == 16 and r["dist_timeout"] == 1800 for r in ranks.values())
    assert all(r["dist_init_host"] == "10.0.1.11" and r["bootstrap_host"] == "10.0.1.11" for r in ranks.values())
    assert [ranks[h]["advertise_ip"] for h in "ab"] == ["10.0.1.11", "10.0.1.12"]
    assert [w["url"] for w in topo["workers"]["prefill"]] == ["http://10.0.1.11:30000"]
    assert [w["url"] for w in topo["workers"]["decode"]] == ["http://10.0.1.13:30002"]
    assert topo["hosts"]["d"]["decode"][0]["bootstrap_host"] is None


def test_a_host_renders_only_the_instances_that_name_it():
    second = dict(PREFILL, name="prefill-1", nodes=["b", "a"], gpus=[], port=30010, bootstrap_port=8999,
                  dist_init_port=30345)
    topo = topology(prefill=[dict(PREFILL, gpus=[0, 1, 2, 3]), dict(second, gpus=[4, 5, 6, 7])],
                    groups=dict(GROUPS, sglang_prefill=["a", "b"]))
    assert topo["problems"] == []
    assert [(i["name"], i["node_rank"]) for i in topo["hosts"]["b"]["prefill"]] == [("prefill-0", 1), ("prefill-1", 0)]
    assert sorted(w["url"] for w in topo["workers"]["prefill"]) == ["http://10.0.1.11:30000", "http://10.0.1.12:30010"]


def test_an_instance_without_nodes_stays_single_host():
    topo = topology(prefill={"name": "p", "gpus": [0], "port": 30000})
    assert topo["problems"] == []
    assert [i["nodes"] for h in "ab" for i in topo["hosts"][h]["prefill"]] == [None, None]
    assert len(topo["workers"]["prefill"]) == 2


def test_an_instance_of_one_node_is_a_single_host_instance_of_that_node():
    """group_vars can declare every instance of a group: nodes of one host pins a single-host instance there."""
    pinned = {"name": "prefill-9", "nodes": ["b"], "gpus": [0], "port": 30020, "bootstrap_port": 8997,
              "dist_init_port": 30355}
    topo = topology(prefill=[dict(PREFILL, gpus=[4, 5, 6, 7]), pinned], hosts={"b": {"sglang_server_host": "10.0.1.12"}})
    assert topo["problems"] == []
    assert [i["name"] for i in topo["hosts"]["a"]["prefill"]] == ["prefill-0"]
    mine = topo["hosts"]["b"]["prefill"][1]
    assert (mine["name"], mine["nodes"], mine["nnodes"], mine["node_rank"]) == ("prefill-9", None, 1, 0)
    assert mine["dist_init_host"] == "127.0.0.1" and "--nnodes" not in argv(server_args(mine, MODEL))
    assert sorted(w["url"] for w in topo["workers"]["prefill"]) == ["http://10.0.1.11:30000", "http://10.0.1.12:30020"]


@pytest.mark.parametrize("nodes", [["gpu-z"], ["gpu-y", "gpu-z"]])
def test_an_instance_whose_nodes_name_no_host_of_the_group_is_refused(nodes):
    """Every host would skip it (none is named), so it would run nowhere without a word."""
    lost = {"name": "prefill-9", "nodes": nodes, "gpus": [0], "port": 30020, "bootstrap_port": 8997,
            "dist_init_port": 30355}
    topo = topology(prefill=[dict(PREFILL, gpus=[4, 5, 6, 7]), lost])
    problem = one(topo, "a", "sglang_prefill_instances[prefill-9].nodes", ", ".join(nodes),
                  "none of them a host of group sglang_prefill", "no host would run prefill-9")
    assert "a, b" in problem["fix"]
    assert len([p for p in topo["problems"] if "prefill-9" in p["variable"]]) == 1  # once, not once per host


def test_the_command_line_of_each_rank():
    topo = topology()
    rank1 = topo["hosts"]["d"]["decode"][0]
    words = argv(server_args(rank1, MODEL))
    text = " ".join(words)
    assert "--host 10.0.1.14 --port 30002 --tp-size 16 --attn-dp-size 16 --disaggregation-mode decode" in text
    assert "--dist-init-addr 10.0.1.13:30435 --nnodes 2 --node-rank 1 --dist-timeout 1800" in text


def test_numa_binding_by_sglang_counts_the_gpus_of_one_node():
    rank = dict(topology()["hosts"]["a"]["prefill"][0], numa_node=0)
    lines = server_args(rank, MODEL, numa_binding="sglang")
    assert [line for line in lines if line[0] == "--numa-node"] == [["--numa-node"] + [0] * 8]


def test_units_of_rank_0_and_of_a_rank_above():
    topo = topology()
    rank0 = server_unit(topo["hosts"]["a"]["prefill"][0], MODEL, SERVER_SETTINGS)
    rank1 = server_unit(topo["hosts"]["b"]["prefill"][0], MODEL, SERVER_SETTINGS)
    assert "TimeoutStopSec=180\n" in rank0["unit_text"]
    # Rank 0's stop, its 15 s shutdown broadcast grace, and as much again.
    assert "TimeoutStopSec=%d\n" % (180 + 2 * N.SHUTDOWN_BROADCAST_GRACE) in rank1["unit_text"]
    assert "Restart=on-failure\n" in rank1["unit_text"] and "KillMode=control-group\n" in rank1["unit_text"]
    assert "node rank 1 of 2" in rank1["unit_text"]
    assert 'SGLANG_HOST_IP="10.0.1.12"' in rank1["env_text"] and 'SGLANG_HOST_IP="10.0.1.11"' in rank0["env_text"]
    assert rank0["unit"] == rank1["unit"] == "sglang-prefill-0.service"


def test_the_instance_env_can_set_sglang_host_ip_itself():
    rank = dict(topology()["hosts"]["b"]["prefill"][0], env={"SGLANG_HOST_IP": "10.9.9.9"})
    assert 'SGLANG_HOST_IP="10.9.9.9"' in server_unit(rank, MODEL, SERVER_SETTINGS)["env_text"]


def test_rank_ports_rank_0_holds_dist_init_bootstrap_and_attention_dp():
    topo = topology(decode=dict(DECODE, port=30440))
    one(topo, "c", "sglang_decode_instances[decode-0].dist_init_port (+5, attention DP)", "port 30440 is used by both")
    assert "dist_init_port+1..+13" in found(topo, "c", "sglang_decode_instances[decode-0].dist_init_port (+5, attention DP)")[0]["fix"]
    # A rank > 0 does not listen there: no clash on d.
    assert [p for p in topo["problems"] if p["host"] == "d"] == []


# --- one test per preflight mistake --------------------------------------------------------------------

def test_tp_times_pp_not_divisible_by_the_nodes():
    problem = one(topology(prefill=dict(PREFILL, tp_size=15)), "a", "sglang_prefill_instances[prefill-0].tp_size",
                  "15 x 1 = 15 is not divisible by the 2 nodes")
    assert "drop tp_size" in problem["fix"]


def test_gpus_per_node_that_do_not_match_tp():
    problem = one(topology(prefill=dict(PREFILL, tp_size=8)), "a", "sglang_prefill_instances[prefill-0].gpus",
                  "lists 8 GPU(s) per node but tp_size x pp_size / nodes = 8 x 1 / 2 = 4")
    assert "give each node 4 GPUs" in problem["fix"]


def test_pipeline_parallel_counts_in_the_gpus_per_node():
    topo = topology(prefill=dict(PREFILL, tp_size=8, pp_size=2))
    assert topo["problems"] == []
    assert "--pp-size 2" in " ".join(argv(server_args(topo["hosts"]["a"]["prefill"][0], MODEL)))


def test_gpus_per_node_that_differ_between_nodes():
    topo = topology(hosts={"b": {"sglang_prefill_instances": [dict(PREFILL, gpus=[0, 1, 2, 3])]}})
    problem = one(topo, "b", "sglang_prefill_instances[prefill-0].gpus", "GPUs per node differ", "a gives [0, 1, 2, 3, 4, 5, 6, 7]",
                  "b gives [0, 1, 2, 3]")
    assert "same on every node" in problem["fix"]


def test_other_fields_that_differ_between_nodes():
    topo = topology(hosts={"b": {"sglang_prefill_instances": [dict(PREFILL, port=30010)]}})
    problem = one(topo, "b", "sglang_prefill_instances[prefill-0]", "declared differently on a and b (port)")
    assert "once in group_vars" in problem["fix"]


def test_a_node_in_two_instances_on_the_same_gpus():
    second = dict(PREFILL, name="prefill-1", port=30010, bootstrap_port=8999, dist_init_port=30345)
    topo = topology(prefill=[PREFILL, second])
    for host in "ab":
        one(topo, host, "sglang_prefill_instances[prefill-1].gpus", "GPUs 0, 1, 2, 3, 4, 5, 6, 7 are given to both "
            "sglang_prefill_instances[prefill-0] and sglang_prefill_instances[prefill-1]")


def test_a_node_listed_twice():
    problem = one(topology(prefill=dict(PREFILL, nodes=["a", "b", "a"])), "a", "sglang_prefill_instances[prefill-0].nodes",
                  "lists a twice (ranks 0 and 2)")
    assert "list each host once" in problem["fix"]


def test_rank_0_on_loopback():
    topo = topology(hosts={"c": {"sglang_server_host": "127.0.0.1"}})
    problem = one(topo, "c", "sglang_server_host", "rank 0 of decode-0 on c serves on 127.0.0.1, a loopback address",
                  "other nodes (d) cannot reach its dist-init 127.0.0.1:30435")
    assert "private address" in problem["fix"] and "never loopback" in problem["fix"]


def test_prefill_rank_0_on_loopback_hides_the_bootstrap():
    topo = topology(hosts={"a": {"sglang_server_host": "127.0.0.1"}})
    one(topo, "a", "sglang_server_host", "nor its bootstrap port")


def test_rank_0_bound_to_the_wildcard_meets_at_its_ansible_host():
    topo = topology(hosts={"a": {"sglang_server_host": "0.0.0.0"}})
    assert topo["problems"] == []
    assert topo["hosts"]["b"]["prefill"][0]["dist_init_host"] == "10.0.1.11"


def test_a_rank_that_advertises_no_ip_address():
    topo = topology(hosts={"b": {"sglang_server_host": "0.0.0.0", "ansible_host": "gpu-b.example"}})
    problem = one(topo, "b", "ansible_host", "rank 1 of prefill-0 the address 'gpu-b.example' to advertise")
    assert "sglang_server_host of b" in problem["fix"]


@pytest.mark.parametrize("address", ["10.0.0.1 --evil", "10.0.0.1\nX=1", "'$(id)'"])
def test_a_hostile_rank_0_address_is_refused(address):
    topo = topology(hosts={"a": {"sglang_server_host": "0.0.0.0", "ansible_host": address}})
    problem = one(topo, "a", "ansible_host", "neither an IP address nor a host name")
    assert repr(address) in problem["message"]


@pytest.mark.parametrize("nodes", [["a", "b\nX=1"], "a,b", [], ["a", None], ["a", " b"]])
def test_hostile_or_malformed_nodes(nodes):
    topo = topology(prefill=dict(PREFILL, nodes=nodes))
    for host in "ab":
        problem = one(topo, host, "sglang_prefill_instances[prefill-0].nodes")
        assert "rank 0 first" in problem["fix"]


def test_a_node_that_is_not_in_the_server_group():
    topo = topology(prefill=dict(PREFILL, nodes=["a", "c"]))
    problem = one(topo, "a", "sglang_prefill_instances[prefill-0].nodes", "names c, which is not a host of group sglang_prefill")
    assert "add c to group sglang_prefill" in problem["fix"]
    # b is in the group but named by no instance: it would run nothing.
    one(topo, "b", "sglang_prefill_instances", "every instance of its sglang_prefill_instances spans other nodes")


def test_a_node_whose_host_vars_replace_the_instance_list():
    topo = topology(hosts={"b": {"sglang_prefill_instances": [{"name": "other", "port": 30010, "bootstrap_port": 8999}]}})
    problem = one(topo, "b", "sglang_prefill_instances", "b is rank 1 of prefill-0", "has no prefill-0")
    assert "declare prefill-0 once in group_vars" in problem["fix"]


def test_dist_init_port_is_required():
    problem = one(topology(prefill=dict(PREFILL, dist_init_port=None)), "a",
                  "sglang_prefill_instances[prefill-0].dist_init_port", "is required on an instance over several nodes")
    assert "30335" in problem["fix"]


def test_attention_dp_must_divide_tp():
    problem = one(topology(decode=dict(DECODE, attn_dp_size=3)), "c", "sglang_decode_instances[decode-0].attn_dp_size",
                  "is 3, which does not divide tp_size 16")
    assert "divisor of 16" in problem["fix"]


def test_attention_dp_ports_past_65535():
    topo = topology(decode=dict(DECODE, dist_init_port=65530))
    for host in "cd":
        problem = one(topo, host, "sglang_decode_instances[decode-0].dist_init_port", "past 65535")
        assert "at most 65522" in problem["fix"]


@pytest.mark.parametrize("value", [0, "2", True, 1.5])
def test_sizes_must_be_whole_numbers(value):
    topo = topology(decode=dict(DECODE, ep_size=value))
    problem = one(topo, "c", "sglang_decode_instances[decode-0].ep_size", "must be a whole number of at least 1")
    assert "without quotes" in problem["fix"]


def test_dp_size_across_nodes():
    problem = one(topology(decode=dict(DECODE, attn_dp_size=None, dp_size=2)), "c", "sglang_decode_instances[decode-0].dp_size",
                  "--dp-size 2 on an instance over 2 nodes", "SGLang refuses")
    assert "attn_dp_size: 2" in problem["fix"]


def test_dp_size_in_extra_args_across_nodes():
    topo = topology(decode=dict(DECODE, attn_dp_size=None, extra_args=["--dp-size=4"]))
    one(topo, "c", "sglang_decode_instances[decode-0].extra_args", "--dp-size 4 on an instance over 2 nodes")


def test_dp_size_with_dp_attention_is_a_warning_naming_attn_dp_size():
    topo = topology(decode=dict(DECODE, attn_dp_size=None, extra_args=["--dp-size", "4", "--enable-dp-attention"]))
    assert topo["problems"] == []
    [warning] = topo["warnings"]
    assert (warning["host"], warning["variable"]) == ("c", "sglang_decode_instances[decode-0].extra_args")
    assert "deprecated" in warning["message"] and "--attn-dp-size 4" in warning["fix"]
    assert host_warnings("c", topo) == [warning] and host_warnings("d", topo) == []


def test_dp_size_in_the_shared_extra_args_counts_for_every_rank_0():
    topo = topology()
    problems = judge("c", topo, dict(MODEL, extra_args=["--dp-size", "2"]), {"numa_binding": "none"}, {})
    assert [(p["host"], p["variable"]) for p in problems] == [("c", "sglang_model_extra_args")]
    warned = host_warnings("c", topo, dict(MODEL, extra_args=["--dp-size", "2", "--enable-dp-attention"]))
    assert [w["variable"] for w in warned] == ["sglang_model_extra_args"]


def test_the_dist_init_address_is_not_judged_as_a_local_bind_on_other_ranks():
    topo = topology()
    observed = {"addresses": {"10.0.1.12": (True, "")}}
    assert judge("b", topo, MODEL, {"numa_binding": "none"}, observed) == []


def test_helpers():
    assert N.rank_stop_timeout(180) == 210 and N.rank_stop_timeout("180") == 210 and N.rank_stop_timeout("x") == "x"
    assert N.is_host_word("gpu-a.example") and N.is_host_word("fd00::1") and not N.is_host_word("a b")
    assert N.dp_words(["--dp", "3", "--enable-dp-attention"]) == (3, True)
    assert N.declared_elsewhere([dict(PREFILL), {"name": "x"}, "junk"], "z") == 1


def test_the_interface_of_a_node_goes_to_gloo_and_nccl():
    topo = topology(hosts={"b": {"sglang_server_net_ifname": "ens1f0"}})
    assert topo["problems"] == []
    env = server_unit(topo["hosts"]["b"]["prefill"][0], MODEL, SERVER_SETTINGS)["env_text"]
    assert 'GLOO_SOCKET_IFNAME="ens1f0"' in env and 'NCCL_SOCKET_IFNAME="ens1f0"' in env
    assert "GLOO_SOCKET_IFNAME" not in server_unit(topo["hosts"]["a"]["prefill"][0], MODEL, SERVER_SETTINGS)["env_text"]


@pytest.mark.parametrize("ifname", ["^lo,docker0", "eth0,eth1", "eth0\nX=1", 5, "a-name-far-too-long"])
def test_an_interface_that_gloo_cannot_take(ifname):
    topo = topology(hosts={"d": {"sglang_server_net_ifname": ifname}})
    problem = one(topo, "d", "sglang_server_net_ifname", "not one network interface name")
    assert "ip -brief address" in problem["fix"]


def test_dist_init_host_is_rank_0s_address_not_a_field():
    topo = topology(prefill=dict(PREFILL, dist_init_host="10.9.9.9"))
    for host in "ab":
        problem = one(topo, host, "sglang_prefill_instances[prefill-0].dist_init_host", "is set on an instance over several nodes")
        assert "sglang_server_host of a" in problem["fix"]
