# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The preflight's judgement of one host: the inventory's part for that host against what the host has.

Pure: ``judge`` takes the topology, the shared model settings, the server settings and what was
observed on the host (None for what was not observed), and returns problems. Nothing here reads the host.
"""

from typing import Any, Dict, List, Optional

from ansible_collections.pdserve.sglang.plugins.module_utils.problems import control_character, env_problems, problem, suggest
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.sglang_choices import (
    PARSER_PAIRS,
    REASONING_PARSERS,
    SGLANG_VERSION,
    TOOL_CALL_PARSERS,
    TRANSFER_BACKENDS,
)
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.instances import (
    UNIT_PREFIX,
    WILDCARD,
    host_ports,
    instance_variable,
    is_int,
)
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.nodes import dp_problems
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.topology import host_part
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.unit_values import settings_problems

NUMA_BINDINGS = ("numactl", "sglang", "none")


# The shared model settings written into ExecStart= words: one line each.
_MODEL_WORDS = ("model_path", "served_model_name", "chat_template", "reasoning_parser", "tool_call_parser", "transfer_backend")


def model_problems(host: str, model: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The shared model settings (sglang_model_*): parser names and their pairing, backend, context, path."""
    problems = []
    for key in _MODEL_WORDS:
        char = control_character(model.get(key)) if isinstance(model.get(key), str) else None
        if char:
            problems.append(problem(host, "sglang_model_" + key.replace("model_path", "path").replace("served_model_name", "served_name"),
                                    "holds the control character %r, which would end or cut its line in the unit" % char,
                                    "write the value on one line, without control characters"))
    reasoning = model.get("reasoning_parser")
    tool = model.get("tool_call_parser")
    if reasoning and reasoning not in REASONING_PARSERS:
        hint = suggest(reasoning, REASONING_PARSERS)
        if reasoning in TOOL_CALL_PARSERS and not hint:
            hint = " (%r is a tool-call parser name)" % reasoning
        problems.append(problem(host, "sglang_model_reasoning_parser",
                                "%r is not a reasoning parser of sglang %s%s" % (reasoning, SGLANG_VERSION, hint),
                                "choose one of: %s" % ", ".join(REASONING_PARSERS)))
    if tool and tool not in TOOL_CALL_PARSERS:
        problems.append(problem(host, "sglang_model_tool_call_parser",
                                "%r is not a tool-call parser of sglang %s%s" % (tool, SGLANG_VERSION, suggest(tool, TOOL_CALL_PARSERS)),
                                "choose one of: %s" % ", ".join(TOOL_CALL_PARSERS)))
    if reasoning in PARSER_PAIRS and tool and tool in TOOL_CALL_PARSERS and tool not in PARSER_PAIRS[reasoning]:
        problems.append(problem(host, "sglang_model_tool_call_parser",
                                "sglang_model_reasoning_parser %r and sglang_model_tool_call_parser %r belong to "
                                "different model families (tool calls would stay in content)" % (reasoning, tool),
                                "with %r use tool-call parser %s" % (reasoning, " or ".join(repr(t) for t in PARSER_PAIRS[reasoning]))))
    backend = model.get("transfer_backend")
    if backend and backend not in TRANSFER_BACKENDS:
        problems.append(problem(host, "sglang_model_transfer_backend", "%r is not a transfer backend of sglang %s%s"
                                % (backend, SGLANG_VERSION, suggest(backend, TRANSFER_BACKENDS)),
                                "choose one of: %s" % ", ".join(TRANSFER_BACKENDS)))
    context_length = model.get("context_length")
    if context_length is not None and (not is_int(context_length) or context_length <= 0):
        problems.append(problem(host, "sglang_model_context_length",
                                "must be a positive integer (tokens), got %r" % (context_length,),
                                "leave it unset to use the model's own maximum"))
    if not model.get("model_path"):
        problems.append(problem(host, "sglang_model_path", "is empty", "set it to the model directory (or hub id)"))
    value = model.get("extra_args")
    if value is not None and (not isinstance(value, list)
                              or any(isinstance(a, (dict, list, tuple)) or a is None for a in value)):
        problems.append(problem(host, "sglang_model_extra_args", "must be a list of strings, got %r" % (value,),
                                "one word per item, e.g. [--chunked-prefill-size, 8192]"))
    elif value is not None:
        for index, word in enumerate(value):
            if control_character(word):
                problems.append(problem(host, "sglang_model_extra_args[%d]" % index, "holds the control character %r, "
                                        "which would end or cut its line in the unit" % control_character(word),
                                        "one word per item, on one line"))
    for key in ("env", "transfer_env"):
        value = model.get(key)
        if value is not None and not isinstance(value, dict):
            problems.append(problem(host, "sglang_model_" + key, "must be a mapping, got %r" % (value,),
                                    "e.g. {SGLANG_DISAGGREGATION_NIXL_BACKEND: UCX}"))
        elif isinstance(value, dict):
            problems.extend(env_problems(host, "sglang_model_" + key, value))
    return problems


