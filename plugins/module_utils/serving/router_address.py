# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The routers' one client address: a virtual address that keepalived (VRRP) moves between the router hosts.

Every router serves the same workers; clients use the virtual address, and the router host holding it answers. When
that host's router dies or the host is lost, another router host takes the address over. Judged here, on the
controller, before anything changes: an address VRRP can move (an IP literal, not a name, loopback or multicast), the
same on every router host, nobody's own address, and a router that listens on it (a wildcard bind of its family) on
one port.
"""

import ipaddress
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.pdserve.sglang.plugins.module_utils.problems import problem

VARIABLE = "sglang_router_virtual_address"
# The clients' key: the same on every router, as clients do not know which one holds the address.
KEY = "sglang_router_api_key"
_FIX_GROUP = "set %s once for every router host, in group_vars/sglang_router.yml" % VARIABLE


def _literal(value: Any) -> Optional[Any]:
    try:
        return ipaddress.ip_address(str(value).strip())
    except ValueError:
        return None


def _unusable(address) -> Optional[str]:
    """Why VRRP cannot move ``address`` to clients of other hosts (None when it can)."""
    for test, why in ((address.is_loopback, "a loopback address"), (address.is_unspecified, "the unspecified address"),
                      (address.is_multicast, "a multicast address"),
                      (address.is_link_local, "a link-local address (it needs an interface scope clients cannot give)")):
        if test:
            return why
    return None


def _value(hv: Dict[str, Any], default: Any) -> Any:
    value = hv.get(VARIABLE)
    value = default if value is None else value
    return "" if value is None else value


def judge(routers: List[Dict[str, Any]], host_vars: Dict[str, Dict[str, Any]], host_addresses: Dict[str, str],
          default: Any = "") -> Tuple[Optional[Dict[str, Any]], List[Dict[str, Any]]]:
    """``(address, problems)``: the routers' virtual address ``{address, version, port, hosts}`` (None when no router
    host sets one) and what stops it.

    ``routers``: the topology's router entries (``inventory_host``, ``host``, ``port``). ``host_addresses``:
    {inventory host: the address the topology reaches it by}. ``default``: what a host that does not set it gets."""
    given = dict((r["inventory_host"], _value(host_vars.get(r["inventory_host"]) or {}, default)) for r in routers)
    set_on = sorted(h for h, v in given.items() if v != "")
    if not set_on:
        return None, []
    problems = []
    unset = sorted(h for h, v in given.items() if v == "")
    for host in unset:
        plural = len(set_on) > 1
        problems.append(problem(host, VARIABLE, "is not set here, but router host%s %s share%s the virtual address %r: "
                                "every router host must hold it in turn"
                                % ("s" if plural else "", ", ".join(set_on), "" if plural else "s", given[set_on[0]]),
                                _FIX_GROUP))
    values = sorted(set(str(given[h]) for h in set_on))
    if len(values) > 1:
        problems.append(problem(set_on[0], VARIABLE, "differs between the router hosts (%s): clients reach them at one "
                                "address" % "; ".join("%s: %r" % (h, given[h]) for h in set_on), _FIX_GROUP))
        return None, problems
    raw = given[set_on[0]]
    address = _literal(raw) if isinstance(raw, str) else None
    if address is None:
        problems.append(problem(set_on[0], VARIABLE, "must be an IP address (VRRP moves an address, not a name), got %r"
                                % (raw,), "e.g. 10.0.0.100: a free address of the routers' client network"))
        return None, problems
    why = _unusable(address)
    if why:
        problems.append(problem(set_on[0], VARIABLE, "is %s, %s, which clients on other hosts cannot reach"
                                % (address, why), "choose a free address of the routers' client network"))
    for host, reach in sorted(host_addresses.items()):
        if _literal(reach) == address:
            problems.append(problem(host, VARIABLE, "is %s, the address of %s itself: the address would leave that "
                                    "host with the router role" % (address, host),
                                    "choose an address no host of the inventory has"))
    wildcard = "::" if address.version == 6 else "0.0.0.0"
    for router in routers:
        bind = str(router.get("host") or "")
        # "::" listens on IPv4 too where the host allows it; 0.0.0.0 never on IPv6.
        if bind not in (wildcard, "::") and _literal(bind) != address:
            problems.append(problem(router["inventory_host"], "sglang_router_host", "is %r: the router would not "
                                    "answer on the virtual address %s" % (bind, address),
                                    "set sglang_router_host: %s (the router then listens on the virtual address "
                                    "when its host holds it)" % wildcard))
    # Compared, never shown: a key is a secret.
    keys = set(str((host_vars.get(r["inventory_host"]) or {}).get(KEY) or "") for r in routers)
    if len(keys) > 1:
        problems.append(problem(routers[0]["inventory_host"], KEY, "differs between the router hosts: clients of the "
                                "virtual address %s send one key to whichever router holds it" % address,
                                "set %s once for every router host, in group_vars/sglang_router.yml" % KEY))
    ports = sorted(set(str(r.get("port")) for r in routers))
    if len(ports) > 1:
        problems.append(problem(routers[0]["inventory_host"], "sglang_router_port", "differs between the router hosts "
                                "(%s): one virtual address has one port" % ", ".join(ports),
                                "set sglang_router_port once for every router host"))
    return {"address": str(address), "version": address.version, "port": routers[0].get("port"),
            "hosts": sorted(given)}, problems
