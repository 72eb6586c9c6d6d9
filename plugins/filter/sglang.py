# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters that turn the inventory's instance lists into systemd command lines and preflight verdicts.

The roles keep their logic here so that it can be unit tested without a host:
``normalize_instances`` fills instance defaults, ``server_args`` and ``router_args`` build the
command lines (one flag with its values per entry), ``pd_router_workers`` collects the workers of
the prefill and decode groups, ``listening_sockets`` parses ``ss -ltnpH`` and
``preflight_problems`` returns every problem of a host at once.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import re

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_text

# Choices of sglang 0.5.23 (SGLANG-FACTS.md: ServerArgs.add_cli_args).
REASONING_PARSERS = (
    "auto", "apertus2509", "beam", "deepseek-r1", "deepseek-v3", "deepseek-v4", "deepseek-v41",
    "dots", "glm45", "ling3", "hunyuan", "gpt-oss", "k2_horizon", "kimi", "kimi_k2", "kimi_k3",
    "mimo", "muse", "poolside_v1", "qwen3", "qwen3-thinking", "minimax", "minimax-append-think",
    "minimax-m3", "nanbeige", "step3", "step3p5", "mistral", "nemotron_3",
    "granite_thinking_parser", "interns1", "gemma4", "inkling", "iquest_q1", "cohere_command4",
    "gigachat35", "response_template",
)
TOOL_CALL_PARSERS = (
    "auto", "apertus2509", "beam", "cohere_command4", "deepseekv3", "deepseekv31", "deepseekv32",
    "deepseekv4", "deepseekv41", "dots", "glm", "glm45", "glm47", "gpt-oss", "k2_horizon",
    "kimi_k2", "kimi_k3", "lfm2", "ling3", "llama3", "mimo", "minicpm5", "mistral", "muse",
    "poolside_v1", "pythonic", "qwen", "qwen25", "qwen3_coder", "spark25", "step3", "step3p5",
    "minimax-m2", "minimax-m3", "nanbeige", "trinity", "interns1", "hermes", "hunyuan",
    "gigachat3", "gigachat35", "gemma4", "inkling", "iquest_q1", "response_template",
)
TRANSFER_BACKENDS = ("mooncake", "nixl", "ascend", "fake", "mori", "mooncake_tcp")
MODES = ("prefill", "decode")
NUMA_BINDINGS = ("numactl", "sglang", "none")

# Reasoning parser -> tool-call parsers of the same model family. A reasoning parser that is not
# in this table (or "auto"/"response_template", or no reasoning parser) pairs with any tool parser.
# The DeepSeek rows encode the confusion users report (sgl-project/sglang#14690, #17593): the V4
# reasoning parser with the V3 tool parser leaves tool calls in content.
PARSER_PAIRS = {
    "deepseek-v4": ("deepseekv4", "deepseekv32"),
    "deepseek-v41": ("deepseekv41", "deepseekv4", "deepseekv32"),
    "deepseek-v3": ("deepseekv3", "deepseekv31", "deepseekv32"),
    "deepseek-r1": ("deepseekv3", "deepseekv31", "deepseekv32"),
    "qwen3": ("qwen", "qwen25", "qwen3_coder", "hermes"),
    "qwen3-thinking": ("qwen", "qwen25", "qwen3_coder", "hermes"),
    "glm45": ("glm", "glm45", "glm47"),
    "kimi": ("kimi_k2",),
    "kimi_k2": ("kimi_k2",),
    "kimi_k3": ("kimi_k3",),
    "k2_horizon": ("k2_horizon",),
    "gpt-oss": ("gpt-oss",),
    "minimax": ("minimax-m2",),
    "minimax-append-think": ("minimax-m2",),
    "minimax-m3": ("minimax-m3",),
    "step3": ("step3",),
    "step3p5": ("step3p5",),
    "mimo": ("mimo",),
    "muse": ("muse",),
    "ling3": ("ling3",),
    "dots": ("dots",),
    "nanbeige": ("nanbeige",),
    "interns1": ("interns1",),
    "gemma4": ("gemma4",),
    "inkling": ("inkling",),
    "iquest_q1": ("iquest_q1",),
    "cohere_command4": ("cohere_command4",),
    "gigachat35": ("gigachat35", "gigachat3"),
    "hunyuan": ("hunyuan",),
    "apertus2509": ("apertus2509",),
    "beam": ("beam",),
    "poolside_v1": ("poolside_v1",),
    "mistral": ("mistral",),
}

