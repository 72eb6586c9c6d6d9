# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Command lines of the model servers (sglang.launch_server) and the PD router (sglang_router.launch_router).

Each is a list of lines; a line is the flag first, then its values, unquoted (the unit renderer
quotes them). The same lines go to the installed packages' own argument parsers (sglang_flag_check)
before a unit changes.
"""

from typing import Any, Dict, Iterable, List, Optional

from ansible_collections.pdserve.sglang.plugins.module_utils.serving.instances import url_host

# Parallelism over all nodes of an instance -> flag; written only when the instance sets it.
PARALLEL_FLAGS = (
    ("pp_size", "--pp-size"),
    ("ep_size", "--ep-size"),
    ("attn_dp_size", "--attn-dp-size"),
    ("dp_size", "--dp-size"),
)
# The PD router implementations the launcher can start (sglang_router_implementation) -> their Python package, whose
# launch_router module parses the same flags (parse_router_args) and whose router_args.RouterArgs the flag check uses.
ROUTER_IMPLEMENTATIONS = {"sglang-router": "sglang_router", "smg": "smg"}
# Router settings -> flag, in the order they appear in the unit. None or "" leaves a flag out.
ROUTER_FLAGS = (
    ("policy", "--policy"),
    ("prefill_policy", "--prefill-policy"),
    ("decode_policy", "--decode-policy"),
    ("request_timeout_secs", "--request-timeout-secs"),
    ("worker_startup_timeout_secs", "--worker-startup-timeout-secs"),
    ("worker_startup_check_interval", "--worker-startup-check-interval"),
    ("health_check_interval_secs", "--health-check-interval-secs"),
    ("health_failure_threshold", "--health-failure-threshold"),
    ("health_success_threshold", "--health-success-threshold"),
    ("health_check_timeout_secs", "--health-check-timeout-secs"),
    ("retry_max_retries", "--retry-max-retries"),
    ("retry_initial_backoff_ms", "--retry-initial-backoff-ms"),
    ("retry_max_backoff_ms", "--retry-max-backoff-ms"),
    ("cb_failure_threshold", "--cb-failure-threshold"),
    ("cb_success_threshold", "--cb-success-threshold"),
    ("cb_timeout_duration_secs", "--cb-timeout-duration-secs"),
    ("shutdown_grace_period_secs", "--shutdown-grace-period-secs"),
    ("log_level", "--log-level"),
)
# Boolean router settings -> flag given when true.
ROUTER_SWITCHES = (
    ("disable_circuit_breaker", "--disable-circuit-breaker"),
    ("disable_retries", "--disable-retries"),
)
# The router's keys never reach a command line: the unit loads each as a systemd credential (LoadCredential=) and the
# launcher (roles/sglang_router/files/pdserve_router_launch.py) adds the flag in Python. Setting -> (credential name,
# the launcher's option that names it, the router flag the launcher adds).
ROUTER_CREDENTIALS = (
    ("api_key", "router-api-key", "--api-key-credential", "--api-key"),
    ("control_plane_api_key", "router-control-plane-api-key", "--control-plane-api-key-credential",
     "--control-plane-api-keys"),
)
# The router's TLS certificate and key (sglang_router_tls) travel the same way, but the router reads files: the launcher
# adds the flag with the path of the credential systemd hands the process ($CREDENTIALS_DIRECTORY/NAME).
ROUTER_TLS_CREDENTIALS = (
    ("tls_cert", "router-tls-cert", "--tls-cert-credential", "--tls-cert-path"),
    ("tls_key", "router-tls-key", "--tls-key-credential", "--tls-key-path"),
)
# Where systemd puts the router's credentials ($CREDENTIALS_DIRECTORY): what the flag check sees for a TLS path.
CREDENTIALS_DIRECTORY = "/run/credentials/sglang-router.service"
# The launcher's control-plane entry (id:name:role:key, role admin: the day-2 modules add and remove workers).
CONTROL_PLANE_ENTRY = "pdserve:pdserve-operations:admin:%s"
# What the flag check sees instead of a key: the parser judges the flag and the entry's format, never the key.
KEY_PLACEHOLDER = "KEY-FROM-CREDENTIAL"


def group_args(tokens: Optional[Iterable[Any]]) -> List[List[str]]:
    """Group a flat list of words into lines: a new line at each word starting with -."""
    lines: List[List[str]] = []
    for token in tokens or []:
        token = str(token)
        if token.startswith("-") or not lines:
            lines.append([token])
        else:
            lines[-1].append(token)
    return lines


def local_ranks(instance: Dict[str, Any]) -> int:
    """The GPUs (scheduler processes) of one node of an instance: tp x pp / nnodes (tp_size on one host)."""
    if not instance.get("nodes"):
        return int(instance["tp_size"])
    return max(int(instance["tp_size"]) * int(instance.get("pp_size") or 1) // int(instance.get("nnodes") or 1), 1)


def server_args(instance: Dict[str, Any], model: Dict[str, Any], numa_binding: str = "numactl", enable_metrics: bool = True) -> List[List[Any]]:
    """The sglang.launch_server lines of one normalized instance.

    ``model``: model_path, served_model_name, chat_template, reasoning_parser, tool_call_parser,
    transfer_backend, context_length, extra_args (shared by every instance).
    """
    model = model or {}
    lines: List[List[Any]] = [["--model-path", model.get("model_path")]]
    if model.get("served_model_name"):
        lines.append(["--served-model-name", model["served_model_name"]])
    lines += [
        ["--host", instance["host"]],
        ["--port", instance["port"]],
        ["--tp-size", instance["tp_size"]],
    ]
    for key, flag in PARALLEL_FLAGS:
        if instance.get(key) is not None:
            lines.append([flag, instance[key]])
    lines.append(["--disaggregation-mode", instance["mode"]])
    if model.get("transfer_backend"):
        lines.append(["--disaggregation-transfer-backend", model["transfer_backend"]])
    if instance.get("bootstrap_port") is not None:
        lines.append(["--disaggregation-bootstrap-port", instance["bootstrap_port"]])
    if instance.get("dist_init_port") is not None:
        lines.append(["--dist-init-addr", "%s:%s" % (url_host(instance["dist_init_host"]), instance["dist_init_port"])])
    if instance.get("nodes"):
        # One instance over several nodes: the same line on every node but --node-rank.
        lines.append(["--nnodes", instance["nnodes"]])
        lines.append(["--node-rank", instance["node_rank"]])
    if instance.get("dist_timeout") is not None:
        lines.append(["--dist-timeout", instance["dist_timeout"]])
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
        lines.append(["--numa-node"] + [instance["numa_node"]] * local_ranks(instance))
    if enable_metrics:
        lines.append(["--enable-metrics"])
    lines += group_args(model.get("extra_args"))
    lines += group_args(instance.get("extra_args"))
    return lines


def worker_lines(workers: Dict[str, List[Dict[str, Any]]]) -> List[List[Any]]:
    """The router's --prefill URL [BOOTSTRAP_PORT] and --decode URL lines for ``workers`` ({"prefill", "decode"})."""
    lines = []
    for worker in workers.get("prefill") or []:
        line = ["--prefill", worker["url"]]
        if worker.get("bootstrap_port") is not None:
            line.append(worker["bootstrap_port"])
        lines.append(line)
    for worker in workers.get("decode") or []:
        lines.append(["--decode", worker["url"]])
    return lines


