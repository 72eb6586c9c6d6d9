# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""keepalived's configuration of one router host: VRRP moves the routers' virtual address to a router that runs.

Pure functions, unit-tested; the role pdserve.sglang.sglang_router_address writes the text. The choices, and why:

- VRRP version 3, unicast to the other router hosts by address (no multicast, which many networks filter), and the
  host firewall lets VRRP in from those hosts only (version 3 has no authentication).
- Every host starts as BACKUP with ``nopreempt``: a router that comes back after a failure does not take the address
  back (moving it resets the connections on the host that holds it); the highest priority wins the first election.
- A check script run as the router's own user (never root) tracks the router unit: a router that is not active
  (killed, restarting, stopped) puts its host in FAULT, which hands the address over at once. A planned restart
  (the day-2 router roll) keeps the address where it is until the time in the handoff file, while a proxy hands the
  new connections to another router.
- Advertisements every ``advert_interval`` seconds: a lost host is noticed after about three of them.
"""

import ipaddress
import re
from typing import Any, Dict, List, Optional

from ansible_collections.pdserve.sglang.plugins.module_utils.problems import problem

PREFIX = "sglang_router_address_"
_IFNAME = re.compile(r"^[A-Za-z0-9_.@:-]{1,15}$")
_USER = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
_UNIT = re.compile(r"^[A-Za-z0-9@_.:-]+\.service$")
_PATH = re.compile(r"^(/[A-Za-z0-9_.-]+)+$")


def _literal(value: Any) -> Optional[Any]:
    try:
        return ipaddress.ip_address(str(value).strip())
    except ValueError:
        return None


def int_in(value: Any, low: int, high: int) -> Optional[int]:
    if isinstance(value, bool):
        return None
    try:
        number = int(str(value))
    except (TypeError, ValueError):
        return None
    return number if low <= number <= high else None


def address_of(host: str, addresses: Dict[str, Dict[str, Any]], version: int) -> Optional[str]:
    """The host's first address of the virtual address' family (sglang_firewall_host_addresses, else ansible_host)."""
    given = addresses.get(host) or {"addresses": [host]}
    for value in given["addresses"]:
        literal = _literal(value)
        if literal is not None and literal.version == version and not literal.is_loopback:
            return str(literal)
    return None


def _interfaces(ip_addr: List[Dict[str, Any]]) -> Dict[str, List[Any]]:
    """{interface: [its networks]} from ``ip -j addr show``."""
    found: Dict[str, List[Any]] = {}
    for link in ip_addr or []:
        nets = found.setdefault(str(link.get("ifname")), [])
        for info in link.get("addr_info") or []:
            try:
                nets.append(ipaddress.ip_interface("%s/%s" % (info.get("local"), info.get("prefixlen"))))
            except ValueError:
                continue
    return found


def plan(shared: Dict[str, Any], host: str, addresses: Dict[str, Dict[str, Any]], settings: Dict[str, Any],
         ip_addr: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
    """``{problems, interface, source, peers, content}`` of ``host``.

    ``shared``: the topology's ``router_address``. ``addresses``: firewall ``peer_addresses()`` of the router hosts.
    ``settings``: interface, virtual_router_id, priority, advert_interval, script_user, unit. ``ip_addr``: the host's
    ``ip -j addr show`` (None: not read yet, the interface is not judged)."""
    problems = []
    version = shared["version"]
    vrid = int_in(settings.get("virtual_router_id"), 1, 255)
    if vrid is None:
        problems.append(problem(host, PREFIX + "virtual_router_id", "must be a whole number from 1 to 255, got %r"
                                % (settings.get("virtual_router_id"),),
                                "one number per virtual address of the network, the same on every router host"))
    priority = int_in(settings.get("priority"), 1, 254)
    if priority is None:
        problems.append(problem(host, PREFIX + "priority", "must be a whole number from 1 to 254, got %r"
                                % (settings.get("priority"),), "higher wins the first election, e.g. 150"))
    try:
        interval = float(str(settings.get("advert_interval")))
    except ValueError:
        interval = None
    if isinstance(settings.get("advert_interval"), bool) or interval is None or not 0.01 <= interval <= 40.95:
        problems.append(problem(host, PREFIX + "advert_interval", "must be seconds from 0.01 to 40.95 (VRRP version 3 "
                                "counts centiseconds), got %r" % (settings.get("advert_interval"),),
                                "e.g. 0.5: a lost router host is noticed after about three intervals"))
        interval = None
    for key, pattern, fix in (("script_user", _USER, "the router's service user"),
                              ("unit", _UNIT, "sglang-router.service"),
                              ("check_script", _PATH, "/usr/local/sbin/pdserve-router-check"),
                              ("handoff_file", _PATH, "/run/pdserve/router-handoff")):
        if not isinstance(settings.get(key), str) or not pattern.match(settings[key]):
            problems.append(problem(host, PREFIX + key, "must be a plain name, got %r" % (settings.get(key),), fix))
    source = address_of(host, addresses, version)
    if source is None:
        problems.append(problem(host, "sglang_firewall_host_addresses", "gives %s no IPv%d address: VRRP speaks to the "
                                "other router hosts from one, for the virtual address %s"
                                % (host, version, shared["address"]),
                                "set ansible_host (or sglang_firewall_host_addresses) of %s to its IP address" % host))
    peers = []
    for peer in shared["hosts"]:
        if peer == host:
            continue
        address = address_of(peer, addresses, version)
        if address is None:
            problems.append(problem(peer, "sglang_firewall_host_addresses", "gives %s no IPv%d address: the router "
                                    "host %s sends it VRRP by address" % (peer, version, host),
                                    "set ansible_host (or sglang_firewall_host_addresses) of %s to its IP address"
                                    % peer))
        else:
            peers.append(address)
    interface = settings.get("interface") or ""
    if not isinstance(interface, str) or (interface and not _IFNAME.match(interface)):
        problems.append(problem(host, PREFIX + "interface", "must be a network interface name, got %r" % (interface,),
                                "e.g. eth0, or empty for the interface that holds the host's own address"))
        interface = ""
    if ip_addr is not None and source is not None:
        interface = _judge_interface(host, shared, interface, source, _interfaces(ip_addr), problems)
    content = render(host, shared, interface, source, peers, vrid, priority, interval, settings) \
        if not problems and interface else ""
    script = check_script(settings) if not problems else ""
    return {"problems": problems, "interface": interface, "source": source, "peers": peers, "content": content,
            "check_script": script}


def _judge_interface(host, shared, interface, source, interfaces, problems):
    """The interface the address goes on: the one given, else the one holding the host's own address; the virtual
    address must lie in one of its networks, or other hosts of that network would not find it (ARP, neighbour
    discovery)."""
    if not interface:
        holding = [name for name, nets in sorted(interfaces.items()) if any(str(n.ip) == source for n in nets)]
        if not holding:
            problems.append(problem(host, PREFIX + "interface", "is empty and no interface of %s holds its address %s"
                                    % (host, source), "name the interface the virtual address goes on"))
            return ""
        interface = holding[0]
    if interface not in interfaces:
        problems.append(problem(host, PREFIX + "interface", "is %r, which %s does not have (it has %s)"
                                % (interface, host, ", ".join(sorted(interfaces)) or "none"),
                                "name one of its interfaces, or leave it empty"))
        return ""
    vip = ipaddress.ip_address(shared["address"])
    nets = [n.network for n in interfaces[interface] if n.version == vip.version]
    if not any(vip in net for net in nets):
        problems.append(problem(host, "sglang_router_virtual_address", "is %s, outside the networks of %s on %s (%s): "
                                "other hosts would not find it there" % (vip, interface, host,
                                                                         ", ".join(str(n) for n in nets) or "none"),
                                "choose a free address of %s" % (str(nets[0]) if nets else "the routers' network")))
    return interface


def check_script(settings: Dict[str, Any]) -> str:
    """The check keepalived runs every second as the router's user: 0 while this host may hold the address."""
    return "\n".join([
        "#!/bin/sh",
        "# Written by pdserve.sglang (role sglang_router_address): keepalived's check of the routers' virtual address.",
        "# This host may hold it while its router is active, or until the time (epoch seconds) in the handoff file, which",
        "# a planned restart of the router writes while a proxy hands the new connections to another router.",
        "handoff=%s" % settings["handoff_file"],
        "if [ -r \"$handoff\" ] && [ \"$(date +%s)\" -lt \"$(cat \"$handoff\")\" ] 2>/dev/null; then",
        "    exit 0",
        "fi",
        "exec /usr/bin/systemctl is-active --quiet %s" % settings["unit"],
        "",
    ])


