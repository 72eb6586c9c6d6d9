# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The serving topology: every host's instances and router, and how each reaches the others.

Built on the controller from inventory variables only (host_vars/group_vars), so every role and play
that builds it sees the same stack: the servers deploy exactly what the router is wired to and what
the monitoring scrapes. The per-host defaults are an input (sglang_topology_defaults), never restated here.
"""

import difflib
import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.pdserve.sglang.plugins.module_utils.problems import problem, suggest
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.instances import (
    MODES,
    WILDCARD,
    host_problems,
    is_loopback,
    instance_variable,
    is_int,
    normalize,
    url_host,
)
from ansible_collections.pdserve.sglang.plugins.module_utils.serving import nodes as spanning
from ansible_collections.pdserve.sglang.plugins.module_utils.serving import router_address

GROUPS = {"prefill": "sglang_prefill", "decode": "sglang_decode", "router": "sglang_router"}
# The per-host variables the topology reads; their defaults are an input (sglang_topology_defaults of the role
# pdserve.sglang.sglang_defaults, their one owner).
TOPOLOGY_VARIABLES = ("sglang_server_host", "sglang_server_enable_metrics", "sglang_server_net_ifname",
                      "sglang_router_host", "sglang_router_port",
                      "sglang_router_prometheus_host", "sglang_router_prometheus_port", "sglang_router_tls",
                      "sglang_router_tls_ca_path", "sglang_router_virtual_address")
# TLS on the router's client port: off, a certificate from the stack's own CA (made on the controller), or the
# operator's certificate, key and CA. The metrics port and the hop to the model servers stay plain HTTP.
TLS_MODES = ("none", "stack_ca", "provided")
# The router's keys and its opt-out, read from each router host's inventory to judge whether the router is open.
# Unset means no key and no opt-out (the role defaults of pdserve.sglang.sglang_router say the same). Only whether a key
# is set reaches the topology, never the key.
ROUTER_KEY_VARIABLES = ("sglang_router_api_key", "sglang_router_control_plane_api_key")
ROUTER_OPT_OUT = "sglang_router_allow_unauthenticated"
# A key travels as an HTTP bearer token: visible ASCII, no spaces, no control characters.
_TOKEN = re.compile(r"^[\x21-\x7e]+$")


def _get(host_vars, name, defaults):
    value = host_vars.get(name)
    return defaults[name] if value is None else value


def reach_host(bind: Any, address: Any, advertise: Any = None) -> str:
    """The host part another machine uses: advertise_host, else the bind address, else (wildcard) the host's address."""
    if advertise:
        return str(advertise)
    bind = str(bind if bind is not None else "")
    return str(address) if bind in WILDCARD else bind


def local_host(bind: Any) -> str:
    """The host part a process on the same machine uses (loopback for a wildcard bind)."""
    bind = str(bind if bind is not None else "")
    if bind == "::":
        return "::1"
    return "127.0.0.1" if bind in WILDCARD else bind


def _url(host, port, scheme="http"):
    return "%s://%s:%s" % (scheme, url_host(host), port)


def _router(inventory_host, hv, address, problems, defaults):
    router = {"inventory_host": inventory_host}
    for key in ("host", "port", "prometheus_host", "prometheus_port"):
        router[key] = _get(hv, "sglang_router_" + key, defaults)
    for key in ("port", "prometheus_port"):
        value = router[key]
        if not is_int(value) or not 1 <= value <= 65535:
            problems.append(problem(inventory_host, "sglang_router_" + key, "must be a port between 1 and 65535, got %r"
                                    % (value,), "write a whole number without quotes, e.g. %s" % defaults["sglang_router_" + key]))
    for key in ("host", "prometheus_host"):
        if not isinstance(router[key], str):
            problems.append(problem(inventory_host, "sglang_router_" + key, "must be an address, got %r" % (router[key],),
                                    "e.g. 0.0.0.0 (all addresses) or 127.0.0.1"))
            router[key] = str(router[key])
    router.update(_router_tls(inventory_host, hv, problems, defaults))
    scheme = "http" if router["tls"] == "none" else "https"
    router["url"] = _url(reach_host(router["host"], address), router["port"], scheme)
    router["local_url"] = _url(local_host(router["host"]), router["port"], scheme)
    router["tls_names"] = _tls_names(inventory_host, address, router) if router["tls"] != "none" else []
    prom = router["prometheus_host"]
    router["prometheus_local_url"] = _url(local_host(prom), router["prometheus_port"])
    router["prometheus_url"] = None if is_loopback(prom) else _url(reach_host(prom, address), router["prometheus_port"])
    router["auth"] = _router_auth(inventory_host, hv, router, problems)
    return router


