# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The README's ports table as one host's nftables ruleset: pure functions, unit-tested.

From the serving topology (``build_topology``) and the monitoring layout, the ruleset of ONE host: a table of its own,
``table inet pdserve``, whose input chain has policy accept and governs only the collection's ports. Loopback (this
host's own processes) is always allowed, then for each governed port the peers allowed by the table, by address,
then a TCP reset for everyone else:

- the router port: everyone (clients; the router checks its keys);
- the router's metrics port (only when not bound to loopback): Prometheus hosts;
- each server instance's HTTP port: router hosts and Prometheus hosts;
- each prefill instance's bootstrap port: decode hosts (every node of a decode instance);
- each instance's dist-init port, and with attention DP dist-init+1..+6 and +13: the other nodes of that instance
  (rank 0 serves them; a single-host instance has none, so loopback only);
- a prefill instance over several hosts: its bootstrap port (rank 0) also to its other nodes (each rank registers);
- the node exporter port, and the GPU exporter port on GPU hosts: Prometheus hosts;
- VRRP (IP protocol 112) on a router host of a shared virtual address: the other router hosts; dropped from anyone
  else (VRRP version 3 has no authentication).

A server's HTTP port and the exporters bound to loopback need no rule (no other host reaches them); bootstrap and
dist-init are governed whatever address they are given.

Not governed: the NIXL/UCX KV transfer ports. SGLang picks them at start (ZMQ on free ports, RDMA or TCP on
ephemeral ports) and none is configurable, so only a default-drop policy could restrict them, and this table never
drops what it does not name. Everything else on the host (SSH included) is left alone.

