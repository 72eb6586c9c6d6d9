# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A planned restart of the router holding the routers' virtual address (module_utils/operations/router_handoff.py)."""

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.host import firewall as F
from ansible_collections.pdserve.sglang.plugins.module_utils.operations import router_handoff as H
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.topology import build_topology
from serving_support import DECODE, PREFILL, ROUTER_KEYS, TOPOLOGY_DEFAULTS


def topology_of(routers=("r1", "r2"), vip="10.0.0.100", extra=None):
    host_vars = {"gpu": dict(ROUTER_KEYS, ansible_host="10.0.0.11", sglang_server_host="10.0.0.11",
                             sglang_prefill_instances=[dict(PREFILL)], sglang_decode_instances=[dict(DECODE)])}
    for index, name in enumerate(routers):
        host_vars[name] = dict(dict(ROUTER_KEYS, ansible_host="10.0.0.%d" % (5 + index),
                                    sglang_router_virtual_address=vip), **((extra or {}).get(name) or {}))
    groups = {"sglang_router": list(routers), "sglang_prefill": ["gpu"], "sglang_decode": ["gpu"]}
    topology = build_topology(host_vars, groups, TOPOLOGY_DEFAULTS)
    return topology, F.peer_addresses(host_vars)


def test_the_holder_hands_new_connections_to_its_peer_through_a_confined_proxy():
    topology, addresses = topology_of()
    plan = H.plan(topology, "r1", addresses, 31001)
    assert not plan["problems"]
    assert plan["peer"] == "r2" and plan["peer_address"] == "10.0.0.6" and plan["listen"] == "10.0.0.100:31001"
    assert "ip daddr 10.0.0.100 tcp dport 30001 ct state new dnat ip to 10.0.0.100:31001" in plan["nft"]
    assert "tcp dport 31001 ct status dnat accept\n\t\ttcp dport 31001 reject with tcp reset" in plan["nft"]
    argv = plan["proxy_argv"]
    assert argv[:2] == ["systemd-run", "--unit=pdserve-router-handoff.service"]
    assert "--property=DynamicUser=yes" in argv and "--property=CapabilityBoundingSet=" in argv
    assert argv[-3:] == ["/lib/systemd/systemd-socket-proxyd", "--connections-max=1024", "10.0.0.6:30001"]
    assert "--listen=10.0.0.100:31001" in argv


def test_ipv6_address():
    extra = dict((r, {"sglang_router_host": "::", "ansible_host": "fd00::%d" % i}) for i, r in ((5, "r1"), (6, "r2")))
    topology, addresses = topology_of(vip="fd00::100", extra=extra)
    plan = H.plan(topology, "r2", addresses, 31001)
    assert not plan["problems"], plan["problems"]
    assert "ip6 daddr fd00::100 tcp dport 30001 ct state new dnat ip6 to [fd00::100]:31001" in plan["nft"]
    assert plan["proxy_argv"][-1] == "[fd00::5]:30001"


@pytest.mark.parametrize("routers, vip, port, says", [
    (("r1", "r2"), "", 31001, "its restart refuses its clients' connections"),
    (("r1",), "10.0.0.100", 31001, "no other router can take its connections"),
    (("r1", "r2"), "10.0.0.100", 30001, "other than the router's"),
    (("r1", "r2"), "10.0.0.100", 29000, "other than the router's"),
    (("r1", "r2"), "10.0.0.100", "31001; rm", "must be a free port"),
    (("r1", "r2"), "10.0.0.100", 80, "must be a free port"),
])
def test_a_restart_that_would_refuse_connections_is_named(routers, vip, port, says):
    topology, addresses = topology_of(routers, vip)
    plan = H.plan(topology, "r1", addresses, port)
    assert any(says in p["message"] for p in plan["problems"]), plan["problems"]
    assert plan["nft"] == "" and plan["proxy_argv"] == []