UNIT_PREFIX = "sglang-"
ROUTER_UNIT = "sglang-router.service"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_WILDCARD = ("0.0.0.0", "::", "*", "")

INSTANCE_DEFAULTS = {
    "host": "127.0.0.1",
    "gpus": [],
    "numa_node": None,
    "bootstrap_port": None,
    "dist_init_port": None,
    "dist_init_host": "127.0.0.1",
    "mem_fraction_static": None,
    "context_length": None,
    "advertise_host": None,
    "extra_args": [],
    "env": {},
}


def _fail(msg):
    raise AnsibleFilterError(msg)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def systemd_quote(value):
    """Quote one word for an ExecStart= line: double quotes, escaped \\ and ", %% and $$."""
    if isinstance(value, bool):
        value = "true" if value else "false"
    text = to_text(value)
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    text = text.replace("%", "%%").replace("$", "$$")
    text = text.replace("\n", "\\n")
    return '"%s"' % text


def env_quote(value):
    """Quote one value for a systemd EnvironmentFile= line (KEY="value")."""
    if isinstance(value, bool):
        value = "true" if value else "false"
    text = to_text(value)
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"%s"' % text


def _unit_name(name):
    return "%s%s.service" % (UNIT_PREFIX, name)


def normalize_instances(instances, mode, defaults=None, env_dir="/etc/sglang"):
    """Return the instances of one mode with every key filled in.

    ``defaults`` overrides INSTANCE_DEFAULTS (e.g. the role's sglang_server_host).
    Adds ``mode``, ``tp_size`` (len(gpus), at least 1), ``unit`` and ``env_file``.
    A prefill instance without ``bootstrap_port`` gets SGLang's default 8998 so that clashes
    between two prefill instances on one host are visible to preflight.
    """
    if instances is None:
        return []
    if not isinstance(instances, (list, tuple)):
        _fail("instances must be a list of dicts, got %s" % type(instances).__name__)
    if mode not in MODES:
        _fail("mode must be one of %s, got %r" % (", ".join(MODES), mode))
    base = dict(INSTANCE_DEFAULTS)
    base.update(dict((k, v) for k, v in (defaults or {}).items() if v is not None))
    result = []
    for index, raw in enumerate(instances):
        if not isinstance(raw, dict):
            _fail("%s instance #%d must be a dict, got %r" % (mode, index, raw))
        inst = dict(base)
        inst.update(dict((k, v) for k, v in raw.items() if v is not None))
        # Wrong shapes are kept as given so that preflight_problems can name them.
        for key, kinds in (("gpus", (list, tuple)), ("extra_args", (list, tuple)), ("env", (dict,))):
            if isinstance(inst.get(key), kinds):
                inst[key] = kinds[0](inst[key])
        inst["mode"] = mode
        if raw.get("tp_size") is None:
            inst["tp_size"] = max(len(inst["gpus"]), 1) if isinstance(inst["gpus"], list) else 1
        if mode == "prefill" and inst.get("bootstrap_port") is None:
            inst["bootstrap_port"] = 8998
        name = to_text(inst.get("name", ""))
        inst["unit"] = _unit_name(name)
        inst["env_file"] = "%s/%s.env" % (env_dir.rstrip("/"), name)
        result.append(inst)
    return result


def group_args(tokens):
    """Group a flat list of command-line tokens into lines: a new line at each token starting with -."""
    lines = []
    for token in tokens or []:
        token = to_text(token)
        if token.startswith("-") or not lines:
            lines.append([token])
        else:
            lines[-1].append(token)
    return lines