def _router_tls(inventory_host, hv, problems, defaults):
    """{tls, ca_path}: the TLS mode of the router's client port, and where its clients find the CA file (None
    without TLS)."""
    tls = _get(hv, "sglang_router_tls", defaults)
    ca_path = _get(hv, "sglang_router_tls_ca_path", defaults)
    if tls not in TLS_MODES:
        problems.append(problem(inventory_host, "sglang_router_tls", "must be one of %s, got %r%s"
                                % (", ".join(TLS_MODES), tls, suggest(tls, TLS_MODES)),
                                "none (plain HTTP), stack_ca (a CA the collection makes on the controller) or provided "
                                "(sglang_router_tls_cert_src, _key_src and _ca_src: your files)"))
        tls = "none"
    if tls != "none" and not (isinstance(ca_path, str) and ca_path.startswith("/")):
        problems.append(problem(inventory_host, "sglang_router_tls_ca_path", "must be an absolute path, got %r" % (ca_path,),
                                "e.g. /etc/pdserve/router-ca.pem (where the CA certificate goes on the router host)"))
    return {"tls": tls, "ca_path": ca_path if tls != "none" else None}


def _tls_names(inventory_host, address, router):
    """The names and addresses clients reach the router by, for its certificate: the host's address, its
    inventory name, the address it is bound to (unless a wildcard), and loopback as the collection's own clients on
    the host use it."""
    names = []
    for name in (address, inventory_host, reach_host(router["host"], address), local_host(router["host"]), "127.0.0.1",
                 "localhost"):
        if name and name not in names:
            names.append(str(name))
    return names


_KEY_FIX = ("let Ansible make one on the controller: %s: \"{{ lookup('ansible.builtin.password', inventory_dir "
            "~ '/.credentials/%s', length=40, chars=['ascii_letters', 'digits']) }}\" (README \"Router keys\")")


def _router_auth(inventory_host, hv, router, problems):
    """Whether the router has its client and control-plane keys; problems for an open router reachable from other
    hosts, a client key without a control-plane key, and keys that cannot be a bearer token. Never the keys."""
    keys = {}
    for name in ROUTER_KEY_VARIABLES:
        value = hv.get(name)
        if value is None or value == "":
            keys[name] = ""
        elif not isinstance(value, str) or not _TOKEN.match(value):
            # Never the value in the message: it is a secret.
            problems.append(problem(inventory_host, name, "must be a string of visible ASCII characters without spaces "
                                    "or line breaks (it is sent as an HTTP bearer token)",
                                    _KEY_FIX % (name, name.replace("sglang_", "").replace("_", "-"))))
            keys[name] = None
        else:
            keys[name] = value
    opt_out = hv.get(ROUTER_OPT_OUT)
    if opt_out is None:
        opt_out = False
    # -e NAME=true arrives as a string: the words Ansible's bool filter reads, nothing looser.
    if isinstance(opt_out, str) and opt_out.lower() in ("true", "yes", "false", "no"):
        opt_out = opt_out.lower() in ("true", "yes")
    if not isinstance(opt_out, bool):
        problems.append(problem(inventory_host, ROUTER_OPT_OUT, "must be true or false, got %r" % (opt_out,),
                                "write true or false without quotes (or leave it unset: the router needs its keys)"))
        opt_out = False
    client, control = keys["sglang_router_api_key"], keys["sglang_router_control_plane_api_key"]
    if client == "" and not opt_out and not is_loopback(router["host"]):
        problems.append(problem(
            inventory_host, "sglang_router_api_key",
            "is empty, but the router listens on %s:%s, reachable from other hosts: without a key anyone who reaches "
            "the port can use the model and register workers of their own (sglang-router answers POST /workers)"
            % (router["host"], router["port"]),
            (_KEY_FIX % ("sglang_router_api_key", "router-api-key")) + ", and the same for "
            "sglang_router_control_plane_api_key; or bind sglang_router_host to 127.0.0.1; or, for a network you "
            "trust, set sglang_router_allow_unauthenticated: true"))
    if client and control == "":
        problems.append(problem(
            inventory_host, "sglang_router_control_plane_api_key",
            "is empty while sglang_router_api_key is set: without a control-plane key sglang-router lets every "
            "client that has the API key manage its workers (POST /workers registers one)",
            _KEY_FIX % ("sglang_router_control_plane_api_key", "router-control-plane-api-key")))
    if client and control and client == control:
        problems.append(problem(
            inventory_host, "sglang_router_control_plane_api_key",
            "is the same as sglang_router_api_key: every client could manage the router's workers",
            "give it a value of its own (a separate password lookup file)"))
    return {"api_key": bool(client), "control_plane_api_key": bool(control), "allow_unauthenticated": opt_out}


