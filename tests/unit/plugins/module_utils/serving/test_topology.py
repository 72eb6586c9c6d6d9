# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The serving topology (module_utils/serving/topology.py): the shipped inventories, address resolution, the
static cross-host problems and the defaults, against the contract of docs TOPOLOGY."""

import json

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.serving import topology as T
from serving_support import DECODE, PREFILL, TOPOLOGY_DEFAULTS  # noqa: E402  pylint: disable=wrong-import-position
from serving_support import ROUTER_KEYS as ROUTER_KEYS_SET  # noqa: E402  pylint: disable=wrong-import-position

GROUPS = {"sglang_prefill": ["p"], "sglang_decode": ["d"], "sglang_router": ["r"]}

INSTANCE_KEYS = ("name", "mode", "unit", "host", "port", "bootstrap_port", "dist_init_host", "dist_init_port", "gpus",
                 "tp_size", "numa_node", "mem_fraction_static", "context_length", "advertise_host", "extra_args", "env", "metrics",
                 "in_service", "inventory_host", "url", "local_url", "metrics_url")
ROUTER_KEYS = ("inventory_host", "host", "port", "prometheus_host", "prometheus_port", "url", "local_url", "prometheus_url",
               "prometheus_local_url", "tls", "ca_path", "tls_names")


def build_topology(host_vars, groups, **kwargs):
    """T.build_topology with the router keys (serving_support.ROUTER_KEYS) on every host that sets none: a router
    without keys is judged by the tests of its own below."""
    host_vars = dict(host_vars)
    for hosts in (groups or {}).values():
        for host in hosts:
            host_vars[host] = dict(ROUTER_KEYS_SET, **(host_vars.get(host) or {}))
    return T.build_topology(host_vars, groups, **kwargs)


def three_hosts(p=None, d=None, r=None, prefill=None, decode=None):
    """A prefill host p and a decode host d serving on their private addresses, and a router host r."""
    host_vars = {
        "p": dict({"ansible_host": "10.0.0.11", "sglang_server_host": "10.0.0.11",
                   "sglang_prefill_instances": [dict(PREFILL, **(prefill or {}))]}, **(p or {})),
        "d": dict({"ansible_host": "10.0.0.21", "sglang_server_host": "10.0.0.21",
                   "sglang_decode_instances": [dict(DECODE, **(decode or {}))]}, **(d or {})),
        "r": dict({"ansible_host": "10.0.0.5"}, **(r or {})),
    }
    return build_topology(host_vars, GROUPS, defaults=TOPOLOGY_DEFAULTS)


def messages(topology):
    return [(p["host"], p["variable"], p["message"]) for p in topology["problems"]]


def urls(topology, mode):
    return [w["url"] for w in topology["workers"][mode]]


# --- the shipped inventories -------------------------------------------------------------------------

def test_blackwell(inventory):
    topology = build_topology(*inventory("blackwell"), defaults=TOPOLOGY_DEFAULTS)
    assert topology["problems"] == []
    assert list(topology["hosts"]) == ["blackwell"]
    entry = topology["hosts"]["blackwell"]
    assert entry["address"] == "192.0.2.10"
    assert entry["groups"] == ["sglang_prefill", "sglang_decode", "sglang_router"]
    assert [i["name"] for i in entry["prefill"]] == ["prefill"] and [i["name"] for i in entry["decode"]] == ["decode"]
    prefill, = topology["workers"]["prefill"]
    decode, = topology["workers"]["decode"]
    assert prefill is entry["prefill"][0] or prefill == entry["prefill"][0]
    assert (prefill["url"], prefill["local_url"], prefill["metrics_url"]) == (
        "http://127.0.0.1:30000", "http://127.0.0.1:30000", "http://127.0.0.1:30000/metrics")
    assert (decode["url"], decode["local_url"], decode["metrics_url"]) == (
        "http://127.0.0.1:30002", "http://127.0.0.1:30002", "http://127.0.0.1:30002/metrics")
    assert (prefill["gpus"], prefill["tp_size"], prefill["numa_node"], prefill["bootstrap_port"], prefill["dist_init_port"]) == (
        [0, 1, 2, 3], 4, 0, 8998, 30335)
    assert (decode["gpus"], decode["tp_size"], decode["numa_node"], decode["bootstrap_port"], decode["dist_init_port"]) == (
        [4, 5, 6, 7], 4, 1, None, 30435)
    assert prefill["inventory_host"] == decode["inventory_host"] == "blackwell"
    assert prefill["unit"] == "sglang-prefill.service" and decode["unit"] == "sglang-decode.service"
    assert prefill["metrics"] is True and decode["metrics"] is True
    assert topology["routers"] == [entry["router"]]
    assert entry["router"] == {
        "inventory_host": "blackwell",
        "host": "0.0.0.0",
        "port": 30001,
        "prometheus_host": "127.0.0.1",
        "prometheus_port": 29000,
        "url": "http://192.0.2.10:30001",
        "local_url": "http://127.0.0.1:30001",
        "prometheus_url": None,
        "prometheus_local_url": "http://127.0.0.1:29000",
        # Only whether each key is set: the keys themselves never enter the topology.
        "auth": {"api_key": True, "control_plane_api_key": True, "allow_unauthenticated": False},
        # No TLS by default: no CA for the clients, no names for a certificate.
        "tls": "none",
        "ca_path": None,
        "tls_names": [],
    }
    assert "from-lookup" not in json.dumps(topology)


def test_local(inventory):
    topology = build_topology(*inventory("local"), defaults=TOPOLOGY_DEFAULTS)
    assert topology["problems"] == []
    entry = topology["hosts"]["pdserve-local"]
    # No ansible_host: other hosts would reach it by its inventory name.
    assert entry["address"] == "pdserve-local"
    assert urls(topology, "prefill") == ["http://127.0.0.1:30000"]
    assert urls(topology, "decode") == ["http://127.0.0.1:30002"]
    prefill, = entry["prefill"]
    decode, = entry["decode"]
    assert prefill["gpus"] == [] and prefill["tp_size"] == 1 and prefill["numa_node"] == 0
    assert prefill["env"] == {"SGLANG_EMULATOR_LOAD_DELAY": "2"} and decode["env"] == {"SGLANG_EMULATOR_LOAD_DELAY": "3"}
    router = entry["router"]
    assert (router["url"], router["local_url"], router["prometheus_url"], router["prometheus_local_url"]) == (
        "http://pdserve-local:30001", "http://127.0.0.1:30001", None, "http://127.0.0.1:29000")


def test_multinode(inventory):
    topology = build_topology(*inventory("multinode"), defaults=TOPOLOGY_DEFAULTS)
    assert topology["problems"] == []
    assert sorted(topology["hosts"]) == ["gpu-decode-1", "gpu-prefill-1", "router-1"]
    hosts = topology["hosts"]
    assert (hosts["gpu-prefill-1"]["address"], hosts["gpu-prefill-1"]["groups"]) == ("10.0.0.11", ["sglang_prefill"])
    assert (hosts["gpu-decode-1"]["address"], hosts["gpu-decode-1"]["groups"]) == ("10.0.0.21", ["sglang_decode"])
    assert (hosts["router-1"]["address"], hosts["router-1"]["groups"]) == ("10.0.0.5", ["sglang_router"])
    assert hosts["gpu-prefill-1"]["router"] is None and hosts["gpu-decode-1"]["router"] is None
    assert hosts["router-1"]["prefill"] == [] and hosts["router-1"]["decode"] == []
    assert hosts["gpu-prefill-1"]["decode"] == [] and hosts["gpu-decode-1"]["prefill"] == []
    assert [(w["name"], w["url"], w["local_url"], w["bootstrap_port"], w["inventory_host"]) for w in topology["workers"]["prefill"]] == [
        ("prefill-0", "http://10.0.0.11:30000", "http://10.0.0.11:30000", 8998, "gpu-prefill-1"),
        ("prefill-1", "http://10.0.0.11:30010", "http://10.0.0.11:30010", 8999, "gpu-prefill-1"),
    ]
    decode, = topology["workers"]["decode"]
    assert (decode["name"], decode["url"], decode["metrics_url"], decode["tp_size"], decode["numa_node"]) == (
        "decode-0", "http://10.0.0.21:30002", "http://10.0.0.21:30002/metrics", 8, None)
    router, = topology["routers"]
    assert router["inventory_host"] == "router-1"
    assert router["url"] == "http://10.0.0.5:30001"
    assert router["local_url"] == "http://127.0.0.1:30001"
    assert router["prometheus_url"] is None
    assert router["prometheus_local_url"] == "http://127.0.0.1:29000"


@pytest.mark.parametrize("name", ["blackwell", "local", "multinode", "multinode_tp"])
def test_the_topology_is_json_safe(inventory, name):
    topology = build_topology(*inventory(name), defaults=TOPOLOGY_DEFAULTS)
    assert json.loads(json.dumps(topology)) == topology


@pytest.mark.parametrize("name", ["blackwell", "local", "multinode", "multinode_tp"])
def test_the_contract_keys(inventory, name):
    topology = build_topology(*inventory(name), defaults=TOPOLOGY_DEFAULTS)
    for entry in topology["hosts"].values():
        assert set(("address", "groups", "prefill", "decode", "router")) <= set(entry)
        for inst in entry["prefill"] + entry["decode"]:
            missing = [key for key in INSTANCE_KEYS if key not in inst]
            assert missing == [], "instance %s lacks %s (TOPOLOGY.md)" % (inst["name"], missing)
        if entry["router"] is not None:
            assert [key for key in ROUTER_KEYS if key not in entry["router"]] == []


def test_host_part(inventory):
    topology = build_topology(*inventory("multinode"), defaults=TOPOLOGY_DEFAULTS)
    entry, problems = T.host_part(topology, "gpu-decode-1")
    assert entry is topology["hosts"]["gpu-decode-1"] and problems == []
    entry, problems = T.host_part(topology, "monitor-9")
    assert entry == {"address": "monitor-9", "groups": [], "prefill": [], "decode": [], "router": None}
    assert problems == []


def test_host_part_keeps_only_the_hosts_own_problems():
    topology = three_hosts(decode={"port": "30002"}, prefill={"mem_fraction_static": 2})
    _entry, problems = T.host_part(topology, "d")
    assert [p["variable"] for p in problems] == ["sglang_decode_instances[decode].port"]
    _entry, problems = T.host_part(topology, "p")
    assert [p["variable"] for p in problems] == ["sglang_prefill_instances[prefill].mem_fraction_static"]


# --- defaults --------------------------------------------------------------------------------------

def test_defaults_when_variables_are_unset():
    topology = build_topology({"gpu": {"sglang_prefill_instances": [{"name": "p", "port": 30000}],
                                       "sglang_decode_instances": [{"name": "d", "port": 30002}]}},
                              {"sglang_prefill": ["gpu"], "sglang_decode": ["gpu"], "sglang_router": ["gpu"]},
                              defaults=TOPOLOGY_DEFAULTS)
    assert topology["problems"] == []
    entry = topology["hosts"]["gpu"]
    assert entry["address"] == "gpu"
    for inst in entry["prefill"] + entry["decode"]:
        assert inst["host"] == "127.0.0.1" and inst["metrics"] is True
    router = entry["router"]
    assert (router["host"], router["port"], router["prometheus_host"], router["prometheus_port"]) == ("0.0.0.0", 30001, "127.0.0.1", 29000)
    assert router["url"] == "http://gpu:30001"


def test_variables_set_to_null_take_the_defaults():
    host_vars = {"gpu": {"sglang_decode_instances": [{"name": "d", "port": 30002}], "sglang_server_host": None,
                         "sglang_server_enable_metrics": None, "sglang_router_host": None, "sglang_router_port": None,
                         "sglang_router_prometheus_host": None, "sglang_router_prometheus_port": None, "ansible_host": None}}
    topology = build_topology(host_vars, {"sglang_decode": ["gpu"], "sglang_router": ["gpu"]}, defaults=TOPOLOGY_DEFAULTS)
    inst, = topology["hosts"]["gpu"]["decode"]
    assert inst["host"] == "127.0.0.1" and inst["metrics"] is True
    router = topology["hosts"]["gpu"]["router"]
    assert (router["host"], router["port"], router["prometheus_host"], router["prometheus_port"]) == ("0.0.0.0", 30001, "127.0.0.1", 29000)


def test_server_variables_of_the_host():
    topology = three_hosts(d={"sglang_server_host": "10.0.0.21", "sglang_server_enable_metrics": False})
    decode, = topology["workers"]["decode"]
    assert decode["host"] == "10.0.0.21" and decode["metrics"] is False
    assert topology["workers"]["prefill"][0]["metrics"] is True


def test_empty_inventory():
    topology = build_topology({}, {}, defaults=TOPOLOGY_DEFAULTS)
    assert topology["hosts"] == {} and topology["routers"] == [] and topology["problems"] == []
    assert topology["workers"] == {"prefill": [], "decode": []}
    assert topology["groups"] == {"prefill": "sglang_prefill", "decode": "sglang_decode", "router": "sglang_router"}


def test_only_hosts_of_the_serving_groups_and_their_own_mode():
    host_vars = {"gpu": {"sglang_prefill_instances": [PREFILL], "sglang_decode_instances": [DECODE]},
                 "other": {"sglang_decode_instances": [DECODE]}}
    topology = build_topology(host_vars, {"sglang_prefill": ["gpu"], "monitoring": ["other"]}, defaults=TOPOLOGY_DEFAULTS)
    assert list(topology["hosts"]) == ["gpu"]
    assert topology["hosts"]["gpu"]["decode"] == [] and topology["workers"]["decode"] == []
    assert urls(topology, "prefill") == ["http://127.0.0.1:30000"]


def test_host_in_a_group_without_variables():
    """A serving-group host that declares no instance of its mode is a problem: the server role would otherwise find
    every unit of that mode stale and stop, disable and delete it."""
    topology = T.build_topology({}, {"sglang_decode": ["gpu"]}, defaults=TOPOLOGY_DEFAULTS)
    assert topology["hosts"]["gpu"] == {"address": "gpu", "groups": ["sglang_decode"], "prefill": [], "decode": [], "router": None}
    (found,) = topology["problems"]
    assert (found["host"], found["variable"]) == ("gpu", "sglang_decode_instances")
    assert "declares no decode instance" in found["message"] and "delete every decode unit" in found["message"]
    assert "set sglang_decode_instances for gpu" in found["fix"] and "out of group sglang_decode" in found["fix"]


@pytest.mark.parametrize("host_vars,said", [
    ({"sglang_decode_instance": [DECODE]}, "did you mean 'sglang_decode_instance'?"),
    ({"sglang_decode_instances": []}, "sglang_decode_instances is empty"),
    ({"sglang_prefill_instances": [PREFILL]}, "sglang_decode_instances is not set, so"),
])
def test_a_misspelled_or_empty_instance_variable_names_host_variable_and_fix(host_vars, said):
    topology = T.build_topology({"gpu": host_vars}, {"sglang_prefill": ["gpu"] if "sglang_prefill_instances" in host_vars
                                                     else [], "sglang_decode": ["gpu"]}, defaults=TOPOLOGY_DEFAULTS)
    found = [p for p in topology["problems"] if p["variable"] == "sglang_decode_instances" and p["host"] == "gpu"]
    assert len(found) == 1 and said in found[0]["message"], topology["problems"]
    # The other mode's real variable is never offered as the misspelling.
    assert "sglang_prefill_instances'" not in found[0]["message"]


def test_hosts_in_group_order_without_repeats():
    host_vars = {"a": {}, "b": {}, "c": {}}
    topology = build_topology(host_vars, {"sglang_router": ["c", "a"], "sglang_decode": ["b", "a"], "sglang_prefill": ["a"]}, defaults=TOPOLOGY_DEFAULTS)
    assert list(topology["hosts"]) == ["a", "b", "c"]
    assert topology["hosts"]["a"]["groups"] == ["sglang_prefill", "sglang_decode", "sglang_router"]


def test_group_names_can_be_overridden():
    host_vars = {"p": {"sglang_prefill_instances": [PREFILL]}, "d": {"sglang_decode_instances": [DECODE]}, "r": {}}
    topology = build_topology(host_vars, {"gpu_prefill": ["p"], "gpu_decode": ["d"], "edge": ["r"], "sglang_decode": ["p"]},
                              group_names={"prefill": "gpu_prefill", "decode": "gpu_decode", "router": "edge"},
                              defaults=TOPOLOGY_DEFAULTS)
    assert topology["groups"] == {"prefill": "gpu_prefill", "decode": "gpu_decode", "router": "edge"}
    assert [w["inventory_host"] for w in topology["workers"]["prefill"]] == ["p"]
    assert [w["inventory_host"] for w in topology["workers"]["decode"]] == ["d"]
    assert topology["hosts"]["r"]["groups"] == ["edge"]
    # Empty names keep the default.
    topology = build_topology(host_vars, {"sglang_decode": ["d"]}, group_names={"decode": ""}, defaults=TOPOLOGY_DEFAULTS)
    assert topology["groups"]["decode"] == "sglang_decode" and urls(topology, "decode") == ["http://127.0.0.1:30002"]


# --- addresses ---------------------------------------------------------------------------------------

def test_specific_bind_address_is_the_url():
    topology = three_hosts()
    assert topology["problems"] == []
    prefill, = topology["workers"]["prefill"]
    assert (prefill["url"], prefill["local_url"], prefill["metrics_url"]) == (
        "http://10.0.0.11:30000", "http://10.0.0.11:30000", "http://10.0.0.11:30000/metrics")


@pytest.mark.parametrize("wildcard", ["0.0.0.0", "*"])
def test_wildcard_bind_is_reached_at_ansible_host(wildcard):
    topology = three_hosts(prefill={"host": wildcard}, decode={"host": wildcard})
    assert topology["problems"] == []
    prefill, = topology["workers"]["prefill"]
    assert (prefill["url"], prefill["local_url"], prefill["metrics_url"]) == (
        "http://10.0.0.11:30000", "http://127.0.0.1:30000", "http://10.0.0.11:30000/metrics")
    assert urls(topology, "decode") == ["http://10.0.0.21:30002"]


def test_wildcard_bind_without_ansible_host_uses_the_inventory_name():
    topology = build_topology({"gpu-1.example": {"sglang_decode_instances": [dict(DECODE, host="0.0.0.0")]}},
                              {"sglang_decode": ["gpu-1.example"]}, defaults=TOPOLOGY_DEFAULTS)
    assert urls(topology, "decode") == ["http://gpu-1.example:30002"]


def test_advertise_host_wins_for_other_hosts():
    topology = three_hosts(decode={"host": "0.0.0.0", "advertise_host": "decode.example"})
    decode, = topology["workers"]["decode"]
    assert (decode["url"], decode["local_url"], decode["metrics_url"]) == (
        "http://decode.example:30002", "http://127.0.0.1:30002", "http://decode.example:30002/metrics")
    assert decode["advertise_host"] == "decode.example"


def test_ipv6_addresses_in_brackets():
    topology = three_hosts(p={"ansible_host": "fd00::11"}, prefill={"host": "::"},
                           decode={"host": "fd00::21"}, r={"sglang_router_host": "::", "ansible_host": "fd00::5"})
    assert topology["problems"] == []
    prefill, = topology["workers"]["prefill"]
    assert (prefill["url"], prefill["local_url"]) == ("http://[fd00::11]:30000", "http://[::1]:30000")
    decode, = topology["workers"]["decode"]
    assert (decode["url"], decode["local_url"], decode["metrics_url"]) == (
        "http://[fd00::21]:30002", "http://[fd00::21]:30002", "http://[fd00::21]:30002/metrics")
    router, = topology["routers"]
    assert (router["url"], router["local_url"]) == ("http://[fd00::5]:30001", "http://[::1]:30001")


def test_ipv6_advertise_host():
    topology = three_hosts(decode={"host": "0.0.0.0", "advertise_host": "fd00::99"})
    assert urls(topology, "decode") == ["http://[fd00::99]:30002"]


def test_router_on_a_specific_address():
    topology = three_hosts(r={"sglang_router_host": "10.0.0.6", "sglang_router_port": 8080,
                              "sglang_router_prometheus_host": "10.0.0.6", "sglang_router_prometheus_port": 9100})
    router, = topology["routers"]
    assert (router["url"], router["local_url"]) == ("http://10.0.0.6:8080", "http://10.0.0.6:8080")
    assert (router["prometheus_url"], router["prometheus_local_url"]) == ("http://10.0.0.6:9100", "http://10.0.0.6:9100")


def test_router_prometheus_on_a_wildcard_is_reached_at_the_host_address():
    router, = three_hosts(r={"sglang_router_prometheus_host": "0.0.0.0"})["routers"]
    assert (router["prometheus_url"], router["prometheus_local_url"]) == ("http://10.0.0.5:29000", "http://127.0.0.1:29000")


@pytest.mark.parametrize("loopback", ["127.0.0.1", "localhost", "::1"])
def test_router_prometheus_on_loopback_has_no_url_for_other_hosts(loopback):
    router, = three_hosts(r={"sglang_router_prometheus_host": loopback})["routers"]
    assert router["prometheus_url"] is None
    assert router["prometheus_local_url"].endswith(":29000")


@pytest.mark.parametrize("variable, value, message", [
    ("sglang_router_port", "30001", "must be a port between 1 and 65535, got '30001'"),
    ("sglang_router_port", 0, "must be a port between 1 and 65535, got 0"),
    ("sglang_router_port", True, "must be a port between 1 and 65535, got True"),
    ("sglang_router_prometheus_port", 70000, "must be a port between 1 and 65535, got 70000"),
    ("sglang_router_host", 5, "must be an address, got 5"),
    ("sglang_router_prometheus_host", ["127.0.0.1"], "must be an address, got ['127.0.0.1']"),
])
def test_router_variables_of_the_wrong_shape(variable, value, message):
    topology = three_hosts(r={variable: value})
    assert messages(topology) == [("r", variable, message)]


def test_instance_problems_carry_their_host_and_bad_ports_are_no_workers():
    topology = three_hosts(decode={"port": "30002"})
    # Declared but malformed: the shape problem says what to fix, not also "the router has no decode worker".
    assert messages(topology) == [("d", "sglang_decode_instances[decode].port", "must be an integer, got str '30002'")]
    decode, = topology["hosts"]["d"]["decode"]
    assert decode["url"] is None and decode["local_url"] is None and decode["metrics_url"] is None
    assert topology["workers"]["decode"] == []


def test_host_problems_are_part_of_the_topology():
    host_vars = {"gpu": {"sglang_prefill_instances": [PREFILL], "sglang_decode_instances": [dict(DECODE, gpus=[3, 4, 5, 6], port=30001)]}}
    topology = build_topology(host_vars, {"sglang_prefill": ["gpu"], "sglang_decode": ["gpu"], "sglang_router": ["gpu"]}, defaults=TOPOLOGY_DEFAULTS)
    assert [(p["variable"], p["message"]) for p in topology["problems"]] == [
        ("sglang_decode_instances[decode].gpus", "GPU 3 is given to both sglang_prefill_instances[prefill] and sglang_decode_instances[decode]"),
        ("sglang_router_port", "port 30001 is used by both sglang_decode_instances[decode].port and sglang_router_port"),
    ]


# --- cross-host problems --------------------------------------------------------------------------------

def test_three_hosts_on_private_addresses_have_no_problem():
    assert three_hosts()["problems"] == []


def test_router_on_another_host_cannot_reach_loopback_workers():
    host_vars = {"gpu1": {"sglang_prefill_instances": [PREFILL], "sglang_decode_instances": [DECODE]}, "edge": {}}
    topology = build_topology(host_vars, {"sglang_prefill": ["gpu1"], "sglang_decode": ["gpu1"], "sglang_router": ["edge"]}, defaults=TOPOLOGY_DEFAULTS)
    assert messages(topology) == [
        ("gpu1", "sglang_prefill_instances[prefill].host",
         "the router on edge cannot reach http://127.0.0.1:30000: it is served on 127.0.0.1, a loopback address of gpu1"),
        ("gpu1", "sglang_decode_instances[decode].host",
         "the router on edge cannot reach http://127.0.0.1:30002: it is served on 127.0.0.1, a loopback address of gpu1"),
    ]
    assert "sglang_server_host of gpu1" in topology["problems"][0]["fix"]


def test_only_the_remote_routers_are_named():
    host_vars = {"gpu1": {"sglang_prefill_instances": [PREFILL], "sglang_decode_instances": [DECODE]}, "edge": {}}
    topology = build_topology(host_vars, {"sglang_prefill": ["gpu1"], "sglang_decode": ["gpu1"],
                                          "sglang_router": ["gpu1", "edge"]}, defaults=TOPOLOGY_DEFAULTS)
    assert [m for _h, _v, m in messages(topology)] == [
        "the router on edge cannot reach http://127.0.0.1:30000: it is served on 127.0.0.1, a loopback address of gpu1",
        "the router on edge cannot reach http://127.0.0.1:30002: it is served on 127.0.0.1, a loopback address of gpu1",
    ]


def test_prefill_on_loopback_with_decode_elsewhere_even_on_the_routers_host():
    # The router hands decode the host of the prefill URL as the bootstrap host: 127.0.0.1 on the decode host.
    host_vars = {"r": {"sglang_prefill_instances": [PREFILL]},
                 "d": {"ansible_host": "10.0.0.21", "sglang_server_host": "10.0.0.21", "sglang_decode_instances": [DECODE]}}
    topology = build_topology(host_vars, {"sglang_prefill": ["r"], "sglang_decode": ["d"], "sglang_router": ["r"]}, defaults=TOPOLOGY_DEFAULTS)
    assert messages(topology) == [
        ("r", "sglang_prefill_instances[prefill].host",
         "decode servers on d get 127.0.0.1:8998 as the KV bootstrap address (the host of the prefill URL), "
         "a loopback address of r they cannot reach"),
    ]
    assert topology["problems"][0]["fix"] == "serve this prefill instance on an address of r that the decode hosts can reach"


def test_prefill_on_loopback_with_remote_router_and_remote_decode():
    topology = three_hosts(p={"sglang_server_host": "127.0.0.1"})
    assert messages(topology) == [
        ("p", "sglang_prefill_instances[prefill].host",
         "the router on r cannot reach http://127.0.0.1:30000: it is served on 127.0.0.1, a loopback address of p"),
        ("p", "sglang_prefill_instances[prefill].host",
         "decode servers on d get 127.0.0.1:8998 as the KV bootstrap address (the host of the prefill URL), "
         "a loopback address of p they cannot reach"),
    ]


def test_decode_on_loopback_on_the_routers_host_is_fine():
    host_vars = {"p": {"ansible_host": "10.0.0.11", "sglang_server_host": "10.0.0.11", "sglang_prefill_instances": [PREFILL]},
                 "r": {"sglang_decode_instances": [DECODE]}}
    topology = build_topology(host_vars, {"sglang_prefill": ["p"], "sglang_decode": ["r"], "sglang_router": ["r"]}, defaults=TOPOLOGY_DEFAULTS)
    assert topology["problems"] == []


def test_wildcard_bind_on_a_host_known_only_as_localhost():
    topology = three_hosts(p={"ansible_host": "localhost", "sglang_server_host": "0.0.0.0"})
    assert [(h, v) for h, v, _m in messages(topology)] == [
        ("p", "sglang_prefill_instances[prefill].host"), ("p", "sglang_prefill_instances[prefill].host")]
    assert "it is served on localhost" in topology["problems"][0]["message"]


@pytest.mark.parametrize("loopback", ["::1", "localhost", "127.0.1.1", "127.1.2.3"])
def test_every_loopback_address_is_unreachable_from_another_host(loopback):
    """127.0.0.0/8 is loopback, not only 127.0.0.1 (127.0.1.1 is the Debian hostname address)."""
    topology = three_hosts(d={"sglang_server_host": loopback})
    assert [(h, v) for h, v, _m in messages(topology)] == [("d", "sglang_decode_instances[decode].host")]


@pytest.mark.parametrize("wildcard", ["0.0.0.0", "::", "*"])
def test_a_wildcard_advertise_host_is_unreachable(wildcard):
    """A process on another host cannot connect to a wildcard address (the issue's reachability rule)."""
    topology = three_hosts(decode={"host": "10.0.0.21", "advertise_host": wildcard})
    # The variable to fix is the advertised address.
    assert [(h, v) for h, v, _m in messages(topology)] == [("d", "sglang_decode_instances[decode].advertise_host")]


def test_a_loopback_bind_is_unreachable_whatever_is_advertised():
    """advertise_host changes the URL, not what the server listens on: 127.0.0.1 cannot be reached from the router host."""
    topology = three_hosts(decode={"host": "127.0.0.1", "advertise_host": "10.0.0.21"})
    assert [(h, v) for h, v, _m in messages(topology)] == [("d", "sglang_decode_instances[decode].host")]


def test_two_workers_with_the_same_url():
    host_vars = {"a": {"sglang_decode_instances": [{"name": "d", "port": 30002, "host": "0.0.0.0", "advertise_host": "lb.example"}]},
                 "b": {"sglang_decode_instances": [{"name": "d2", "port": 30002, "host": "0.0.0.0", "advertise_host": "lb.example"}]},
                 "p": {"sglang_server_host": "10.0.0.11", "sglang_prefill_instances": [PREFILL]}}
    topology = build_topology(host_vars, {"sglang_prefill": ["p"], "sglang_decode": ["a", "b"], "sglang_router": ["p"]}, defaults=TOPOLOGY_DEFAULTS)
    assert topology["problems"] == [{
        "host": "b", "variable": "sglang_decode_instances[d2]",
        "message": "sglang_decode_instances[d] on a and sglang_decode_instances[d2] on b both resolve to http://lb.example:30002",
        "fix": "give each a distinct host:port"}]


def test_a_prefill_and_a_decode_with_the_same_url():
    host_vars = {"a": {"sglang_prefill_instances": [{"name": "p", "port": 30000, "host": "10.0.0.9"}]},
                 "b": {"sglang_decode_instances": [{"name": "d", "port": 30000, "host": "10.0.0.9"}]}}
    topology = build_topology(host_vars, {"sglang_prefill": ["a"], "sglang_decode": ["b"], "sglang_router": ["a"]}, defaults=TOPOLOGY_DEFAULTS)
    assert [m for _h, _v, m in messages(topology)] == [
        "sglang_prefill_instances[p] on a and sglang_decode_instances[d] on b both resolve to http://10.0.0.9:30000"]


def test_router_without_prefill_or_decode_workers():
    topology = build_topology({"edge": {}}, {"sglang_router": ["edge"]}, group_names={"decode": "gpu_decode"}, defaults=TOPOLOGY_DEFAULTS)
    assert messages(topology) == [
        ("edge", "sglang_prefill_instances",
         "the router has no prefill worker: no host of group sglang_prefill defines sglang_prefill_instances"),
        ("edge", "sglang_decode_instances",
         "the router has no decode worker: no host of group gpu_decode defines sglang_decode_instances"),
    ]
    assert topology["problems"][0]["fix"] == "add one to the inventory"


def test_no_router_no_worker_problem():
    topology = build_topology({"gpu": {"sglang_decode_instances": [DECODE]}}, {"sglang_decode": ["gpu"]}, defaults=TOPOLOGY_DEFAULTS)
    assert topology["problems"] == []


@pytest.mark.parametrize("bind, expected", [
    (None, "127.0.0.1"), ("", "127.0.0.1"), ("0.0.0.0", "127.0.0.1"), ("*", "127.0.0.1"), ("::", "::1"), ("10.0.0.1", "10.0.0.1")])
def test_local_host(bind, expected):
    assert T.local_host(bind) == expected


@pytest.mark.parametrize("bind, address, advertise, expected", [
    ("127.0.0.1", "10.0.0.1", None, "127.0.0.1"),
    ("0.0.0.0", "10.0.0.1", None, "10.0.0.1"),
    ("::", "10.0.0.1", None, "10.0.0.1"),
    ("", "10.0.0.1", None, "10.0.0.1"),
    (None, "10.0.0.1", None, "10.0.0.1"),
    ("10.0.0.2", "10.0.0.1", None, "10.0.0.2"),
    ("0.0.0.0", "10.0.0.1", "gpu.example", "gpu.example"),
])
def test_reach_host(bind, address, advertise, expected):
    assert T.reach_host(bind, address, advertise) == expected


def test_two_instances_of_one_host_on_one_port_are_one_problem():
    """The port clash names both instances; the same URL they then share is not a second problem."""
    topology = build_topology(
        {"h": {"sglang_prefill_instances": [{"name": "p", "gpus": [0], "port": 30000, "bootstrap_port": 8998}],
               "sglang_decode_instances": [{"name": "d", "gpus": [1], "port": 30000}]}},
        {"sglang_prefill": ["h"], "sglang_decode": ["h"], "sglang_router": ["h"]}, defaults=TOPOLOGY_DEFAULTS)
    clashes = [p for p in topology["problems"] if "30000" in p["message"]]
    assert [(p["variable"], p["message"]) for p in clashes] == [
        ("sglang_decode_instances[d].port",
         "port 30000 is used by both sglang_prefill_instances[p].port and sglang_decode_instances[d].port")]


# --- TLS on the router's client port -----------------------------------------------------------------

def test_without_tls_the_router_urls_are_plain_http_and_there_is_no_ca():
    router, = three_hosts()["routers"]
    assert (router["tls"], router["ca_path"], router["tls_names"]) == ("none", None, [])
    assert (router["url"], router["local_url"]) == ("http://10.0.0.5:30001", "http://127.0.0.1:30001")


@pytest.mark.parametrize("mode", ["stack_ca", "provided"])
def test_with_tls_the_router_urls_are_https_and_its_clients_get_the_ca(mode):
    topology = three_hosts(r={"sglang_router_tls": mode})
    assert topology["problems"] == []
    router, = topology["routers"]
    assert (router["tls"], router["ca_path"]) == (mode, "/etc/pdserve/router-ca.pem")
    assert (router["url"], router["local_url"]) == ("https://10.0.0.5:30001", "https://127.0.0.1:30001")
    # The metrics port has no TLS in sglang-router 0.3.2.
    assert router["prometheus_local_url"] == "http://127.0.0.1:29000"
    # What the certificate must name: the address, the inventory name, and loopback for the clients on the host.
    assert router["tls_names"] == ["10.0.0.5", "r", "127.0.0.1", "localhost"]


def test_tls_names_of_a_router_bound_to_one_address_and_the_ca_path_of_the_host():
    router, = three_hosts(r={"sglang_router_tls": "stack_ca", "sglang_router_host": "10.0.0.6",
                             "sglang_router_tls_ca_path": "/etc/pki/router-ca.pem"})["routers"]
    assert router["tls_names"] == ["10.0.0.5", "r", "10.0.0.6", "127.0.0.1", "localhost"]
    assert (router["local_url"], router["ca_path"]) == ("https://10.0.0.6:30001", "/etc/pki/router-ca.pem")


@pytest.mark.parametrize("value, said", [
    ("stackca", "must be one of none, stack_ca, provided, got 'stackca' (did you mean 'stack_ca'?)"),
    (True, "must be one of none, stack_ca, provided, got True"),
])
def test_an_unknown_tls_mode_is_a_problem_naming_the_variable(value, said):
    topology = three_hosts(r={"sglang_router_tls": value})
    assert messages(topology) == [("r", "sglang_router_tls", said)]
    assert "stack_ca" in topology["problems"][0]["fix"]
    assert topology["routers"][0]["url"].startswith("http://")


def test_a_relative_ca_path_is_a_problem():
    topology = three_hosts(r={"sglang_router_tls": "provided", "sglang_router_tls_ca_path": "ca.pem"})
    assert messages(topology) == [("r", "sglang_router_tls_ca_path", "must be an absolute path, got 'ca.pem'")]


# --- instances out of service -----------------------------------------------------------------------------

def test_an_instance_out_of_service_is_deployed_but_no_router_serves_it():
    spare = dict(DECODE, name="decode-1", port=30012, gpus=[2], numa_node=0, dist_init_port=30445, in_service=False)
    topology = three_hosts(d={"sglang_decode_instances": [dict(DECODE, gpus=[0, 1]), spare]})
    assert messages(topology) == []
    assert [i["name"] for i in topology["hosts"]["d"]["decode"]] == ["decode", "decode-1"]
    assert len(topology["workers"]["decode"]) == 2
    assert [w["name"] for w in topology["router_workers"]["decode"]] == ["decode"]
    assert topology["router_workers"]["prefill"] == topology["workers"]["prefill"]


def test_every_instance_of_a_mode_out_of_service_is_a_problem():
    topology = three_hosts(decode={"in_service": False})
    assert any(v == "sglang_decode_instances" and "in_service: false" in m for _h, v, m in messages(topology))


def test_in_service_must_be_a_boolean():
    topology = three_hosts(decode={"in_service": "no"})
    assert any(v.endswith(".in_service") and "true or false" in m for _h, v, m in messages(topology))


def test_multinode_tp(inventory):
    """inventories/multinode_tp: one prefill and one decode instance, each over two hosts; the router gets rank 0."""
    topology = build_topology(*inventory("multinode_tp"), defaults=TOPOLOGY_DEFAULTS)
    assert topology["problems"] == [] and topology["warnings"] == []
    assert [(h, i["name"], i["node_rank"]) for h in ("gpu-p0", "gpu-p1") for i in topology["hosts"][h]["prefill"]] == [
        ("gpu-p0", "prefill-0", 0), ("gpu-p1", "prefill-0", 1)]
    assert urls(topology, "prefill") == ["http://10.0.1.11:30000"] and urls(topology, "decode") == ["http://10.0.1.21:30002"]
    assert topology["hosts"]["gpu-d1"]["decode"][0]["dist_init_host"] == "10.0.1.21"