No name is resolved: a peer is allowed by the addresses the inventory gives it (``sglang_firewall_host_addresses``,
else ``ansible_host``); a peer known only by a name is a problem ``{host, variable, message, fix}``. The text is
sorted, so a rerun writes the same file.
"""

import ipaddress
import re
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple, Union

from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring.targets import exporter_bind
from ansible_collections.pdserve.sglang.plugins.module_utils.problems import problem
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.instances import MODES, attn_dp_ports, is_int, is_loopback

TABLE = "pdserve"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.,;:()/ -]")
ADDRESSES_VARIABLE = "sglang_firewall_host_addresses"
# The rule of an IP protocol rather than a TCP port: keepalived's VRRP (IP protocol 112) between the router hosts.
VRRP = "vrrp"
_VRRP_PROTOCOL = 112
SWITCH = "sglang_firewall_enabled"
DEFAULTS: Dict[str, Any] = {
    "prometheus_hosts": [],
    "gpu_hosts": [],
    "node_exporter_port": None,
    "gpu_exporter_port": None,
    # {host: monitoring_exporter_host}: where a host's exporters listen (the monitoring role's rule).
    "exporter_hosts": {},
}


def peer_addresses(host_vars: Dict[str, Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """{host: {addresses, variable}}: where each host's connections come from, and the variable that says so.

    ``sglang_firewall_host_addresses`` when set (a host whose traffic to the others leaves from another address than
    the one Ansible reaches it at), else ``ansible_host``, else the inventory name (which is then no address)."""
    out = {}
    for host, hv in (host_vars or {}).items():
        hv = hv or {}
        given = hv.get(ADDRESSES_VARIABLE)
        if given not in (None, "", []):
            values = list(given) if isinstance(given, (list, tuple)) else [given]
            out[host] = {"addresses": values, "variable": ADDRESSES_VARIABLE}
        else:
            out[host] = {"addresses": [hv.get("ansible_host") or host], "variable": "ansible_host"}
    return out


def _literal(value: Any) -> Optional[Any]:
    """The IP address ``value`` spells (brackets allowed), else None. Never a name lookup."""
    if not isinstance(value, str):
        return None
    try:
        # No stripping of spaces or line breaks: a value is an address exactly or not at all.
        address = ipaddress.ip_address(value[1:-1] if value.startswith("[") and value.endswith("]") else value)
    except ValueError:
        return None
    # A scoped IPv6 address (fe80::1%eth0) names an interface, which a saddr set cannot hold.
    return None if getattr(address, "scope_id", None) else address


def _instance_nodes(inst: Dict[str, Any]) -> List[str]:
    """The other nodes of an instance over several hosts (none for a single-host instance: its dist-init is loopback
    only). They reach rank 0's dist-init and attention DP ports, and prefill's bootstrap port (each prefill rank
    registers there)."""
    return sorted(set(n for n in inst.get("nodes") or [] if n != inst.get("inventory_host")))


def _rows(topology: Dict[str, Any], host: str, settings: Dict[str, Any]) -> List[Dict[str, Any]]:
    """[{port, what, open, peers: [inventory hosts]}] of ``host``, before addresses."""
    entry = (topology.get("hosts") or {}).get(host) or {}
    routers = sorted(r["inventory_host"] for r in topology.get("routers") or [])
    # Every node of a decode instance reads the prefill bootstrap, rank 0 or not.
    decode = sorted(h for h, e in (topology.get("hosts") or {}).items() if e.get("decode"))
    prometheus = sorted(set(settings["prometheus_hosts"]))
    rows = []
    # A listener on loopback is out of reach of other hosts already: no rule. Bootstrap and dist-init are always
    # governed: whatever host SGLang is given, torch's TCPStore server binds the wildcard (pytorch/pytorch#173909),
    # and the bootstrap server's bind is SGLang's choice, not a flag.
    exporters_local = is_loopback(exporter_bind(topology, {"monitoring_hosts": prometheus,
                                                           "exporter_hosts": settings["exporter_hosts"]}, host))
    router = entry.get("router")
    if router:
        rows.append({"port": router.get("port"), "what": "router (clients)", "open": True, "peers": []})
        if not is_loopback(router.get("prometheus_host")):
            rows.append({"port": router.get("prometheus_port"), "what": "router metrics (Prometheus hosts)",
                         "open": False, "peers": prometheus})
    for mode in MODES:
        for inst in entry.get(mode) or []:
            name = inst.get("name")
            if not is_loopback(inst.get("host")):
                rows.append({"port": inst.get("port"), "what": "%s HTTP (router and Prometheus hosts)" % name,
                             "open": False, "peers": sorted(set(routers + prometheus))})
            if inst.get("node_rank"):
                continue  # bootstrap, dist-init and attention DP are served by rank 0 only
            nodes = _instance_nodes(inst)
            if mode == "prefill":
                rows.append({"port": inst.get("bootstrap_port"),
                             "what": "%s bootstrap (decode hosts%s)" % (name, ", its nodes" if nodes else ""),
                             "open": False, "peers": sorted(set(decode + nodes))})
            if inst.get("dist_init_port") is not None:
                rows.append({"port": inst.get("dist_init_port"), "what": "%s dist-init (its nodes)" % name,
                             "open": False, "peers": nodes})
            for port, offset in attn_dp_ports(inst):
                rows.append({"port": port, "what": "%s attention DP dist-init+%d (its nodes)" % (name, offset),
                             "open": False, "peers": nodes})
    if entry and not exporters_local:
        rows.append({"port": settings["node_exporter_port"], "what": "node exporter (Prometheus hosts)",
                     "open": False, "peers": prometheus})
    if host in settings["gpu_hosts"] and not exporters_local:
        rows.append({"port": settings["gpu_exporter_port"], "what": "GPU exporter (Prometheus hosts)",
                     "open": False, "peers": prometheus})
    return [r for r in rows if is_int(r["port"]) and 1 <= r["port"] <= 65535]


def _vrrp_peers(topology: Dict[str, Any], host: str) -> Optional[Dict[str, Any]]:
    """A router host of a shared virtual address hears VRRP from the other router hosts only: VRRP version 3 has no
    authentication, so an advertisement from anyone else could take the routers' address."""
    shared = topology.get("router_address") or {}
    if host not in (shared.get("hosts") or []):
        return None
    return {"what": ["VRRP of the routers' virtual address %s (the other router hosts)" % shared.get("address")],
            "open": False, "peers": set(shared["hosts"])}