def _instance_urls(inst, address):
    host = reach_host(inst["host"], address, inst.get("advertise_host"))
    inst["url"] = _url(host, inst["port"])
    inst["local_url"] = _url(local_host(inst["host"]), inst["port"])
    if inst.get("bootstrap_port"):
        # A prefill's KV bootstrap server, bound as its API is: where its own host asks GET /route.
        inst["bootstrap_local_url"] = _url(local_host(inst["host"]), inst["bootstrap_port"])
    inst["metrics_url"] = inst["url"] + "/metrics"
    inst["reach_host"] = host


def _reachability_problems(hosts, workers, routers):
    """Addresses a process on ANOTHER host must connect to may be neither loopback nor wildcard."""
    problems = []
    router_hosts = [r["inventory_host"] for r in routers]
    # Every node of a decode instance reads the prefill bootstrap, rank 0 or not.
    decode_hosts = sorted(h for h, e in hosts.items() if e.get("decode"))
    for kind in MODES:
        for worker in workers[kind]:
            remote_routers = [h for h in router_hosts if h != worker["inventory_host"]]
            remote_decode = [h for h in decode_hosts if h != worker["inventory_host"]] if kind == "prefill" else []
            if not remote_routers and not remote_decode:
                continue
            var = "%s.host" % instance_variable(worker)
            if worker.get("advertise_host") and str(worker["advertise_host"]) in WILDCARD:
                problems.append(problem(worker["inventory_host"], "%s.advertise_host" % instance_variable(worker),
                                        "is the wildcard %r, which no other host can connect to" % worker["advertise_host"],
                                        "advertise an address of %s that the other hosts can reach" % worker["inventory_host"]))
                continue
            if is_loopback(worker["host"]) and not is_loopback(worker["reach_host"]):
                # advertise_host changes what the router is told, not where the server listens.
                problems.append(problem(
                    worker["inventory_host"], var,
                    "is %s, a loopback address: %s listen there only, whatever advertise_host %s says"
                    % (worker["host"], worker["url"], worker["reach_host"]),
                    "bind the instance to an address of %s that %s can reach (or 0.0.0.0)"
                    % (worker["inventory_host"], ", ".join(remote_routers + remote_decode))))
                continue
            if not is_loopback(worker["reach_host"]):
                continue
            if remote_routers:
                problems.append(problem(
                    worker["inventory_host"], var,
                    "the router on %s cannot reach %s: it is served on %s, a loopback address of %s"
                    % (", ".join(remote_routers), worker["url"], worker["reach_host"], worker["inventory_host"]),
                    "set the instance's host (or sglang_server_host of %s) to an address of %s that the router host "
                    "can reach, e.g. its private address" % (worker["inventory_host"], worker["inventory_host"])))
            if remote_decode:
                # The router hands decode the host of the prefill URL as bootstrap_host.
                problems.append(problem(
                    worker["inventory_host"], var,
                    "decode servers on %s get %s:%s as the KV bootstrap address (the host of the prefill URL), "
                    "a loopback address of %s they cannot reach"
                    % (", ".join(remote_decode), worker["reach_host"], worker["bootstrap_port"], worker["inventory_host"]),
                    "serve this prefill instance on an address of %s that the decode hosts can reach"
                    % worker["inventory_host"]))
    seen = {}
    for kind in MODES:
        for worker in workers[kind]:
            label = "%s on %s" % (instance_variable(worker), worker["inventory_host"])
            first = seen.get(worker["url"])
            # Two instances of one host on one port are already a port clash of that host: say it once.
            if first is not None and not (first[1] == worker["inventory_host"] and first[2] == worker.get("port")):
                problems.append(problem(worker["inventory_host"], instance_variable(worker),
                                        "%s and %s both resolve to %s" % (first[0], label, worker["url"]),
                                        "give each a distinct host:port"))
            seen.setdefault(worker["url"], (label, worker["inventory_host"], worker.get("port")))
    return problems