def _gpu_problems(host, inst, numa_binding, observed):
    problems = []
    var = instance_variable(inst)
    numa = inst.get("numa_node")
    nodes = observed.get("numa_nodes")
    if numa_binding != "none" and is_int(numa) and nodes is not None and numa not in nodes:
        problems.append(problem(host, "%s.numa_node" % var, "is %s but the host has NUMA node(s) %s" % (numa, sorted(nodes)),
                                "pick one of them or drop numa_node"))
    gpus = observed.get("gpus")
    if gpus is None or not isinstance(inst.get("gpus"), list):
        return problems
    by_index = dict((g.get("index"), g) for g in gpus if isinstance(g, dict))
    for gpu in inst["gpus"]:
        if not is_int(gpu):
            continue
        if gpu not in by_index:
            problems.append(problem(host, "%s.gpus" % var, "uses GPU %s but the host has GPU index(es) %s" % (gpu, sorted(by_index)),
                                    "use GPUs the host has (nvidia-smi -L)"))
            continue
        gpu_numa = by_index[gpu].get("numa_node")
        if numa_binding != "none" and is_int(numa) and gpu_numa is not None and gpu_numa != numa:
            problems.append(problem(host, "%s.numa_node" % var, "is %s but GPU %s is attached to NUMA node %s" % (numa, gpu, gpu_numa),
                                    "set numa_node to %s or move the instance to GPUs of node %s" % (gpu_numa, numa)))
    return problems


def _listener_problems(host, ports, listeners, own_uids):
    problems = []
    wanted = dict((port, var) for port, var in ports)
    for sock in listeners:
        if sock["port"] not in wanted:
            continue
        owners = sock.get("owners") or []
        if owners:
            # Any sglang-*.service is ours: an instance, the router, or one that left the inventory,
            # which the roles stop before starting the new units.
            foreign = [o for o in owners if not (o.get("unit", "").startswith(UNIT_PREFIX) and o["unit"].endswith(".service"))]
            if not foreign:
                continue
            who = ", ".join("pid %s (%s)" % (o["pid"], o["unit"] if o["unit"] != "none" else "not a systemd service")
                            for o in foreign)
        elif sock.get("uid") is not None and sock["uid"] in own_uids:
            continue
        else:
            who = "a process of uid %s that is not the service user" % sock.get("uid")
        problems.append(problem(host, wanted[sock["port"]], "wants port %s but %s:%s is already held by %s"
                                % (sock["port"], sock["address"], sock["port"], who), "stop that process or choose another port"))
    return problems


