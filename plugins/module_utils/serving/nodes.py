# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Instances that span several hosts: one ``sglang.launch_server`` per node, one SGLang instance.

A spanning instance is declared once (group_vars) with ``nodes``, its hosts in rank order (``nodes[0]`` is rank 0:
the HTTP API the router gets, the prefill bootstrap server, the dist-init rendezvous). ``gpus`` are per node and the
same on every node; ``tp_size``/``pp_size``/``ep_size``/``attn_dp_size`` are over all nodes (SGLang 0.5.23:
GPUs per node = tp * pp / nnodes). Each host renders the instances whose ``nodes`` contain it; an instance without
``nodes`` is a single-host instance, and one whose ``nodes`` name one host is a single-host instance of that host (so
group_vars can declare every instance of a group, spanning or not).

``resolve`` runs on the controller once every host's instances are normalized: it derives for every node its rank,
the dist-init address every node can reach (rank 0's private address, never loopback), the bootstrap host and the
address SGLang advertises (``SGLANG_HOST_IP``), and returns the cross-node problems, each naming the host whose
variable must change, the variable and the fix.
"""

import ipaddress
import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.pdserve.sglang.plugins.module_utils.problems import problem
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.instances import (
    MODES,
    WILDCARD,
    instance_variable,
    is_int,
    is_loopback,
    nodes_problem,
)

# Rank 0's SIGTERM drains, then broadcasts ShutdownReq to the other ranks and waits this long for them (SGLang
# 0.5.23); ranks > 0 ignore SIGTERM and exit on that broadcast, so their stop timeout covers rank 0's stop and this.
SHUTDOWN_BROADCAST_GRACE = 15
# A host name or address as torch's rendezvous and SGLang's registration take it: no spaces, quotes or ports.
_HOST_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")
# One network interface name as gloo and NCCL take it (gloo refuses NCCL's ^exclusions and comma lists).
_IFNAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@-]{0,14}")
# What must be the same on every node of a spanning instance: it is one instance, declared once.
SAME_ON_EVERY_NODE = ("nodes", "gpus", "tp_size", "pp_size", "ep_size", "attn_dp_size", "dp_size", "port",
                      "bootstrap_port", "dist_init_port", "dist_timeout", "numa_node", "mem_fraction_static",
                      "context_length", "extra_args", "env", "in_service", "advertise_host")


def rank_stop_timeout(timeout_stop_sec: Any) -> Any:
    """TimeoutStopSec of a rank > 0: rank 0's own stop budget plus its shutdown broadcast grace, plus as much again
    as a margin (a rank > 0 stopped first would otherwise be killed before rank 0 told it to exit)."""
    if not is_int(timeout_stop_sec):
        try:
            timeout_stop_sec = int(str(timeout_stop_sec))
        except ValueError:
            return timeout_stop_sec
    return timeout_stop_sec + 2 * SHUTDOWN_BROADCAST_GRACE


def ip_literal(value: Any) -> Optional[Any]:
    """The IP address ``value`` spells exactly (no brackets, no spaces), else None. Never a name lookup."""
    if not isinstance(value, str):
        return None
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return None
    return None if getattr(address, "scope_id", None) else address


def is_host_word(value: Any) -> bool:
    """A host name or an IP address that fits one word of a command line."""
    return ip_literal(value) is not None or (isinstance(value, str) and _HOST_RE.fullmatch(value) is not None)


def declared_elsewhere(raw_list: Any, host: str) -> int:
    """How many entries of a host's instance list span other nodes only (so the host renders none of them)."""
    count = 0
    for raw in raw_list if isinstance(raw_list, (list, tuple)) else []:
        if isinstance(raw, dict) and raw.get("nodes") is not None and nodes_problem(raw["nodes"]) is None \
                and host not in raw["nodes"]:
            count += 1
    return count


def unplaced(host_vars: Dict[str, Dict[str, Any]], members: Dict[str, List[str]],
             group_names: Dict[str, str]) -> List[Dict[str, Any]]:
    """A problem per instance whose ``nodes`` name no host of its mode's group: every host skips it, so it would run
    nowhere, silently (``resolve`` judges the nodes of an instance that some node renders)."""
    problems, seen = [], set()
    for mode in MODES:
        for host in members[mode]:
            raw_list = (host_vars.get(host) or {}).get("sglang_%s_instances" % mode)
            for raw in raw_list if isinstance(raw_list, (list, tuple)) else []:
                if not isinstance(raw, dict) or raw.get("nodes") is None or nodes_problem(raw["nodes"]) is not None:
                    continue
                key = (mode, str(raw.get("name")), tuple(raw["nodes"]))
                if key in seen or any(node in members[mode] for node in raw["nodes"]):
                    continue
                seen.add(key)
                problems.append(problem(host, "sglang_%s_instances[%s].nodes" % (mode, raw.get("name")),
                                        "names %s, none of them a host of group %s, so no host would run %s"
                                        % (", ".join(str(n) for n in raw["nodes"]), group_names[mode], raw.get("name")),
                                        "name hosts of group %s (hosts.yml), rank 0 first: %s"
                                        % (group_names[mode], ", ".join(members[mode]) or "none yet")))
    return problems


def dp_words(words: Any) -> Tuple[Optional[Any], bool]:
    """``(--dp-size value or None, whether --enable-dp-attention is given)`` from a list of extra_args words."""
    size, attention = None, False
    words = [str(w) for w in words] if isinstance(words, (list, tuple)) else []
    for index, word in enumerate(words):
        if word in ("--dp-size", "--dp", "--data-parallel-size") and index + 1 < len(words):
            size = words[index + 1]
        elif word.split("=", 1)[0] in ("--dp-size", "--dp", "--data-parallel-size") and "=" in word:
            size = word.split("=", 1)[1]
        elif word == "--enable-dp-attention":
            attention = True
    try:
        size = int(size) if size is not None else None
    except ValueError:
        pass
    return size, attention


def dp_problems(host: str, inst: Dict[str, Any], model_extra_args: Any = None,
                model_variable: str = "sglang_model_extra_args") -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """``(problems, warnings)`` of data parallelism across nodes: SGLang 0.5.23 refuses ``--dp-size > 1`` with
    ``--nnodes > 1``; ``--dp-size N --enable-dp-attention`` still works but is deprecated for ``--attn-dp-size N``."""
    problems: List[Dict[str, Any]] = []
    warnings: List[Dict[str, Any]] = []
    var = instance_variable(inst)
    sources = [("%s.dp_size" % var, inst.get("dp_size"), False)]
    own_size, own_attention = dp_words(inst.get("extra_args"))
    model_size, model_attention = dp_words(model_extra_args)
    attention = own_attention or model_attention
    sources.append(("%s.extra_args" % var, own_size, own_attention))
    sources.append((model_variable, model_size, model_attention))
    if (inst.get("nnodes") or 1) <= 1:
        return problems, warnings
    for variable, size, _attention in sources:
        if size is None or (is_int(size) and size <= 1):
            continue
        if attention:
            warnings.append(problem(host, variable, "gives --dp-size %s with --enable-dp-attention: SGLang 0.5.23 still "
                                    "takes it as attention DP, but the pair is deprecated" % size,
                                    "write attn_dp_size: %s on the instance (it renders --attn-dp-size %s) and drop "
                                    "--dp-size and --enable-dp-attention" % (size, size)))
        else:
            problems.append(problem(host, variable, "gives --dp-size %s on an instance over %d nodes (%s): SGLang refuses "
                                    "data parallelism across nodes (dp_size > 1 with nnodes > 1)"
                                    % (size, inst["nnodes"], ", ".join(inst.get("nodes") or [])),
                                    "use attention DP instead: attn_dp_size: %s on the instance (--attn-dp-size), or "
                                    "run %s single-host instances behind the router" % (size, size)))
    return problems, warnings


def _reach(inst: Dict[str, Any], address: str) -> str:
    bind = str(inst.get("host") if inst.get("host") is not None else "")
    return str(address) if bind in WILDCARD else bind


def _host_variable(inst: Dict[str, Any]) -> str:
    return inst.get("host_variable") or "sglang_server_host"


def resolve(hosts: Dict[str, Dict[str, Any]], members: Dict[str, List[str]], group_names: Dict[str, str],
            ifnames: Optional[Dict[str, Any]] = None) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """Fill every rank of every spanning instance with its cross-node fields; ``(problems, warnings)``.

    ``hosts``: the topology's host entries (normalized instances, ``address``). ``members``: {mode: hosts of its
    group}. ``ifnames``: {host: sglang_server_net_ifname}. Each rank gets ``dist_init_host`` (rank 0's reachable
    address), ``bootstrap_host`` (prefill: where rank 0 serves the bootstrap), ``advertise_ip`` (``SGLANG_HOST_IP``),
    ``node_addresses`` ({node: advertised IP}) and ``net_ifname`` (GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME, or None).
    """
    problems, warnings = [], []
    bad_ifnames = set()
    spans: Dict[Tuple[str, str], Dict[str, Dict[str, Any]]] = {}  # (mode, name) -> {node: instance}
    for host, entry in hosts.items():
        for mode in MODES:
            for inst in entry.get(mode) or []:
                if inst.get("nodes"):
                    spans.setdefault((mode, inst["name"]), {})[host] = inst
    for (mode, name), by_node in sorted(spans.items()):
        group = group_names[mode]
        # The declaration every node should share: rank 0's copy, else that of the first node that renders it.
        rendered = list(by_node)
        ref_host = min(rendered, key=lambda h: by_node[h]["nodes"].index(h))
        ref = by_node[ref_host]
        nodes = list(ref["nodes"])
        var = instance_variable(ref)
        for index, node in enumerate(nodes):
            if node in nodes[:index]:
                problems.append(problem(ref_host, "%s.nodes" % var, "lists %s twice (ranks %d and %d): one node runs "
                                        "one rank of an instance" % (node, nodes.index(node), index),
                                        "list each host once, in rank order (nodes[0] is rank 0)"))
        for node in dict.fromkeys(nodes):
            if node not in members[mode]:
                problems.append(problem(ref_host, "%s.nodes" % var, "names %s, which is not a host of group %s: its rank "
                                        "would never start and the other ranks would wait for it until dist_timeout"
                                        % (node, group),
                                        "add %s to group %s (hosts.yml) or take it out of nodes" % (node, group)))
            elif node not in by_node:
                problems.append(problem(node, "sglang_%s_instances" % mode, "%s is rank %d of %s (nodes %s as %s declares "
                                        "it) but its own sglang_%s_instances has no %s: a list in host_vars replaces "
                                        "the group_vars one" % (node, nodes.index(node), name, nodes, ref_host, mode, name),
                                        "declare %s once in group_vars and give %s no sglang_%s_instances of its own "
                                        "(or repeat the same entry there)" % (name, node, mode)))
        for host, inst in sorted(by_node.items()):
            if host == ref_host:
                continue
            differ = [key for key in SAME_ON_EVERY_NODE if inst.get(key) != ref.get(key)]
            if "gpus" in differ:
                problems.append(problem(host, "%s.gpus" % var, "GPUs per node differ between the nodes of %s: %s gives "
                                        "%r, %s gives %r" % (name, ref_host, ref.get("gpus"), host, inst.get("gpus")),
                                        "gpus are per node and the same on every node: declare %s once (group_vars) "
                                        "with the GPUs each node gives it" % name))
                differ.remove("gpus")
                if "tp_size" in differ:
                    differ.remove("tp_size")  # derived from gpus
            if differ:
                problems.append(problem(host, var, "is declared differently on %s and %s (%s): the nodes of one instance "
                                        "must share one declaration" % (ref_host, host, ", ".join(differ)),
                                        "declare %s once in group_vars, not per host" % name))
        nnodes = len(nodes)
        # As the inventory gave them (is_int judges them).
        tp: Any = ref.get("tp_size")
        pp: Any = ref.get("pp_size") or 1
        if is_int(tp) and is_int(pp):
            if (tp * pp) % nnodes:
                problems.append(problem(ref_host, "%s.tp_size" % var, "tp_size x pp_size = %d x %d = %d is not divisible "
                                        "by the %d nodes %s (SGLang refuses it)" % (tp, pp, tp * pp, nnodes, nodes),
                                        "make tp_size x pp_size a multiple of %d: len(gpus) x nodes, i.e. drop tp_size "
                                        "(it defaults to %d)" % (nnodes, len(ref.get("gpus") or []) * nnodes)))
            elif isinstance(ref.get("gpus"), list) and ref["gpus"] and tp * pp // nnodes != len(ref["gpus"]):
                problems.append(problem(ref_host, "%s.gpus" % var, "lists %d GPU(s) per node but tp_size x pp_size / "
                                        "nodes = %d x %d / %d = %d" % (len(ref["gpus"]), tp, pp, nnodes, tp * pp // nnodes),
                                        "give each node %d GPUs, or set tp_size to %d (len(gpus) x nodes / pp_size)"
                                        % (tp * pp // nnodes, len(ref["gpus"]) * nnodes // pp)))
        attn: Any = ref.get("attn_dp_size")
        if is_int(attn) and attn > 1 and is_int(tp) and tp % attn:
            problems.append(problem(ref_host, "%s.attn_dp_size" % var, "is %d, which does not divide tp_size %d"
                                    % (attn, tp), "choose a divisor of %d (attention DP splits the TP group)" % tp))
        if ref.get("dist_init_port") is None:
            problems.append(problem(ref_host, "%s.dist_init_port" % var, "is required on an instance over several nodes: "
                                    "every rank meets rank 0 at nodes[0]:dist_init_port",
                                    "set dist_init_port, a free port on %s, e.g. 30335" % nodes[0]))
        found, warned = dp_problems(ref_host, ref)
        problems.extend(found)
        warnings.extend(warned)
        # Rank 0's address: where every rank meets (dist-init), where prefill ranks register and decode reads the
        # bootstrap. Nothing of it when rank 0 itself is not rendered (a problem above says why).
        rank0 = by_node.get(nodes[0])
        dist_host = None
        if rank0 is not None:
            address = hosts[nodes[0]]["address"]
            dist_host = _reach(rank0, address)
            others = [n for n in dict.fromkeys(nodes) if n != nodes[0]]
            if is_loopback(dist_host):
                problems.append(problem(nodes[0], _host_variable(rank0) if _reach(rank0, address) == str(rank0.get("host"))
                                        else "ansible_host", "rank 0 of %s on %s serves on %s, a loopback address: the "
                                        "other nodes (%s) cannot reach its dist-init %s:%s%s"
                                        % (name, nodes[0], dist_host, ", ".join(others) or "none", dist_host,
                                           rank0.get("dist_init_port"),
                                           " nor its bootstrap port" if mode == "prefill" else ""),
                                        "set sglang_server_host of %s to its private address, which every node of %s "
                                        "reaches (never loopback)" % (nodes[0], name)))
                dist_host = None
            elif not is_host_word(dist_host):
                problems.append(problem(nodes[0], _host_variable(rank0) if str(rank0.get("host")) not in WILDCARD
                                        else "ansible_host", "gives rank 0 of %s the address %r, which is neither an IP "
                                        "address nor a host name (it becomes --dist-init-addr)" % (name, dist_host),
                                        "set sglang_server_host of %s to its private IP address" % nodes[0]))
                dist_host = None
        addresses: Dict[str, Optional[str]] = {}
        for host, inst in by_node.items():
            advertise: Optional[str] = _reach(inst, hosts[host]["address"])
            literal = ip_literal(advertise)
            if host == nodes[0] and rank0 is not None and dist_host is None:
                advertise = None  # rank 0's address is wrong already (above)
            elif literal is None or literal.is_loopback or literal.is_unspecified:
                problems.append(problem(host, _host_variable(inst) if str(inst.get("host")) not in WILDCARD
                                        else "ansible_host", "gives rank %d of %s the address %r to advertise "
                                        "(SGLANG_HOST_IP: where the other nodes and the KV transfer reach it), which "
                                        "is not an IP address another host can reach"
                                        % (inst["node_rank"], name, advertise),
                                        "set sglang_server_host of %s to its private IP address (or bind 0.0.0.0 with "
                                        "ansible_host its IP address)" % host))
                advertise = None
            addresses[host] = advertise
        for host, inst in sorted(by_node.items()):
            ifname = (ifnames or {}).get(host)
            if ifname in (None, ""):
                ifname = None
            elif not isinstance(ifname, str) or not _IFNAME_RE.fullmatch(ifname):
                if host not in bad_ifnames:
                    bad_ifnames.add(host)
                    problems.append(problem(host, "sglang_server_net_ifname", "is %r, not one network interface name "
                                            "(it becomes GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME; gloo crashes on "
                                            "NCCL-style lists such as ^lo,docker0)" % (ifname,),
                                            "name the one interface of sglang_server_host on %s (ip -brief address), "
                                            "e.g. eth1, or leave it empty" % host))
                ifname = None
            inst["net_ifname"] = ifname
            inst["dist_init_host"] = dist_host
            inst["bootstrap_host"] = dist_host if mode == "prefill" else None
            inst["advertise_ip"] = addresses[host]
            inst["node_addresses"] = dict((n, addresses.get(n)) for n in nodes if n in addresses)
    return problems, warnings