def server_args(instance, model, numa_binding="numactl", enable_metrics=True):
    """Return the sglang.launch_server arguments of one normalized instance as lines.

    Each line is a list: the flag first, then its values (unquoted; the template quotes them).
    ``model`` holds the shared model settings: model_path, served_model_name, chat_template,
    reasoning_parser, tool_call_parser, transfer_backend, context_length, extra_args.
    """
    model = model or {}
    lines = [
        ["--model-path", model.get("model_path")],
    ]
    if model.get("served_model_name"):
        lines.append(["--served-model-name", model["served_model_name"]])
    lines += [
        ["--host", instance["host"]],
        ["--port", instance["port"]],
        ["--tp-size", instance["tp_size"]],
        ["--disaggregation-mode", instance["mode"]],
    ]
    if model.get("transfer_backend"):
        lines.append(["--disaggregation-transfer-backend", model["transfer_backend"]])
    if instance.get("bootstrap_port") is not None:
        lines.append(["--disaggregation-bootstrap-port", instance["bootstrap_port"]])
    if instance.get("dist_init_port") is not None:
        lines.append(["--dist-init-addr", "%s:%s" % (instance["dist_init_host"], instance["dist_init_port"])])
    if instance.get("mem_fraction_static") is not None:
        lines.append(["--mem-fraction-static", instance["mem_fraction_static"]])
    context_length = instance.get("context_length")
    if context_length is None:
        context_length = model.get("context_length")
    if context_length is not None:
        lines.append(["--context-length", context_length])
    if model.get("chat_template"):
        lines.append(["--chat-template", model["chat_template"]])
    if model.get("reasoning_parser"):
        lines.append(["--reasoning-parser", model["reasoning_parser"]])
    if model.get("tool_call_parser"):
        lines.append(["--tool-call-parser", model["tool_call_parser"]])
    if numa_binding == "sglang" and instance.get("numa_node") is not None:
        lines.append(["--numa-node"] + [instance["numa_node"]] * int(instance["tp_size"]))
    if enable_metrics:
        lines.append(["--enable-metrics"])
    lines += group_args(model.get("extra_args"))
    lines += group_args(instance.get("extra_args"))
    return lines


def flag_check_lines(instances, model, numa_binding="numactl", enable_metrics=True):
    """Command lines for the sglang_install flag check: [{name, argv}] with argv the words after
    ``-m sglang.launch_server``, exactly as the units pass them."""
    result = []
    for instance in instances or []:
        argv = []
        for line in server_args(instance, model, numa_binding, enable_metrics):
            argv.extend(to_text(word) for word in line)
        result.append({"name": instance["name"], "argv": argv})
    return result


def _url_host(host):
    host = to_text(host)
    if ":" in host and not host.startswith("["):
        return "[%s]" % host
    return host


def _worker_address(inst, hostvars_of_host, inventory_hostname):
    """The address the router uses to reach an instance."""
    if inst.get("advertise_host"):
        return to_text(inst["advertise_host"])
    bind = to_text(inst.get("host") or "127.0.0.1")
    if bind not in _WILDCARD:
        return bind
    return to_text(hostvars_of_host.get("ansible_host") or inventory_hostname)


def pd_router_workers(hostvars, groups, prefill_group="sglang_prefill", decode_group="sglang_decode"):
    """Collect the prefill and decode workers of every host of the two groups.

    Returns ``{"prefill": [...], "decode": [...]}``; each worker is a dict with ``url``,
    ``bootstrap_port`` (prefill), ``inventory_host``, ``instance``, ``unit`` and ``bind_host``.
    Instances inherit ``host`` from the host's ``sglang_server_host`` when set in the inventory.
    """
    result = {"prefill": [], "decode": []}
    for mode, group, var in (("prefill", prefill_group, "sglang_prefill_instances"),
                             ("decode", decode_group, "sglang_decode_instances")):
        for host in (groups or {}).get(group, []) or []:
            hv = hostvars[host] if host in hostvars else {}
            defaults = {"host": hv.get("sglang_server_host")}
            for inst in normalize_instances(hv.get(var) or [], mode, defaults):
                worker = {
                    "url": "http://%s:%s" % (_url_host(_worker_address(inst, hv, host)), inst["port"]),
                    "inventory_host": host,
                    "instance": inst["name"],
                    "unit": inst["unit"],
                    "bind_host": inst["host"],
                }
                if mode == "prefill":
                    worker["bootstrap_port"] = inst.get("bootstrap_port")
                result[mode].append(worker)
    return result