def _address_problems(host, entry, addresses):
    problems = []
    binds = []
    for inst in entry["prefill"] + entry["decode"]:
        binds.append((inst.get("host"), "%s.host" % instance_variable(inst)))
        # Over several nodes the dist-init address is rank 0's, judged with the nodes (serving/nodes.py).
        if inst.get("dist_init_port") is not None and not inst.get("nodes"):
            binds.append((inst.get("dist_init_host"), "%s.dist_init_host" % instance_variable(inst)))
    if entry["router"]:
        binds.append((entry["router"]["host"], "sglang_router_host"))
        binds.append((entry["router"]["prometheus_host"], "sglang_router_prometheus_host"))
    for address, var in binds:
        if not isinstance(address, str) or address in WILDCARD or address not in addresses:
            continue
        ok, why = addresses[address]
        if not ok:
            problems.append(problem(host, var, "binds %s, which %s" % (address, why),
                                    "use an address of %s (ip -brief address), 127.0.0.1, or 0.0.0.0" % host))
    return problems


def bind_addresses(entry: Dict[str, Any]) -> List[str]:
    """The specific (not wildcard) addresses this host's units bind, to be tested on the host."""
    result = set()
    for inst in entry["prefill"] + entry["decode"]:
        for key in ("host",) if inst.get("nodes") else ("host", "dist_init_host"):
            value = inst.get(key)
            if isinstance(value, str) and value not in WILDCARD:
                result.add(value)
    if entry["router"]:
        for key in ("host", "prometheus_host"):
            value = entry["router"][key]
            if isinstance(value, str) and value not in WILDCARD:
                result.add(value)
    return sorted(result)


# Unit settings of each role, by the key the role passes them under -> the variable an operator sets.
UNIT_SETTING_NAMES = {
    "server": ("sglang_server_", {"hardening": "sglang_server_systemd_hardening_overrides",
                                  "env": "sglang_server_env (or sglang_server_transfer_env)"}),
    "router": ("sglang_router_", {"hardening": "sglang_router_systemd_hardening_overrides"}),
}


