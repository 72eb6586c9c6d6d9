# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Prefill and decode instances: the inventory's lists checked for shape and filled with defaults.

An instance is one ``sglang.launch_server`` process (one systemd unit). ``normalize`` never raises on
a bad inventory: it returns the instances it could read and one problem per mistake, each naming the
variable to fix, so the preflight can list every mistake at once.
"""

import ipaddress
import re
from typing import Any, Dict, List, Optional, Tuple, cast

from ansible_collections.pdserve.sglang.plugins.module_utils.problems import control_character, env_problems, problem, suggest
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.caches import CACHE_VARIABLES

MODES = ("prefill", "decode")
UNIT_PREFIX = "sglang-"
ROUTER_UNIT = "sglang-router.service"
# SGLang's default --disaggregation-bootstrap-port: a prefill instance without one listens there.
DEFAULT_BOOTSTRAP_PORT = 8998
WILDCARD = ("0.0.0.0", "::", "*", "")
# Attention DP (attn_dp_size > 1) binds on rank 0's host ports right above dist-init (SGLang 0.5.23 uses +1..+6 and
# +13): the whole range +1..+13 is kept free of other ports; the firewall opens the ports used.
ATTN_DP_RESERVED = tuple(range(1, 14))
ATTN_DP_USED = (1, 2, 3, 4, 5, 6, 13)


def is_loopback(host: Any) -> bool:
    """127.0.0.0/8, ::1 or localhost: reachable only from the host itself."""
    host = str(host or "").strip("[]")
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# Matched whole (fullmatch): a $-anchored pattern would let a trailing newline through.
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_INTEGER_KEYS = ("port", "bootstrap_port", "dist_init_port", "tp_size", "numa_node", "context_length")
# Parallelism over all nodes of an instance (SGLang's --pp-size, --ep-size, --attn-dp-size, --dp-size) and the
# rendezvous timeout of an instance over several nodes; each at least 1.
_SIZE_KEYS = ("pp_size", "ep_size", "attn_dp_size", "dp_size", "dist_timeout")
_HOST_KEYS = ("host", "advertise_host", "dist_init_host")
KNOWN_KEYS = ("name", "gpus", "mem_fraction_static", "extra_args", "env", "in_service", "nodes") + _INTEGER_KEYS \
    + _SIZE_KEYS + _HOST_KEYS
# An instance over several nodes waits this long for every rank (--dist-timeout, seconds) unless it says otherwise.
DEFAULT_DIST_TIMEOUT = 1800


def nodes_problem(nodes: Any) -> Optional[str]:
    """Why an instance's ``nodes`` cannot be read (None when it is a non-empty list of inventory host names)."""
    if not isinstance(nodes, (list, tuple)) or not nodes:
        return "must be a non-empty list of inventory host names in rank order, got %r" % (nodes,)
    for node in nodes:
        if not isinstance(node, str) or not node.strip() or node != node.strip() or control_character(node):
            return "holds %r, which is not an inventory host name" % (node,)
    return None


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def unit_name(name: str) -> str:
    return "%s%s.service" % (UNIT_PREFIX, name)


def instances_variable(mode: Optional[str]) -> str:
    return "sglang_%s_instances" % mode


def instance_variable(inst: Dict[str, Any]) -> str:
    """How messages name an instance: ``sglang_decode_instances[decode-0]``."""
    return "%s[%s]" % (instances_variable(inst.get("mode")), inst.get("name"))


def url_host(host: str) -> str:
    """A host as it appears in a URL (IPv6 literals in brackets)."""
    host = str(host)
    if ":" in host and not host.startswith("["):
        return "[%s]" % host
    return host