def _merge(rows: Iterable[Dict[str, Any]]) -> Dict[int, Dict[str, Any]]:
    """One rule group per port (two rows of one port: the union of what they allow)."""
    ports = {}  # type: Dict[int, Dict[str, Any]]
    for row in rows:
        merged = ports.setdefault(row["port"], {"what": [], "open": False, "peers": set()})
        merged["what"].append(row["what"])
        merged["open"] = merged["open"] or row["open"]
        merged["peers"].update(row["peers"])
    return ports


def host_ruleset(topology: Dict[str, Any], host: str, addresses: Dict[str, Dict[str, Any]],
                 settings: Optional[Dict[str, Any]] = None) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """``(rules, problems)`` of ``host``: rules ``{port, what, open, v4, v6}`` sorted by port.

    ``addresses``: ``peer_addresses()`` of every host that may be a peer. ``settings``: prometheus_hosts, gpu_hosts,
    node_exporter_port, gpu_exporter_port (this host's)."""
    settings = dict(DEFAULTS, **dict((k, v) for k, v in (settings or {}).items() if v is not None))
    problems = []
    unusable = {}  # type: Dict[str, Dict[str, Any]]
    rules = []
    # (port, merged): the TCP ports, then VRRP (a str).
    groups: List[Tuple[Union[int, str], Dict[str, Any]]] = sorted(_merge(_rows(topology, host, settings)).items())
    vrrp = _vrrp_peers(topology, host)
    if vrrp is not None:
        groups.append((VRRP, vrrp))
    for port, merged in groups:
        v4: Set[Any] = set()
        v6: Set[Any] = set()
        for peer in sorted(merged["peers"]):
            # Traffic from this host itself arrives on lo.
            if peer == host:
                continue
            given = addresses.get(peer) or {"addresses": [peer], "variable": "ansible_host"}
            for value in given["addresses"]:
                literal = _literal(value)
                if literal is None or literal.is_unspecified:
                    bad = unusable.setdefault(peer, {"variable": given["variable"], "values": [], "ports": []})
                    if value not in bad["values"]:
                        bad["values"].append(value)
                    where = "%s (%s)" % (port, ", ".join(merged["what"]))
                    if where not in bad["ports"]:
                        bad["ports"].append(where)
                elif not literal.is_loopback:
                    (v4 if literal.version == 4 else v6).add(literal)
        rules.append({"port": port, "what": merged["what"], "open": merged["open"],
                      "v4": [str(a) for a in sorted(v4)], "v6": [str(a) for a in sorted(v6)]})
    problems.extend(_node_source_problems(topology, host, addresses))
    for peer in sorted(unusable):
        bad = unusable[peer]
        problems.append(problem(
            peer, bad["variable"],
            "is %s, not an IP address: the firewall of %s allows %s by address on port%s %s and resolves no names"
            % (", ".join(repr(v) for v in bad["values"]), host, peer, "s" if len(bad["ports"]) > 1 else "",
               "; ".join(bad["ports"])),
            "set ansible_host of %s to its IP address (or %s to the addresses its connections come from), or set "
            "%s: false for %s if its firewall is managed elsewhere" % (peer, ADDRESSES_VARIABLE, SWITCH, host)))
    return rules, problems