def router_args(workers):
    """Router --prefill URL BOOTSTRAP_PORT / --decode URL lines from pd_router_workers' result."""
    lines = []
    for worker in workers.get("prefill", []):
        line = ["--prefill", worker["url"]]
        if worker.get("bootstrap_port") is not None:
            line.append(worker["bootstrap_port"])
        lines.append(line)
    for worker in workers.get("decode", []):
        lines.append(["--decode", worker["url"]])
    return lines


def wait_endpoint(instance):
    """A pdserve.sglang.wait_ready endpoint for a normalized instance, reached from its own host."""
    host = to_text(instance.get("host") or "127.0.0.1")
    if host in _WILDCARD:
        host = "127.0.0.1"
    return {
        "url": "http://%s:%s" % (_url_host(host), instance["port"]),
        "kind": "server",
        "unit": instance["unit"],
        "name": instance["unit"],
    }


def ready_line(endpoint):
    """One summary line for a wait_ready endpoint result."""
    name = endpoint.get("name") or endpoint.get("url")
    if endpoint.get("ready"):
        line = "%s %s ready in %.1f s" % (name, endpoint.get("url"), float(endpoint.get("seconds") or 0.0))
    else:
        line = "%s %s NOT ready (%s)" % (name, endpoint.get("url"),
                                         endpoint.get("failure") or endpoint.get("last_status") or "no answer")
    workers = (endpoint.get("details") or {}).get("workers")
    if endpoint.get("kind") == "router" and isinstance(workers, dict):
        parts = []
        for kind in sorted(workers):
            value = workers[kind]
            if isinstance(value, dict):
                if not value.get("total"):
                    continue
                parts.append("%s %s/%s healthy" % (kind, value.get("healthy"), value.get("total")))
            else:
                parts.append("%s %s" % (kind, value))
        line += " (workers: %s)" % ", ".join(parts)
    return line


def listening_sockets(lines):
    """Parse the preflight's listener report (roles/sglang_server/tasks/listeners.yml).

    Each line is ``<local address:port>\t<socket uid>\t<pid>:<unit> ...`` (unit ``none`` when the
    process is not in a systemd service; no pairs when /proc could not be read). Returns a list of
    dicts: address, port, uid (int or None), owners [{pid, unit}].
    """
    if isinstance(lines, str):
        lines = lines.splitlines()
    result = []
    for line in lines or []:
        line = to_text(line).strip("\r\n")
        if not line.strip():
            continue
        fields = line.split("\t")
        local = fields[0].strip()
        uid_text = fields[1].strip() if len(fields) > 1 else ""
        owners_text = fields[2] if len(fields) > 2 else ""
        if ":" not in local:
            continue
        address, _sep, port = local.rpartition(":")
        try:
            port = int(port)
        except ValueError:
            continue
        address = address.strip("[]")
        if "%" in address:
            address = address.split("%", 1)[0]
        owners = []
        for owner in owners_text.split():
            pid, _sep, unit = owner.partition(":")
            owners.append({"pid": pid, "unit": unit or "none"})
        result.append({"address": address, "port": port,
                       "uid": int(uid_text) if uid_text.isdigit() else None, "owners": owners})
    return result


def _suggest(name, choices):
    close = difflib.get_close_matches(to_text(name), choices, n=1, cutoff=0.6)
    return " (did you mean %r?)" % close[0] if close else ""