def _type_name(value):
    """The YAML-level type of a value (Ansible may hand over subclasses of the builtin types)."""
    for kind, name in ((bool, "bool"), (int, "int"), (float, "float"), (str, "str"), (dict, "mapping"),
                       ((list, tuple), "list")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _check_fields(raw, var, host, problems):
    for key in raw:
        if key not in KNOWN_KEYS:
            problems.append(problem(host, "%s.%s" % (var, key), "unknown key %r%s" % (key, suggest(key, KNOWN_KEYS)),
                                    "use one of: %s (flags SGLang has no key for go in extra_args)"
                                    % ", ".join(sorted(KNOWN_KEYS))))
    for key in _INTEGER_KEYS:
        value = raw.get(key)
        if value is None:
            continue
        if not is_int(value):
            problems.append(problem(host, "%s.%s" % (var, key), "must be an integer, got %s %r" % (_type_name(value), value),
                                    "write it without quotes, e.g. %s: 30000" % key if "port" in key else
                                    "write a whole number without quotes"))
        elif key.endswith("port") and not 1 <= value <= 65535:
            problems.append(problem(host, "%s.%s" % (var, key), "must be a port between 1 and 65535, got %r" % value,
                                    "choose a free TCP port"))
        elif key == "tp_size" and value < 1:
            problems.append(problem(host, "%s.tp_size" % var, "must be at least 1, got %r" % value,
                                    "drop tp_size: it defaults to the number of GPUs"))
        elif key == "numa_node" and value < 0:
            problems.append(problem(host, "%s.numa_node" % var, "must be a NUMA node number (>= 0), got %r" % value,
                                    "use a node of the host (numactl --hardware) or drop numa_node"))
        elif key == "context_length" and value <= 0:
            problems.append(problem(host, "%s.context_length" % var, "must be a positive number of tokens, got %r" % value,
                                    "drop it to use sglang_model_context_length"))
    for key in _SIZE_KEYS:
        value = raw.get(key)
        if value is not None and (not is_int(value) or value < 1):
            problems.append(problem(host, "%s.%s" % (var, key), "must be a whole number of at least 1, got %s %r"
                                    % (_type_name(value), value), "write it without quotes, e.g. %s: 2" % key))
    for key in _HOST_KEYS:
        value = raw.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip() or control_character(value)
                                  or any(c.isspace() for c in value)):
            problems.append(problem(host, "%s.%s" % (var, key), "must be a host name or address, got %s %r"
                                    % (_type_name(value), value), "write an address such as 10.0.0.11"))
    if "port" not in raw or raw.get("port") is None:
        problems.append(problem(host, "%s.port" % var, "is required", "give the instance its HTTP port, e.g. port: 30000"))
    gpus = raw.get("gpus")
    if gpus is not None:
        if not isinstance(gpus, (list, tuple)) or any(not is_int(g) or g < 0 for g in gpus):
            problems.append(problem(host, "%s.gpus" % var, "must be a list of GPU indexes (integers >= 0), got %r" % (gpus,),
                                    "write it as a list, e.g. gpus: [0, 1, 2, 3]"))
        elif len(set(gpus)) != len(gpus):
            problems.append(problem(host, "%s.gpus" % var, "lists a GPU twice: %r" % (list(gpus),),
                                    "list each GPU once"))
    in_service = raw.get("in_service")
    if in_service is not None and not isinstance(in_service, bool):
        problems.append(problem(host, "%s.in_service" % var, "must be true or false, got %s %r"
                                % (_type_name(in_service), in_service),
                                "write in_service: false (unquoted) to keep the instance out of every router"))
    mem = raw.get("mem_fraction_static")
    if mem is not None and (isinstance(mem, bool) or not isinstance(mem, (int, float)) or not 0 < mem < 1):
        problems.append(problem(host, "%s.mem_fraction_static" % var,
                                "must be a number strictly between 0 and 1, got %r" % (mem,),
                                "e.g. 0.85 (the share of GPU memory for weights and KV cache)"))
    extra = raw.get("extra_args")
    if extra is not None and (not isinstance(extra, (list, tuple))
                              or any(isinstance(a, (dict, list, tuple)) or a is None for a in extra)):
        problems.append(problem(host, "%s.extra_args" % var, "must be a list of strings, got %r" % (extra,),
                                "one word per item, e.g. [--chunked-prefill-size, 8192]"))
    elif extra is not None:
        for index, word in enumerate(extra):
            if control_character(word):
                problems.append(problem(host, "%s.extra_args[%d]" % (var, index), "holds the control character %r, which "
                                        "would end or cut its line in the unit" % control_character(word),
                                        "one word per item, on one line"))
    env = raw.get("env")
    if env is not None and (not isinstance(env, dict)
                            or any(isinstance(v, (dict, list, tuple)) or v is None for v in env.values())):
        problems.append(problem(host, "%s.env" % var, "must be a mapping of variable names to values, got %r" % (env,),
                                "e.g. env: {UCX_NET_DEVICES: mlx5_0:1}"))
    elif isinstance(env, dict):
        problems.extend(env_problems(host, "%s.env" % var, env))
        for name in sorted(n for n in env if n in CACHE_VARIABLES):
            problems.append(problem(host, "%s.env.%s" % (var, name), "is set by the collection for each instance (its own "
                                    "compile caches, sglang_server_cache_root)", "leave it out of the instance's env"))


