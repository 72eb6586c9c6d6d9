# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A planned restart of the router that holds the routers' virtual address, without a failed request.

Moving the address would reset the connections in flight on its holder (the clients' next packets reach another host,
which knows nothing of them), and a router that restarts refuses connections for a few seconds. So the holder keeps the
address and hands only its NEW connections to another router, through a proxy of its own:

1. the handoff file keeps keepalived's check passing until a time (the address stays while the router restarts);
2. ``systemd-socket-proxyd`` (a transient unit, a dynamic user, no capabilities) listens on the virtual address at the
   handoff port and forwards to the peer router;
3. an nftables table of its own sends new connections of the virtual address' router port to that port (a local
   redirect: no forwarding, nothing else changes), and lets nobody reach the handoff port directly;
4. once the router has no client connection left it restarts, is waited for and validated; then the redirect rule goes
   (new connections reach it again), the proxy's connections finish, the proxy stops, and the table and the file go.
   The NAT chain stays until the proxy's connections have finished: the kernel translates the addresses of redirected
   connections only while a NAT chain is registered, and deleting it would stall them.

A router host that does not hold the address restarts in place: no client reaches it. Pure functions, unit-tested.
"""

import re
from typing import Any, Dict

from ansible_collections.pdserve.sglang.plugins.module_utils.problems import problem
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.instances import url_host
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.keepalived import address_of, int_in

TABLE = "pdserve_handoff"
UNIT = "pdserve-router-handoff.service"
PORT_VARIABLE = "sglang_operations_router_handoff_port"
_PROXY = "/lib/systemd/systemd-socket-proxyd"
_ACTIVATE = "/usr/bin/systemd-socket-activate"
# The proxy runs as a user made for it, with nothing it could write or gain.
_PROXY_PROPERTIES = ("DynamicUser=yes", "NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes",
                     "PrivateTmp=yes", "CapabilityBoundingSet=", "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX")
_UNSAFE = re.compile(r"[^0-9A-Fa-f.:]")


def plan(topology: Dict[str, Any], host: str, addresses: Dict[str, Dict[str, Any]], handoff_port: Any) -> Dict[str, Any]:
    """``{problems, shared, peer, peer_address, listen, nft, proxy_argv}`` of restarting ``host``'s router.

    ``shared`` is False where the topology has no virtual address (``problems`` then say the restart would refuse
    connections). ``addresses``: firewall ``peer_addresses()`` of the router hosts."""
    shared = topology.get("router_address")
    routers = [r["inventory_host"] for r in topology.get("routers") or []]
    result: Dict[str, Any] = {"problems": [], "shared": bool(shared), "peer": None, "peer_address": None, "listen": None, "nft": "",
                              "proxy_argv": [], "table": TABLE, "unit": UNIT}
    if not shared:
        result["problems"].append(problem(host, "sglang_router_virtual_address", "is not set: the router on %s has no "
                                          "peer behind one address, so its restart refuses its clients' connections "
                                          "for a few seconds" % host,
                                          "set sglang_router_virtual_address with two or more router hosts, or set "
                                          "sglang_operations_roll_plain_restart: true to restart it anyway"))
        return result
    peers = [h for h in routers if h != host]
    if not peers:
        result["problems"].append(problem(host, "sglang_router_virtual_address", "has one router host, %s: no other "
                                          "router can take its connections while it restarts" % host,
                                          "add a second router host, or set sglang_operations_roll_plain_restart: true"))
        return result
    port = int_in(handoff_port, 1024, 65535)
    router_ports = set()
    for router in topology["routers"]:
        if router["inventory_host"] == host:
            router_ports = {router.get("port"), router.get("prometheus_port")}
    if port is None or port in router_ports:
        taken = ", ".join(str(p) for p in sorted(router_ports))
        result["problems"].append(problem(host, PORT_VARIABLE, "must be a free port from 1024 to 65535 other than the "
                                          "router's (%s), got %r" % (taken, handoff_port),
                                          "e.g. 31001: the proxy listens there on the virtual address while the router "
                                          "restarts"))
        return result
    peer = peers[0]
    peer_address = address_of(peer, addresses, shared["version"])
    if peer_address is None:
        result["problems"].append(problem(peer, "sglang_firewall_host_addresses", "gives %s no IPv%d address: the "
                                          "router on %s hands it its connections by address"
                                          % (peer, shared["version"], host),
                                          "set ansible_host (or sglang_firewall_host_addresses) of %s to its IP "
                                          "address" % peer))
        return result
    vip = shared["address"]
    family = "ip" if shared["version"] == 4 else "ip6"
    listen = "%s:%s" % (url_host(vip), port)
    result.update(peer=peer, peer_address=peer_address, listen=listen)
    result["nft"] = "\n".join([
        "table inet %s {" % TABLE,
        "\tchain prerouting {",
        "\t\ttype nat hook prerouting priority dstnat; policy accept;",
        "\t\t# New connections to the routers' address go to the handoff proxy; those in flight stay with the router.",
        "\t\t%s daddr %s tcp dport %s ct state new dnat %s to %s" % (family, vip, shared["port"], family, listen),
        "\t}",
        "\tchain input {",
        "\t\ttype filter hook input priority filter; policy accept;",
        "\t\ttcp dport %s ct status dnat accept" % port,
        "\t\ttcp dport %s reject with tcp reset" % port,
        "\t}",
        "}",
        "",
    ])
    result["proxy_argv"] = (["systemd-run", "--unit=%s" % UNIT, "--collect", "--quiet"]
                            + ["--property=%s" % p for p in _PROXY_PROPERTIES]
                            + [_ACTIVATE, "--listen=%s" % result["listen"], _PROXY, "--connections-max=1024",
                               "%s:%s" % (url_host(peer_address), shared["port"])])
    return result