def _check_parsers(model, problems, where):
    reasoning = model.get("reasoning_parser")
    tool = model.get("tool_call_parser")
    if reasoning and reasoning not in REASONING_PARSERS:
        hint = _suggest(reasoning, REASONING_PARSERS)
        if reasoning in TOOL_CALL_PARSERS and not hint:
            hint = " (%r is a tool-call parser name)" % reasoning
        problems.append("%s: sglang_model_reasoning_parser %r is not a reasoning parser of sglang 0.5.23%s; "
                        "choose one of: %s" % (where, reasoning, hint, ", ".join(REASONING_PARSERS)))
    if tool and tool not in TOOL_CALL_PARSERS:
        hint = _suggest(tool, TOOL_CALL_PARSERS)
        problems.append("%s: sglang_model_tool_call_parser %r is not a tool-call parser of sglang 0.5.23%s; "
                        "choose one of: %s" % (where, tool, hint, ", ".join(TOOL_CALL_PARSERS)))
    if reasoning in PARSER_PAIRS and tool and tool in TOOL_CALL_PARSERS and tool not in PARSER_PAIRS[reasoning]:
        problems.append("%s: sglang_model_reasoning_parser %r and sglang_model_tool_call_parser %r belong to "
                        "different model families; with %r use tool-call parser %s"
                        % (where, reasoning, tool, reasoning, " or ".join(repr(t) for t in PARSER_PAIRS[reasoning])))
    backend = model.get("transfer_backend")
    if backend and backend not in TRANSFER_BACKENDS:
        problems.append("%s: sglang_model_transfer_backend %r is not one of %s"
                        % (where, backend, ", ".join(TRANSFER_BACKENDS)))
    context_length = model.get("context_length")
    if context_length is not None and (not _is_int(context_length) or context_length <= 0):
        problems.append("%s: sglang_model_context_length must be a positive integer (tokens), got %r; "
                        "leave it unset to use the model's own maximum" % (where, context_length))
    if not model.get("model_path"):
        problems.append("%s: sglang_model_path is empty; set it to the model directory (or hub id)" % where)


def _instance_var(inst):
    return "sglang_%s_instances[%s]" % (inst.get("mode"), inst.get("name"))


def _check_instance(inst, problems, where, numa_nodes, gpus_by_index, numa_binding):
    var = _instance_var(inst)
    name = inst.get("name")
    if not name or not _NAME_RE.match(to_text(name)):
        problems.append("%s: %s has name %r; give every instance a name of letters, digits, '.', '_' or '-' "
                        "(the unit is sglang-<name>.service)" % (where, var, name))
    if not _is_int(inst.get("port")):
        problems.append("%s: %s.port is required and must be an integer port, got %r" % (where, var, inst.get("port")))
    for key in ("port", "bootstrap_port", "dist_init_port"):
        value = inst.get(key)
        if value is None:
            continue
        if not _is_int(value) or not 1 <= value <= 65535:
            problems.append("%s: %s.%s must be a port between 1 and 65535, got %r" % (where, var, key, value))
    gpus = inst.get("gpus") or []
    if not isinstance(gpus, list) or any(not _is_int(g) or g < 0 for g in gpus):
        problems.append("%s: %s.gpus must be a list of GPU indexes (integers >= 0), got %r" % (where, var, gpus))
    elif len(set(gpus)) != len(gpus):
        problems.append("%s: %s.gpus lists a GPU twice: %r" % (where, var, gpus))
    tp_size = inst.get("tp_size")
    if not _is_int(tp_size) or tp_size < 1:
        problems.append("%s: %s.tp_size must be a positive integer, got %r" % (where, var, tp_size))
    elif gpus and isinstance(gpus, list) and tp_size != len(gpus):
        problems.append("%s: %s.tp_size is %s but gpus lists %d GPU(s) %r; make tp_size equal to the number of "
                        "GPUs (or drop tp_size: it defaults to len(gpus))" % (where, var, tp_size, len(gpus), gpus))
    mem = inst.get("mem_fraction_static")
    if mem is not None and (isinstance(mem, bool) or not isinstance(mem, (int, float)) or not 0 < mem < 1):
        problems.append("%s: %s.mem_fraction_static must be a number strictly between 0 and 1, got %r"
                        % (where, var, mem))
    context_length = inst.get("context_length")
    if context_length is not None and (not _is_int(context_length) or context_length <= 0):
        problems.append("%s: %s.context_length must be a positive integer, got %r" % (where, var, context_length))
    if not isinstance(inst.get("extra_args"), list):
        problems.append("%s: %s.extra_args must be a list of strings" % (where, var))
    if not isinstance(inst.get("env"), dict):
        problems.append("%s: %s.env must be a dict" % (where, var))
    numa = inst.get("numa_node")
    if numa is not None:
        if numa_binding == "none":
            pass
        elif not _is_int(numa) or numa < 0:
            problems.append("%s: %s.numa_node must be a NUMA node number, got %r" % (where, var, numa))
        elif numa_nodes is not None and numa not in numa_nodes:
            problems.append("%s: %s.numa_node is %s but the host has NUMA node(s) %s; pick one of them or drop "
                            "numa_node" % (where, var, numa, sorted(numa_nodes)))
    if gpus_by_index is not None and isinstance(gpus, list):
        for gpu in gpus:
            if not _is_int(gpu):
                continue
            if gpu not in gpus_by_index:
                problems.append("%s: %s.gpus uses GPU %s but the host has GPU index(es) %s"
                                % (where, var, gpu, sorted(gpus_by_index)))
                continue
            gpu_numa = gpus_by_index[gpu].get("numa_node")
            if (numa is not None and numa_binding != "none" and gpu_numa is not None and _is_int(numa)
                    and gpu_numa != numa):
                problems.append("%s: %s.numa_node is %s but GPU %s is attached to NUMA node %s (gpu_facts); set "
                                "numa_node to %s or move the instance to GPUs of node %s"
                                % (where, var, numa, gpu, gpu_numa, gpu_numa, numa))