def _undeclared(name, mode, group, hv, raw):
    """The problem of a host of a serving group that declares no instance of its mode, or None.

    Without it the server role would find every unit of that mode on the host stale and stop, disable and delete
    them: a misspelled instance variable must stop the run instead.
    """
    variable = "sglang_%s_instances" % mode
    if raw is not None and not (isinstance(raw, (list, tuple)) and len(raw) == 0):
        return None
    real = set("sglang_%s_instances" % m for m in MODES)
    near = [k for k in hv if isinstance(k, str) and k not in real
            and ("instance" in k.lower() or difflib.get_close_matches(variable, [k], n=1, cutoff=0.8))]
    hint = suggest(variable, near) or (" (found %s)" % ", ".join(sorted(near)) if near else "")
    state = "is empty" if raw is not None else "is not set%s" % hint
    return problem(name, variable,
                   "%s is a host of group %s but declares no %s instance: %s %s, so the server role would stop, "
                   "disable and delete every %s unit on it" % (name, group, mode, variable, state, mode),
                   "set %s for %s (host_vars/%s.yml, e.g. - {name: %s-0, port: 30000, gpus: [0]}), or take %s out of "
                   "group %s" % (variable, name, name, mode, name, group))


def build_topology(host_vars: Dict[str, Any], groups: Optional[Dict[str, List[str]]], defaults: Dict[str, Any],
                   group_names: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """The topology of the inventory (see the module docstring of the filter serving_topology).

    ``host_vars``: {inventory host: its variables}. ``groups``: {group: [hosts]}. ``defaults``: {variable: value} for
    every name in TOPOLOGY_VARIABLES, what a host that does not set it gets. ``group_names``:
    {"prefill", "decode", "router"} -> group name, overriding GROUPS.
    """
    missing = [name for name in TOPOLOGY_VARIABLES if name not in (defaults or {})]
    if missing:
        raise ValueError("the topology's defaults lack %s (pass sglang_topology_defaults)" % ", ".join(missing))
    names = dict(GROUPS)
    names.update(dict((k, v) for k, v in (group_names or {}).items() if v))
    members = dict((role, list((groups or {}).get(group) or [])) for role, group in names.items())
    ordered = []
    for role in ("prefill", "decode", "router"):
        for host in members[role]:
            if host not in ordered:
                ordered.append(host)

    hosts = {}
    ifnames = {}
    problems = []
    workers: Dict[str, List[Dict[str, Any]]] = {"prefill": [], "decode": []}
    declared = {"prefill": False, "decode": False}
    routers: List[Dict[str, Any]] = []
    for name in ordered:
        hv = host_vars.get(name) or {}
        address = str(hv.get("ansible_host") or name)
        entry: Dict[str, Any] = {"address": address, "groups": [names[r] for r in ("prefill", "decode", "router") if name in members[r]],
                                 "prefill": [], "decode": [], "router": None}
        server_host = _get(hv, "sglang_server_host", defaults)
        # Read by the nodes of instances over several hosts only (serving/nodes.py).
        ifnames[name] = _get(hv, "sglang_server_net_ifname", defaults)
        metrics = _get(hv, "sglang_server_enable_metrics", defaults)
        for mode in MODES:
            if name not in members[mode]:
                continue
            raw = hv.get("sglang_%s_instances" % mode)
            declared[mode] = declared[mode] or (isinstance(raw, (list, tuple)) and len(raw) > 0)
            missing = _undeclared(name, mode, names[mode], hv, raw)
            if missing:
                problems.append(missing)
            instances, found = normalize(raw, mode, name, server_host, metrics)
            problems.extend(found)
            for inst in instances:
                if is_int(inst.get("port")):
                    _instance_urls(inst, address)
                else:
                    inst.update(url=None, local_url=None, metrics_url=None, reach_host=None)
            if raw and not instances and not found and spanning.declared_elsewhere(raw, name):
                problems.append(problem(name, "sglang_%s_instances" % mode, "%s is a host of group %s, but every "
                                        "instance of its sglang_%s_instances spans other nodes (their nodes lists do "
                                        "not name %s), so it would run no %s server" % (name, names[mode], mode, name, mode),
                                        "add %s to the nodes of an instance, declare an instance of its own, or take "
                                        "it out of group %s" % (name, names[mode])))
            entry[mode] = instances
            # The router gets rank 0 of an instance over several nodes only: a rank > 0 answers /health, nothing else.
            workers[mode].extend(i for i in instances if i["url"] and not i.get("node_rank"))
        if name in members["router"]:
            entry["router"] = _router(name, hv, address, problems, defaults)
            routers.append(entry["router"])
        problems.extend(host_problems(name, entry["prefill"] + entry["decode"], entry["router"]))
        hosts[name] = entry

    for router in routers:
        for mode in MODES:
            # Declared but all malformed: the shape problems already say what to fix.
            if not workers[mode] and not declared[mode]:
                problems.append(problem(router["inventory_host"], "sglang_%s_instances" % mode,
                                        "the router has no %s worker: no host of group %s defines sglang_%s_instances"
                                        % (mode, names[mode], mode), "add one to the inventory"))
    # What every router serves: the workers in service. Out-of-service ones are still deployed, scraped and waited for.
    router_workers = dict((mode, [w for w in workers[mode] if w.get("in_service", True)]) for mode in MODES)
    for router in routers:
        for mode in MODES:
            if workers[mode] and not router_workers[mode]:
                problems.append(problem(router["inventory_host"], "sglang_%s_instances" % mode,
                                        "every %s instance is marked in_service: false, so the router would serve no "
                                        "%s worker and every request would fail" % (mode, mode),
                                        "keep at least one %s instance in service" % mode))
    problems.extend(_reachability_problems(hosts, workers, routers))
    found, warnings = spanning.resolve(hosts, members, names, ifnames)
    problems.extend(found)
    problems.extend(spanning.unplaced(host_vars, members, names))
    shared, found = router_address.judge(routers, host_vars, dict((n, e["address"]) for n, e in hosts.items()),
                                         defaults[router_address.VARIABLE])
    problems.extend(found)
    if shared:
        _share_address(shared, routers)
    return {"hosts": hosts, "workers": workers, "router_workers": router_workers, "routers": routers,
            "router_address": shared, "problems": problems, "warnings": warnings, "groups": names}


def _share_address(shared, routers):
    """The routers' virtual address as clients use it: its URL, and a name in every router's certificate."""
    scheme = "https" if any(r["tls"] != "none" for r in routers) else "http"
    shared["url"] = _url(shared["address"], shared["port"], scheme)
    for router in routers:
        router["virtual_address"] = shared["address"]
        if router["tls"] != "none" and shared["address"] not in router["tls_names"]:
            router["tls_names"].insert(0, shared["address"])


def host_part(topology: Dict[str, Any], inventory_host: str) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
    """One host's entry (empty when the host serves nothing) and the problems that concern it."""
    entry = topology["hosts"].get(inventory_host) or {"address": inventory_host, "groups": [], "prefill": [],
                                                      "decode": [], "router": None}
    mine = [p for p in topology["problems"] if p.get("host") == inventory_host]
    return entry, mine