def unit_problems(inventory_host: str, role: str, settings: Optional[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """What the renderer would refuse in a role's unit settings (module_utils/serving/unit_values.py), as problems."""
    if not settings:
        return []
    prefix, names = UNIT_SETTING_NAMES[role]
    found = [problem(inventory_host, variable, message, fix) for variable, message, fix in settings_problems(settings, prefix, names)]
    if role == "router":
        found += _startup_timeout_problems(inventory_host, settings)
    return found


def _whole_seconds(value):
    try:
        return None if isinstance(value, bool) else int(str(value).strip())
    except ValueError:
        return None


def _startup_timeout_problems(inventory_host, settings):
    """The router gives up for good on a worker not healthy within its start-up timeout, while the play waits for the
    servers as long as sglang_server_wait_timeout: a shorter router limit lets a slow first start pass the wait and
    leaves the router without that worker."""
    router = _whole_seconds(settings.get("worker_startup_timeout_secs"))
    wait = _whole_seconds(settings.get("server_wait_timeout"))
    if router is None or wait is None or router >= wait:
        return []
    return [problem(
        inventory_host, "sglang_router_worker_startup_timeout_secs",
        "is %d s, shorter than sglang_server_wait_timeout (%d s): a server whose start takes longer than %d s (a cold "
        "kernel warmup on a large model can take about 30 minutes) passes the play's wait, but the router has given "
        "up on it for good and serves without it" % (router, wait, router),
        "set sglang_router_worker_startup_timeout_secs to at least %d (sglang_server_wait_timeout), or lower "
        "sglang_server_wait_timeout" % wait)]


def host_warnings(inventory_host: str, topology: Dict[str, Any], model: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
    """What works but should change on this host (deprecated flags), as problems that do not fail the run."""
    entry, _problems = host_part(topology, inventory_host)
    warnings = [w for w in topology.get("warnings") or [] if w.get("host") == inventory_host]
    for inst in entry["prefill"] + entry["decode"]:
        if inst.get("nodes") and model is not None and not inst.get("node_rank"):
            _found, found = dp_problems(inventory_host, dict(inst, dp_size=None, extra_args=[]), model.get("extra_args"))
            warnings.extend(found)
    return warnings


def judge(inventory_host: str, topology: Dict[str, Any], model: Optional[Dict[str, Any]], server: Dict[str, Any],
          observed: Dict[str, Any], units: Optional[Dict[str, Dict[str, Any]]] = None) -> List[Dict[str, Any]]:
    """Every problem of one host. ``model`` None: no model checks (the host serves no model).

    ``server``: numa_binding, numactl_path, no_new_privileges (bool), min_free_gb, home,
    own_uids (uids whose sockets are ours when /proc does not show the owner).
    ``observed``: gpus (list or None), numa_nodes (list of ids or None), listeners (list or None),
    addresses ({address: (ok, why)} or None), paths ([{var, path, exists}] or None), numactl (bool or None),
    nvidia_uvm (bool or None), home_free_gb (float or None).
    ``units``: {"server": settings, "router": settings}, the settings each role renders its units from; every value
    the renderer would refuse is a problem naming the variable.
    """
    entry, problems = host_part(topology, inventory_host)
    problems = list(problems)
    instances = entry["prefill"] + entry["decode"]
    server = server or {}
    numa_binding = server.get("numa_binding", "numactl")
    if instances:
        if numa_binding not in NUMA_BINDINGS:
            problems.append(problem(inventory_host, "sglang_server_numa_binding", "must be one of %s, got %r"
                                    % (", ".join(NUMA_BINDINGS), numa_binding), "use numactl (default), sglang or none"))
        if model is not None:
            problems.extend(model_problems(inventory_host, model))
        for inst in instances:
            problems.extend(_gpu_problems(inventory_host, inst, numa_binding, observed))
            if inst.get("nodes") and model is not None:
                # The shared extra_args reach every node: --dp-size there counts as the instance's own.
                found, _warnings = dp_problems(inventory_host, dict(inst, dp_size=None, extra_args=[]),
                                               model.get("extra_args"))
                problems.extend(found)
        problems.extend(unit_problems(inventory_host, "server", (units or {}).get("server")))
    if entry["router"] is not None:
        problems.extend(unit_problems(inventory_host, "router", (units or {}).get("router")))
    if observed.get("listeners") is not None:
        problems.extend(_listener_problems(inventory_host, host_ports(instances, entry["router"]),
                                           observed["listeners"], set(server.get("own_uids") or [])))
    if observed.get("addresses") is not None:
        problems.extend(_address_problems(inventory_host, entry, observed["addresses"]))
    for item in observed.get("paths") or []:
        if not item.get("exists"):
            problems.append(problem(inventory_host, item["var"], "points to %s, which does not exist on the host" % item["path"],
                                    "fix the path, install it first, or set sglang_server_check_paths: false (e.g. for a hub id)"))
    if instances and observed.get("gpus") and server.get("no_new_privileges") and observed.get("nvidia_uvm") is False:
        problems.append(problem(inventory_host, "sglang_server_systemd_hardening",
                                "/dev/nvidia-uvm is missing and the units run with NoNewPrivileges, so CUDA cannot load "
                                "nvidia_uvm itself",
                                "load it at boot (the nvidia_driver role does), or set "
                                "sglang_server_systemd_hardening_overrides: {NoNewPrivileges: false}"))
    if (numa_binding == "numactl" and observed.get("numactl") is False
            and any(i.get("numa_node") is not None for i in instances)):
        problems.append(problem(inventory_host, "sglang_server_numa_binding",
                                "is 'numactl' but numactl is not installed (%s)" % server.get("numactl_path", "numactl"),
                                "install the numactl package, or set sglang_server_numa_binding to 'sglang' or 'none'"))
    free = observed.get("home_free_gb")
    need = server.get("min_free_gb")
    if instances and free is not None and need and free < need:
        problems.append(problem(inventory_host, "sglang_server_min_free_gb",
                                "the filesystem of %s has %s GiB free, less than the %s GiB asked for (kernel caches, logs)"
                                % (server.get("home"), free, need), "free space there or lower sglang_server_min_free_gb"))
    return problems