def preflight_problems(data):
    """Every problem of one host's serving layout, as a list of messages (empty when fine).

    ``data`` keys: host (inventory name), instances (normalized, both modes), model (shared model
    settings; None skips the model checks), router (dict with host, port, prometheus_host, prometheus_port, workers, or None when the
    host runs no router), listeners (listening_sockets result or None), own_uids (uids whose
    sockets are ours when owners are unknown), numa_nodes (list of ints or
    None when unknown), gpus (gpu_facts list or None when the host has no GPU facts), path_results
    (registered ansible.builtin.stat loop results whose item has var and path), numa_binding,
    numactl_present (bool or None), nvidia_uvm_missing (bool). The router's worker checks run only when
    ``router.workers`` is given (the router role passes pd_router_workers' result).
    """
    where = "host %s" % data.get("host")
    problems = []
    instances = data.get("instances") or []
    model = data.get("model") or {}
    router = data.get("router")
    numa_binding = data.get("numa_binding", "numactl")
    numa_nodes = data.get("numa_nodes")
    gpus = data.get("gpus")
    gpus_by_index = None
    if gpus:
        gpus_by_index = dict((g.get("index"), g) for g in gpus if isinstance(g, dict))

    if numa_binding not in NUMA_BINDINGS:
        problems.append("%s: sglang_server_numa_binding must be one of %s, got %r"
                        % (where, ", ".join(NUMA_BINDINGS), numa_binding))
    if instances and data.get("model") is not None:
        _check_parsers(model, problems, where)

    seen_names = {}
    for inst in instances:
        name = inst.get("name")
        if name in seen_names:
            problems.append("%s: instance name %r is used by %s and %s; names must be unique per host (they name "
                            "the units)" % (where, name, _instance_var(seen_names[name]), _instance_var(inst)))
        else:
            seen_names[name] = inst
        if router is not None and inst.get("unit") == ROUTER_UNIT:
            problems.append("%s: %s is named 'router', which clashes with the router unit %s; rename it"
                            % (where, _instance_var(inst), ROUTER_UNIT))
        _check_instance(inst, problems, where, numa_nodes, gpus_by_index, numa_binding)

    gpu_users = {}
    for inst in instances:
        for gpu in inst.get("gpus") if isinstance(inst.get("gpus"), list) else []:
            if gpu in gpu_users and gpu_users[gpu] is not inst:
                problems.append("%s: GPU %s is given to both %s and %s; give each GPU to one instance"
                                % (where, gpu, _instance_var(gpu_users[gpu]), _instance_var(inst)))
            else:
                gpu_users.setdefault(gpu, inst)

    # Ports: every port this host will listen on, with the variable that sets it.
    ports = []
    for inst in instances:
        for key in ("port", "bootstrap_port", "dist_init_port"):
            if _is_int(inst.get(key)):
                ports.append((inst[key], "%s.%s" % (_instance_var(inst), key)))
    if router is not None:
        ports.append((router.get("port"), "sglang_router_port"))
        if router.get("prometheus_port") is not None:
            ports.append((router.get("prometheus_port"), "sglang_router_prometheus_port"))
    users = {}
    for port, var in ports:
        if port in users:
            problems.append("%s: port %s is used by both %s and %s; give each its own port"
                            % (where, port, users[port], var))
        else:
            users[port] = var

    own_uids = set(int(u) for u in data.get("own_uids") or [])
    for sock in data.get("listeners") or []:
        if sock["port"] not in users:
            continue
        owners = sock.get("owners") or []
        if owners:
            # Any sglang-*.service is one of ours: the current instances, the router, or an instance
            # that left the inventory, which the role stops before starting the new units.
            foreign = [o for o in owners
                       if not (o.get("unit", "").startswith(UNIT_PREFIX) and o["unit"].endswith(".service"))]
            if not foreign:
                continue
            who = ", ".join("pid %s (%s)" % (o["pid"], o["unit"] if o["unit"] != "none" else "not a systemd service")
                            for o in foreign)
        elif sock.get("uid") is not None and sock["uid"] in own_uids:
            # /proc was not readable (no owners); a socket of the service user is one of ours.
            continue
        else:
            who = "a process of uid %s that is not the service user" % sock.get("uid")
        problems.append("%s: %s wants port %s but %s:%s is already held by %s; stop that process or choose "
                        "another port" % (where, users[sock["port"]], sock["port"], sock["address"],
                                          sock["port"], who))

    for result in data.get("path_results") or []:
        stat = result.get("stat")
        item = result.get("item") or {}
        if stat is not None and not stat.get("exists"):
            problems.append("%s: %s points to %s, which does not exist on the host; fix the path, install it "
                            "first, or set sglang_server_check_paths: false (e.g. for a hub id)"
                            % (where, item.get("var"), item.get("path")))

    if data.get("nvidia_uvm_missing"):
        problems.append("%s: /dev/nvidia-uvm is missing and the units run with NoNewPrivileges, so CUDA cannot "
                        "load nvidia_uvm itself; load it at boot (nvidia-persistenced or modules-load.d, the "
                        "nvidia_driver role does) or set sglang_server_systemd_hardening_overrides: "
                        "{NoNewPrivileges: false}" % where)

    if numa_binding == "numactl" and data.get("numactl_present") is False and any(
            i.get("numa_node") is not None for i in instances):
        problems.append("%s: sglang_server_numa_binding is 'numactl' but numactl is not installed; install the "
                        "numactl package, or set sglang_server_numa_binding to 'sglang' or 'none'" % where)

    if router is not None and router.get("workers") is not None:
        workers = router["workers"]
        if not workers.get("prefill"):
            problems.append("%s: the router has no prefill worker: no host of group %s defines "
                            "sglang_prefill_instances; add one to the inventory"
                            % (where, router.get("prefill_group", "sglang_prefill")))
        if not workers.get("decode"):
            problems.append("%s: the router has no decode worker: no host of group %s defines "
                            "sglang_decode_instances; add one to the inventory"
                            % (where, router.get("decode_group", "sglang_decode")))
        seen_urls = {}
        for kind in ("prefill", "decode"):
            for worker in workers.get(kind) or []:
                label = "sglang_%s_instances[%s] on %s" % (kind, worker.get("instance"), worker.get("inventory_host"))
                if worker["url"] in seen_urls:
                    problems.append("%s: %s and %s both resolve to %s; give each a distinct host:port"
                                    % (where, seen_urls[worker["url"]], label, worker["url"]))
                seen_urls.setdefault(worker["url"], label)
                if (worker.get("inventory_host") != data.get("host")
                        and to_text(worker.get("bind_host")) in _LOOPBACK):
                    problems.append("%s: the router cannot reach %s: it binds %s on another host; set its host "
                                    "(or sglang_server_host) to an address the router host can reach"
                                    % (where, label, worker.get("bind_host")))
                if kind == "prefill" and worker.get("bootstrap_port") is None:
                    problems.append("%s: %s has no bootstrap_port; the router needs it for the KV handshake"
                                    % (where, label))
    return problems


class FilterModule(object):
    """pdserve.sglang filters."""

    def filters(self):
        return {
            "systemd_quote": systemd_quote,
            "env_quote": env_quote,
            "normalize_instances": normalize_instances,
            "server_args": server_args,
            "flag_check_lines": flag_check_lines,
            "pd_router_workers": pd_router_workers,
            "router_args": router_args,
            "group_args": group_args,
            "listening_sockets": listening_sockets,
            "wait_endpoint": wait_endpoint,
            "ready_line": ready_line,
            "preflight_problems": preflight_problems,
        }