def normalize(raw_list: Any, mode: str, inventory_host: str, server_host: str = "127.0.0.1",
              metrics: bool = True) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """``(instances, problems)`` for one host's ``sglang_<mode>_instances``.

    Instances get every key: mode, unit, host (the bind address, ``server_host`` when unset),
    bootstrap_port (prefill: SGLang's default 8998 when unset, so clashes are visible), dist_init_host
    (loopback), gpus ([]), tp_size (len(gpus), at least 1), numa_node, mem_fraction_static,
    context_length, advertise_host, extra_args ([]), env ({}), metrics and inventory_host.
    Values of the wrong type are kept as given (and reported); entries that are not mappings are dropped.
    """
    variable = instances_variable(mode)
    problems: List[Dict[str, Any]] = []
    if raw_list is None:
        return [], problems
    if not isinstance(raw_list, (list, tuple)):
        problems.append(problem(inventory_host, variable, "must be a list of instances, got %s %r"
                                % (_type_name(raw_list), raw_list),
                                "write one mapping per instance: - {name: %s, port: 30000, gpus: [0]}" % mode))
        return [], problems
    instances = []
    for index, raw in enumerate(raw_list):
        if not isinstance(raw, dict):
            problems.append(problem(inventory_host, "%s[%d]" % (variable, index),
                                    "must be a mapping (name, port, gpus, ...), got %s %r" % (_type_name(raw), raw),
                                    "write the instance as a mapping, e.g. {name: %s, port: 30000}" % mode))
            continue
        name = raw.get("name")
        var = "%s[%s]" % (variable, name if name is not None else "#%d" % index)
        nodes = raw.get("nodes")
        if nodes is not None:
            why = nodes_problem(nodes)
            if why:
                problems.append(problem(inventory_host, "%s.nodes" % var, why,
                                        "list the instance's hosts by inventory name, rank 0 first, e.g. nodes: "
                                        "[gpu-a, gpu-b]; or drop nodes for an instance on this host only"))
                continue
            if inventory_host not in nodes:
                # Another node's rank (or another host's instance): this host renders nothing of it.
                continue
            # One node: a single-host instance of that host, declared with the group's others (group_vars).
            nodes = list(nodes) if len(nodes) > 1 else None
            if nodes and raw.get("dist_init_host") is not None:
                problems.append(problem(inventory_host, "%s.dist_init_host" % var, "is set on an instance over several "
                                        "nodes, whose dist-init address is rank 0's (%s): sglang_server_host of %s"
                                        % (nodes[0], nodes[0]),
                                        "drop dist_init_host; set sglang_server_host of %s to the private address "
                                        "every node reaches" % nodes[0]))
        if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
            problems.append(problem(inventory_host, "%s.name" % var, "is %r, not a valid instance name" % (name,),
                                    "use letters, digits, '.', '_' or '-' (the unit is sglang-<name>.service)"))
        _check_fields(raw, var, inventory_host, problems)
        gpus = raw.get("gpus")
        gpus = list(gpus) if isinstance(gpus, (list, tuple)) else ([] if gpus is None else gpus)
        inst: Dict[str, Any] = {
            "name": name if isinstance(name, str) else str(name),
            "mode": mode,
            "host": raw.get("host") or server_host or "127.0.0.1",
            "port": raw.get("port"),
            "bootstrap_port": raw.get("bootstrap_port"),
            "dist_init_host": raw.get("dist_init_host") or "127.0.0.1",
            "dist_init_port": raw.get("dist_init_port"),
            "gpus": gpus,
            "tp_size": raw.get("tp_size"),
            "numa_node": raw.get("numa_node"),
            "mem_fraction_static": raw.get("mem_fraction_static"),
            "context_length": raw.get("context_length"),
            "advertise_host": raw.get("advertise_host"),
            # The variable behind "host", for messages about this host's address.
            "host_variable": "%s.host" % var if raw.get("host") else "sglang_server_host",
            # Over several nodes: the hosts in rank order, their number and this host's rank (1 and 0 otherwise).
            "nodes": nodes,
            "nnodes": len(nodes) if nodes else 1,
            "node_rank": nodes.index(inventory_host) if nodes else 0,
            "pp_size": raw.get("pp_size"),
            "ep_size": raw.get("ep_size"),
            "attn_dp_size": raw.get("attn_dp_size"),
            "dp_size": raw.get("dp_size"),
            "dist_timeout": (raw.get("dist_timeout") or DEFAULT_DIST_TIMEOUT) if nodes else raw.get("dist_timeout"),
            "extra_args": list(raw["extra_args"]) if isinstance(raw.get("extra_args"), (list, tuple)) else (raw.get("extra_args") or []),
            "env": dict(raw["env"]) if isinstance(raw.get("env"), dict) else (raw.get("env") or {}),
            "metrics": bool(metrics),
            # False: deployed and waited for, but no router serves it (the router's worker set leaves it out).
            "in_service": raw.get("in_service") is not False,
            "inventory_host": inventory_host,
        }
        inst["unit"] = unit_name(inst["name"])
        if (is_int(inst["attn_dp_size"]) and inst["attn_dp_size"] > 1 and is_int(inst["dist_init_port"])
                and inst["dist_init_port"] + ATTN_DP_RESERVED[-1] > 65535):
            problems.append(problem(inventory_host, "%s.dist_init_port" % var, "is %d, but attention DP needs the ports "
                                    "up to dist_init_port+%d, past 65535" % (inst["dist_init_port"], ATTN_DP_RESERVED[-1]),
                                    "choose a dist_init_port of at most %d" % (65535 - ATTN_DP_RESERVED[-1])))
        if mode == "prefill" and inst["bootstrap_port"] is None:
            inst["bootstrap_port"] = DEFAULT_BOOTSTRAP_PORT
        local = max(len(gpus), 1) if isinstance(gpus, list) else 1
        pp = inst["pp_size"] if is_int(inst["pp_size"]) and inst["pp_size"] >= 1 else 1
        if inst["tp_size"] is None:
            # tp x pp = GPUs per node x nodes (one node for a single-host instance).
            inst["tp_size"] = max(local * inst["nnodes"] // pp, 1)
        elif nodes:
            pass  # judged over the nodes (serving/nodes.py)
        elif (is_int(inst["tp_size"]) and isinstance(gpus, list) and gpus and inst["pp_size"] is not None
              and inst["tp_size"] * pp != len(gpus)):
            problems.append(problem(inventory_host, "%s.tp_size" % var, "x pp_size is %s x %s but gpus lists %d GPU(s) %r"
                                    % (inst["tp_size"], pp, len(gpus), gpus),
                                    "make tp_size x pp_size equal to the number of GPUs"))
        elif (is_int(inst["tp_size"]) and isinstance(gpus, list) and gpus and inst["pp_size"] is None
              and inst["tp_size"] != len(gpus)):
            problems.append(problem(inventory_host, "%s.tp_size" % var, "is %s but gpus lists %d GPU(s) %r"
                                    % (inst["tp_size"], len(gpus), gpus),
                                    "make tp_size equal to the number of GPUs (or drop tp_size: it defaults to len(gpus))"))
        instances.append(inst)
    return instances, problems


def host_problems(inventory_host: str, instances: List[Dict[str, Any]], router: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
    """Problems between the instances of one host (both modes) and its router, independent of the host's state.

    Unique names, one GPU per instance, one port per purpose, no instance named like the router unit.
    """
    problems = []
    names: Dict[Any, Dict[str, Any]] = {}
    for inst in instances:
        name = inst.get("name")
        if name in names:
            problems.append(problem(inventory_host, instance_variable(inst), "instance name %r is used by %s and %s"
                                    % (name, instance_variable(names[name]), instance_variable(inst)),
                                    "names must be unique per host (they name the units)"))
        else:
            names[name] = inst
        if router is not None and inst.get("unit") == ROUTER_UNIT:
            problems.append(problem(inventory_host, "%s.name" % instance_variable(inst),
                                    "is named 'router', which clashes with the router unit %s" % ROUTER_UNIT,
                                    "rename the instance"))
    users: Dict[Any, Dict[str, Any]] = {}
    for inst in instances:
        gpus = cast(List[Any], inst.get("gpus")) if isinstance(inst.get("gpus"), list) else []
        # One problem per pair of instances (an instance over several nodes shares all its GPUs at once).
        shared = []
        for gpu in gpus:
            if gpu in users and users[gpu] is not inst:
                shared.append((users[gpu], gpu))
            else:
                users.setdefault(gpu, inst)
        for other in [o for i, (o, _g) in enumerate(shared) if o not in [x for x, _y in shared[:i]]]:
            clash = [str(g) for o, g in shared if o is other]
            problems.append(problem(inventory_host, "%s.gpus" % instance_variable(inst),
                                    "GPU%s %s %s given to both %s and %s"
                                    % ("s" if len(clash) > 1 else "", ", ".join(clash), "are" if len(clash) > 1 else "is",
                                       instance_variable(other), instance_variable(inst)),
                                    "give each GPU to one instance"))
    problems.extend(_port_problems(inventory_host, host_ports(instances, router)))
    return problems


def host_ports(instances: List[Dict[str, Any]], router: Optional[Dict[str, Any]] = None) -> List[Tuple[Any, str]]:
    """``[(port, variable)]``: every TCP port this host's serving units will listen on."""
    ports = []
    for inst in instances:
        # A rank > 0 of an instance over several nodes listens on its port only (a health server); dist-init,
        # bootstrap and attention DP are rank 0's.
        keys = ("port",) if inst.get("node_rank") else ("port", "bootstrap_port", "dist_init_port")
        for key in keys:
            if is_int(inst.get(key)):
                ports.append((inst[key], "%s.%s" % (instance_variable(inst), key)))
        if "dist_init_port" in keys:
            for port, offset in attn_dp_ports(inst, ATTN_DP_RESERVED):
                ports.append((port, "%s.dist_init_port (+%d, attention DP)" % (instance_variable(inst), offset)))
    if router is not None:
        ports.append((router.get("port"), "sglang_router_port"))
        if router.get("prometheus_port") is not None:
            ports.append((router.get("prometheus_port"), "sglang_router_prometheus_port"))
    return ports


def attn_dp_ports(inst: Dict[str, Any], offsets: Tuple[int, ...] = ATTN_DP_USED) -> List[Tuple[int, int]]:
    """``[(port, offset)]`` of attention DP above an instance's dist-init port ([] without attention DP)."""
    # As the inventory gave them (is_int judges them).
    attn: Any = inst.get("attn_dp_size")
    base: Any = inst.get("dist_init_port")
    if not (is_int(attn) and attn > 1 and is_int(base)):
        return []
    return [(base + offset, offset) for offset in offsets if base + offset <= 65535]


def _port_problems(inventory_host, ports):
    problems = []
    users = {}
    for port, var in ports:
        if port in users:
            attention = "attention DP" in users[port] + var
            problems.append(problem(inventory_host, var, "port %s is used by both %s and %s" % (port, users[port], var),
                                    "give each its own port (with attn_dp_size > 1, keep dist_init_port+1..+13 free "
                                    "of other ports)" if attention else "give each its own port"))
        else:
            users[port] = var
    return problems