def _node_source_problems(topology, host, addresses):
    """A node of an instance over several hosts connects to rank 0 (here) from the address it advertises (its
    sglang_server_host, where its rank listens): the firewall must let that address in, or the rendezvous waits until
    dist_timeout."""
    problems = []
    entry = (topology.get("hosts") or {}).get(host) or {}
    seen = set()
    for mode in MODES:
        for inst in entry.get(mode) or []:
            if inst.get("node_rank") or not inst.get("nodes"):
                continue
            for peer in _instance_nodes(inst):
                source = (inst.get("node_addresses") or {}).get(peer)
                given = addresses.get(peer) or {"addresses": [peer], "variable": "ansible_host"}
                allowed = [str(_literal(v)) for v in given["addresses"] if _literal(v) is not None]
                if not source or not allowed or _literal(source) is None or str(_literal(source)) in allowed \
                        or (peer, source) in seen:
                    continue
                seen.add((peer, source))
                problems.append(problem(
                    peer, ADDRESSES_VARIABLE,
                    "the firewall of %s lets %s reach rank 0 of %s (dist-init %s%s) from %s (%s), but %s's rank "
                    "connects from %s, the address it advertises (sglang_server_host): its rendezvous would be "
                    "refused" % (host, peer, inst.get("name"), inst.get("dist_init_port"),
                                 ", bootstrap %s" % inst.get("bootstrap_port") if mode == "prefill" else "",
                                 ", ".join(allowed), given["variable"], peer, source),
                    "set %s of %s to the addresses its connections come from, e.g. [%s]"
                    % (ADDRESSES_VARIABLE, peer, ", ".join(sorted(set(allowed + [str(_literal(source))]))))))
    return problems


def render(host: str, rules: List[Dict[str, Any]]) -> str:
    """The whole ruleset file of ``host`` (``nft -f`` replaces the table in one transaction)."""
    lines = [
        "#!/usr/sbin/nft -f",
        "# Written by pdserve.sglang (role sglang_firewall) for %s; edits are overwritten." % host,
        "# The collection's own ports only, in a table of its own: policy accept, so every other port (SSH",
        "# included) and every other table is left as it is. NIXL/UCX KV transfer ports are not governed (SGLang",
        "# picks them at start).",
        "# Creating the table first makes the delete succeed on a host that has none yet.",
        "table inet %s" % TABLE,
        "delete table inet %s" % TABLE,
        "",
        "table inet %s {" % TABLE,
        "\tchain input {",
        "\t\ttype filter hook input priority filter; policy accept;",
        "\t\tiif lo accept",
        "\t\t# Replies to this host's own connections (a governed port number may be a client's source port).",
        "\t\tct state established,related accept",
    ]
    for rule in rules:
        # Instance names come from the inventory: only plain characters reach the comment, never a line break.
        lines.append("\t\t# %s: %s" % (rule["port"], _UNSAFE.sub("?", "; ".join(rule["what"]))))
        if rule["port"] == VRRP:
            lines.extend(_vrrp_lines(rule))
            continue
        if rule["open"]:
            lines.append("\t\ttcp dport %s accept" % rule["port"])
            continue
        if rule["v4"]:
            lines.append("\t\ttcp dport %s ip saddr { %s } accept" % (rule["port"], ", ".join(rule["v4"])))
        if rule["v6"]:
            lines.append("\t\ttcp dport %s ip6 saddr { %s } accept" % (rule["port"], ", ".join(rule["v6"])))
        lines.append("\t\ttcp dport %s reject with tcp reset" % rule["port"])
    lines += ["\t}", "}", ""]
    return "\n".join(lines)


def _vrrp_lines(rule: Dict[str, Any]) -> List[str]:
    lines = []
    if rule["v4"]:
        lines.append("\t\tmeta l4proto %d ip saddr { %s } accept" % (_VRRP_PROTOCOL, ", ".join(rule["v4"])))
    if rule["v6"]:
        lines.append("\t\tmeta l4proto %d ip6 saddr { %s } accept" % (_VRRP_PROTOCOL, ", ".join(rule["v6"])))
    lines.append("\t\tmeta l4proto %d drop" % _VRRP_PROTOCOL)
    return lines


def firewall_plan(topology: Dict[str, Any], host: str, host_vars: Dict[str, Dict[str, Any]],
                  settings: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """``{rules, content, problems}`` of ``host`` from the inventory's variables of every peer."""
    rules, problems = host_ruleset(topology, host, peer_addresses(host_vars), settings)
    return {"rules": rules, "content": render(host, rules), "problems": problems}