def render(host, shared, interface, source, peers, vrid, priority, interval, settings) -> str:
    """keepalived.conf of ``host`` (sorted peers: a rerun writes the same text)."""
    bits = 32 if shared["version"] == 4 else 128
    lines = [
        "# Written by pdserve.sglang (role sglang_router_address) for %s; edits are overwritten." % host,
        "# The routers' virtual address %s moves to a router host whose router runs (README \"Several routers\")."
        % shared["address"],
        "global_defs {",
        "    # The check below runs as the router's user, never as root.",
        "    enable_script_security",
        "    script_user %s" % settings["script_user"],
        "    vrrp_version 3",
        "    # The holder tells the network again every minute (a switch that forgot the address learns it back).",
        "    vrrp_garp_master_refresh 60",
        "}",
        "",
        "vrrp_script pdserve_router_active {",
        "    script \"%s\"" % settings["check_script"],
        "    interval 1",
        "    fall 1",
        "    rise 2",
        "}",
        "",
        "vrrp_instance pdserve_router {",
        "    # Every host starts as a backup and none takes the address back once another holds it.",
        "    state BACKUP",
        "    nopreempt",
        "    interface %s" % interface,
        "    virtual_router_id %d" % vrid,
        "    priority %d" % priority,
        "    advert_int %s" % ("%g" % interval),
        "    unicast_src_ip %s" % source,
        "    unicast_peer {",
    ]
    lines += ["        %s" % peer for peer in sorted(peers)]
    lines += [
        "    }",
        "    virtual_ipaddress {",
        "        %s/%d dev %s" % (shared["address"], bits, interface),
        "    }",
        "    track_script {",
        "        pdserve_router_active",
        "    }",
        "}",
        "",
    ]
    return "\n".join(lines)