def worker_set(workers: Dict[str, List[Dict[str, Any]]]) -> Dict[str, List[Dict[str, Any]]]:
    """The worker set file's content: what the launcher turns into worker_lines at the router's start."""
    return {
        "prefill": [{"url": w["url"], "bootstrap_port": w.get("bootstrap_port")} for w in workers.get("prefill") or []],
        "decode": [{"url": w["url"]} for w in workers.get("decode") or []],
    }


def router_args(router: Dict[str, Any], settings: Dict[str, Any]) -> List[List[Any]]:
    """The sglang_router.launch_router lines: PD mode, the listen addresses, the settings.

    ``router``: a topology router (host, port, prometheus_host, prometheus_port). ``settings``: keys of ROUTER_FLAGS
    and ROUTER_SWITCHES, plus extra_args. Never a worker (the launcher adds them from the worker set file, so a
    change of workers alone does not change the unit) and never a key (see credential_lines).
    """
    lines = [["--pd-disaggregation"]]
    lines += [
        ["--host", router["host"]],
        ["--port", router["port"]],
        ["--prometheus-host", router["prometheus_host"]],
        ["--prometheus-port", router["prometheus_port"]],
    ]
    for key, flag in ROUTER_FLAGS:
        value = settings.get(key)
        if value is not None and value != "":
            lines.append([flag, value])
    for key, flag in ROUTER_SWITCHES:
        if settings.get(key):
            lines.append([flag])
    lines += group_args(settings.get("extra_args"))
    return lines


def router_credentials(settings: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The keys, then the TLS certificate and key, set in ``settings``, in launcher order: [{setting, name, option,
    flag, path}] (``path``: the router gets the credential's path, not its content)."""
    found = [{"setting": setting, "name": name, "option": option, "flag": flag, "path": False}
             for setting, name, option, flag in ROUTER_CREDENTIALS if settings.get(setting)]
    found += [{"setting": setting, "name": name, "option": option, "flag": flag, "path": True}
              for setting, name, option, flag in ROUTER_TLS_CREDENTIALS if settings.get(setting)]
    return found


def credential_lines(settings: Dict[str, Any], value: str = KEY_PLACEHOLDER,
                     directory: str = CREDENTIALS_DIRECTORY) -> List[List[str]]:
    """The lines the launcher adds for the credentials set in ``settings``: ``value`` for each key (the flag check's
    placeholder by default), the path under ``directory`` for the TLS certificate and key."""
    lines = []
    for item in router_credentials(settings):
        if item["path"]:
            lines.append([item["flag"], "%s/%s" % (directory, item["name"])])
        else:
            lines.append([item["flag"], CONTROL_PLANE_ENTRY % value if item["setting"] == "control_plane_api_key" else value])
    return lines


def argv(lines: Iterable[Iterable[Any]]) -> List[str]:
    """The words of the lines, as the process receives them (after the launch command)."""
    return [str(word) for line in lines for word in line]
