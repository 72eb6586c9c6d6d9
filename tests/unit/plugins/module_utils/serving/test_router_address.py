# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The routers' virtual address (module_utils/serving/router_address.py through the topology) and keepalived's
configuration of one router host (module_utils/serving/keepalived.py)."""

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.host import firewall as F
from ansible_collections.pdserve.sglang.plugins.module_utils.serving import keepalived as K
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.topology import build_topology
from serving_support import DECODE, PREFILL, ROUTER_KEYS, TOPOLOGY_DEFAULTS

SETTINGS = {"interface": "", "virtual_router_id": 51, "priority": 200, "advert_interval": 0.5,
            "script_user": "sglang-router", "unit": "sglang-router.service",
            "check_script": "/usr/local/sbin/pdserve-router-check", "handoff_file": "/run/pdserve/router-handoff"}
# ip -j addr show of router r1.
LINKS = [{"ifname": "lo", "addr_info": [{"local": "127.0.0.1", "prefixlen": 8}]},
         {"ifname": "eth0", "addr_info": [{"local": "10.0.0.5", "prefixlen": 24}]}]


def two_routers(r1=None, r2=None, vip="10.0.0.100"):
    host_vars = {
        "r1": dict(dict(ROUTER_KEYS, ansible_host="10.0.0.5", sglang_router_virtual_address=vip), **(r1 or {})),
        "r2": dict(dict(ROUTER_KEYS, ansible_host="10.0.0.6", sglang_router_virtual_address=vip), **(r2 or {})),
        "gpu": dict(ROUTER_KEYS, ansible_host="10.0.0.11", sglang_server_host="10.0.0.11",
                    sglang_prefill_instances=[dict(PREFILL)], sglang_decode_instances=[dict(DECODE)]),
    }
    groups = {"sglang_router": ["r1", "r2"], "sglang_prefill": ["gpu"], "sglang_decode": ["gpu"]}
    return build_topology(host_vars, groups, TOPOLOGY_DEFAULTS), host_vars


def messages(topology, variable):
    return [p["message"] for p in topology["problems"] if p["variable"] == variable]


def test_no_virtual_address_by_default():
    topology, _vars = two_routers(vip="")
    assert topology["router_address"] is None
    assert not messages(topology, "sglang_router_virtual_address")


def test_shared_address_gives_clients_one_url():
    topology, _vars = two_routers()
    assert not topology["problems"]
    assert topology["router_address"] == {"address": "10.0.0.100", "version": 4, "port": 30001, "hosts": ["r1", "r2"],
                                          "url": "http://10.0.0.100:30001"}
    assert all(r["virtual_address"] == "10.0.0.100" for r in topology["routers"])


def test_tls_certificate_names_the_virtual_address():
    topology, _vars = two_routers(r1={"sglang_router_tls": "stack_ca"}, r2={"sglang_router_tls": "stack_ca"})
    assert topology["router_address"]["url"] == "https://10.0.0.100:30001"
    assert all(r["tls_names"][0] == "10.0.0.100" for r in topology["routers"])


@pytest.mark.parametrize("vip, says", [
    ("router.example", "must be an IP address"),
    ("127.0.0.9", "loopback"),
    ("224.0.0.18", "multicast"),
    ("fe80::1", "link-local"),
    ("0.0.0.0", "unspecified"),
    ("10.0.0.6", "the address of r2 itself"),
    (["10.0.0.100"], "must be an IP address"),
])
def test_unusable_addresses_are_refused(vip, says):
    topology, _vars = two_routers(vip=vip)
    assert any(says in m for m in messages(topology, "sglang_router_virtual_address")), topology["problems"]


def test_router_hosts_must_agree():
    topology, _vars = two_routers(r2={"sglang_router_virtual_address": "10.0.0.101"})
    assert any("differs between the router hosts" in m for m in messages(topology, "sglang_router_virtual_address"))
    topology, _vars = two_routers(r2={"sglang_router_virtual_address": ""})
    assert any("is not set here" in m for m in messages(topology, "sglang_router_virtual_address"))


def test_router_must_listen_on_it_and_share_port_and_key():
    r2 = {"sglang_router_port": 30011, "sglang_router_api_key": "another-key"}
    topology, _vars = two_routers(r1={"sglang_router_host": "10.0.0.5"}, r2=r2)
    assert any("would not answer on the virtual address" in m for m in messages(topology, "sglang_router_host"))
    assert any("one virtual address has one port" in m for m in messages(topology, "sglang_router_port"))
    key = messages(topology, "sglang_router_api_key")
    assert any("differs between the router hosts" in m for m in key)
    assert not any("another-key" in m or "box-client-key" in m for m in key)


def test_ipv6_address_needs_a_dual_or_v6_bind():
    topology, _vars = two_routers(vip="fd00::100")
    assert any("would not answer" in m for m in messages(topology, "sglang_router_host"))
    topology, _vars = two_routers(vip="fd00::100", r1={"sglang_router_host": "::"}, r2={"sglang_router_host": "::"})
    assert not messages(topology, "sglang_router_host")
    assert topology["router_address"]["url"] == "http://[fd00::100]:30001"


def test_firewall_lets_vrrp_in_from_the_other_router_only():
    topology, host_vars = two_routers()
    rules, problems = F.host_ruleset(topology, "r1", F.peer_addresses(host_vars))
    assert not problems
    vrrp = [r for r in rules if r["port"] == F.VRRP]
    assert vrrp and vrrp[0]["v4"] == ["10.0.0.6"]
    text = F.render("r1", rules)
    assert "meta l4proto 112 ip saddr { 10.0.0.6 } accept\n\t\tmeta l4proto 112 drop" in text
    gpu_rules, _problems = F.host_ruleset(topology, "gpu", F.peer_addresses(host_vars))
    assert not [r for r in gpu_rules if r["port"] == F.VRRP]


def plan(host="r1", settings=None, links=tuple(LINKS), **kwargs):
    topology, host_vars = two_routers(**kwargs)
    return K.plan(topology["router_address"], host, F.peer_addresses(host_vars), dict(SETTINGS, **(settings or {})),
                  list(links) if links is not None else None)


def test_keepalived_configuration():
    result = plan()
    assert not result["problems"]
    assert result["interface"] == "eth0" and result["source"] == "10.0.0.5" and result["peers"] == ["10.0.0.6"]
    text = result["content"]
    for line in ("script_user sglang-router", "vrrp_version 3", "state BACKUP", "nopreempt", "interface eth0",
                 "virtual_router_id 51", "priority 200", "advert_int 0.5", "unicast_src_ip 10.0.0.5",
                 "        10.0.0.6\n", "10.0.0.100/32 dev eth0",
                 'script "/usr/local/sbin/pdserve-router-check"'):
        assert line in text, line
    assert plan()["content"] == text


@pytest.mark.parametrize("settings, variable", [
    ({"virtual_router_id": 0}, "sglang_router_address_virtual_router_id"),
    ({"virtual_router_id": "51; rm"}, "sglang_router_address_virtual_router_id"),
    ({"priority": 255}, "sglang_router_address_priority"),
    ({"priority": True}, "sglang_router_address_priority"),
    ({"advert_interval": 0}, "sglang_router_address_advert_interval"),
    ({"advert_interval": "fast"}, "sglang_router_address_advert_interval"),
    ({"interface": "eth0\n}\nvrrp_script x {"}, "sglang_router_address_interface"),
    ({"interface": "eth7"}, "sglang_router_address_interface"),
    ({"script_user": "root; x"}, "sglang_router_address_script_user"),
    ({"handoff_file": "/run/x; rm -rf /"}, "sglang_router_address_handoff_file"),
])
def test_bad_settings_are_refused_without_a_file(settings, variable):
    result = plan(settings=settings)
    assert [p for p in result["problems"] if p["variable"] == variable], result["problems"]
    assert result["content"] == ""


def test_address_outside_the_interface_networks_is_refused():
    result = plan(vip="192.168.7.100")
    assert any("outside the networks of eth0" in p["message"] for p in result["problems"])


def test_interface_not_judged_before_the_host_is_read():
    result = plan(links=None)
    assert not result["problems"] and result["content"] == ""
    assert plan(links=None, settings={"interface": "eth0"})["content"]


def test_peer_known_by_name_only_is_refused():
    result = plan(r2={"ansible_host": "router-2.example"})
    assert any(p["host"] == "r2" and "no IPv4 address" in p["message"] for p in result["problems"])


def test_check_script_honours_a_handoff_until_its_time(tmp_path):
    """The script itself, run: active router or an unexpired handoff file -> 0; an expired or garbled one -> the
    router's state decides (here a systemctl that says inactive)."""
    import os  # pylint: disable=import-outside-toplevel
    import subprocess  # pylint: disable=import-outside-toplevel
    import time  # pylint: disable=import-outside-toplevel
    handoff = tmp_path / "handoff"
    script = K.check_script(dict(SETTINGS, handoff_file=str(handoff)))
    assert script.rstrip().endswith("exec /usr/bin/systemctl is-active --quiet sglang-router.service")
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "systemctl").write_text("#!/bin/sh\nexit 3\n")
    (fake / "systemctl").chmod(0o755)
    path = tmp_path / "check"
    path.write_text(script.replace("/usr/bin/systemctl", str(fake / "systemctl")))
    env = dict(os.environ, PATH="/usr/bin:/bin")

    def run():
        return subprocess.run(["sh", str(path)], env=env, check=False).returncode

    assert run() == 3
    handoff.write_text("%d\n" % (time.time() + 60))
    assert run() == 0
    handoff.write_text("%d\n" % (time.time() - 1))
    assert run() == 3
    handoff.write_text("soon\n")
    assert run() == 3
