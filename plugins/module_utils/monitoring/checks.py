# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The monitoring preflight's judgement: the layout (monitoring_targets), the role's options and what the host
shows (listening sockets). Pure: the module gathers ``observed`` and calls ``judge``."""

from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring import rules as monitoring_rules

from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring import targets as monitoring_targets
from ansible_collections.pdserve.sglang.plugins.module_utils.problems import problem, unique
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.instances import is_loopback

OPTION_DEFAULTS = {
    "prometheus_install": "package",
    "package_source": "apt",
    "deb_files": [],
    "gpu_exporter_source": "nvidia_repo",
    "gpu_exporter_deb_files": [],
    "grafana_source": "none",
    "grafana_admin_password_set": False,
    "grafana_deb_file": "",
    "own_units": [],
    "own_uids": [],
    "prometheus_host": "127.0.0.1",
    "prometheus_basic_auth_users": False,
    "prometheus_client_auth_set": False,
    "prometheus_allow_unauthenticated": False,
}


def wanted_ports(topology: Dict[str, Any], host: str, settings: Optional[Dict[str, Any]],
                 options: Optional[Dict[str, Any]]) -> List[Tuple[Any, str]]:
    """[(port, variable)] the role's services will listen on, on ``host``, that the role itself installs."""
    settings = monitoring_targets._settings(settings)  # pylint: disable=protected-access
    options = dict(OPTION_DEFAULTS, **(options or {}))
    ports = []
    if host in monitoring_targets.exporter_hosts(topology, settings) and settings["node_exporter"].get("enabled", True):
        ports.append((settings["node_exporter"]["port"], "monitoring_node_exporter_port"))
    if host in settings["gpu_hosts"] and options["gpu_exporter_source"] != "none":
        ports.append((settings["gpu_exporter"]["port"], "monitoring_gpu_exporter_port"))
    if host in settings["monitoring_hosts"]:
        if options["prometheus_install"] != "none":
            ports.append((settings["prometheus"]["port"], "monitoring_prometheus_port"))
        if settings["alertmanager"].get("enabled"):
            ports.append((settings["alertmanager"]["port"], "monitoring_alertmanager_port"))
        if options["grafana_source"] != "none":
            ports.append((settings["grafana"]["port"], "monitoring_grafana_port"))
    return ports


def _listener_problems(host, ports, listeners, own_units, own_uids):
    problems = []
    wanted = dict(ports)
    for sock in listeners or []:
        if sock.get("port") not in wanted:
            continue
        owners = sock.get("owners") or []
        foreign = [o for o in owners if o.get("unit") not in own_units]
        if owners and not foreign:
            continue
        # /proc does not show the owner (a container without CAP_SYS_PTRACE): the service user tells
        if not owners and sock.get("uid") in own_uids:
            continue
        if foreign:
            who = ", ".join("pid %s (%s)" % (o.get("pid"), o.get("unit") if o.get("unit") != "none"
                                             else "not a systemd service") for o in foreign)
        else:
            who = "a process of uid %s" % sock.get("uid")
        problems.append(problem(host, wanted[sock["port"]], "wants port %s but %s:%s is already held by %s"
                                % (sock["port"], sock.get("address"), sock["port"], who),
                                "stop that process or choose another port"))
    return problems


def _option_problems(host, settings, options, rule_params):
    options = dict(OPTION_DEFAULTS, **(options or {}))
    problems = []
    is_monitoring = host in settings["monitoring_hosts"]
    if is_monitoring and options["grafana_source"] != "none" and not options["grafana_admin_password_set"]:
        problems.append(problem(host, "monitoring_grafana_admin_password",
                                "is empty but monitoring_grafana_source is %r (Grafana would keep admin/admin)"
                                % options["grafana_source"], "set it (from a vault) or use monitoring_grafana_source: none"))
    if is_monitoring and options["grafana_source"] == "deb_file" and not options["grafana_deb_file"]:
        problems.append(problem(host, "monitoring_grafana_deb_file", "is empty but monitoring_grafana_source is deb_file",
                                "give the path of grafana_<version>_amd64.deb on the controller"))
    if options["package_source"] == "deb_files" and not options["deb_files"]:
        problems.append(problem(host, "monitoring_deb_files", "is empty but monitoring_package_source is deb_files",
                                "list the .deb files (with their dependencies) on the controller, or use apt"))
    if host in settings["gpu_hosts"] and options["gpu_exporter_source"] == "deb_files" \
            and not options["gpu_exporter_deb_files"]:
        problems.append(problem(host, "monitoring_gpu_exporter_deb_files",
                                "is empty but monitoring_gpu_exporter_source is deb_files",
                                "list datacenter-gpu-manager-exporter and datacenter-gpu-manager-4-core .deb files"))
    if is_monitoring and options["prometheus_install"] != "none":
        problems.extend(_prometheus_auth_problems(host, options))
    if is_monitoring and rule_params is not None:
        try:
            monitoring_rules.rule_groups(rule_params)
        except monitoring_rules.RuleError as exc:
            text = str(exc)
            variable = text.split(" ", 1)[0] if text.startswith("monitoring_") else "monitoring_alert_*"
            problems.append(problem(host, variable, text, "correct the value in the inventory"))
    return problems


def _prometheus_auth_problems(host, options):
    """Prometheus answers every query and its admin API to whoever reaches it: off loopback it wants basic auth,
    and the role's own clients (the verify step, Grafana's datasource) then need the credentials."""
    problems = []
    if not is_loopback(options["prometheus_host"]) and not options["prometheus_basic_auth_users"] \
            and not options["prometheus_allow_unauthenticated"]:
        problems.append(problem(
            host, "monitoring_prometheus_web_config",
            "has no basic_auth_users but Prometheus listens on %s (monitoring_prometheus_host), where other hosts "
            "reach it without a password" % options["prometheus_host"],
            "add basic_auth_users (a bcrypt hash) and monitoring_prometheus_client_auth, keep "
            "monitoring_prometheus_host on 127.0.0.1, or set monitoring_prometheus_allow_unauthenticated: true "
            "for a network you trust"))
    if options["prometheus_basic_auth_users"] and not options["prometheus_client_auth_set"]:
        problems.append(problem(
            host, "monitoring_prometheus_client_auth",
            "is empty but monitoring_prometheus_web_config asks for basic auth: the verify step and Grafana would get 401",
            "set {username, password} of one of the basic_auth_users (the password from a vault)"))
    return problems


def judge(host: str, topology: Dict[str, Any], settings: Optional[Dict[str, Any]],
          options: Optional[Dict[str, Any]] = None, observed: Optional[Dict[str, Any]] = None,
          rule_params: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
    """Every monitoring problem of ``host``: on a monitoring host the whole layout it scrapes (problems of other
    hosts name those hosts), everywhere the ports and options of what runs there, and foreign listeners."""
    settings = monitoring_targets._settings(settings)  # pylint: disable=protected-access
    options = dict(OPTION_DEFAULTS, **(options or {}))
    problems = []
    if host in settings["monitoring_hosts"]:
        problems.extend(monitoring_targets.targets(topology, host, settings)[1])
    problems.extend(monitoring_targets.port_problems(topology, host, settings))
    problems.extend(_option_problems(host, settings, options, rule_params))
    if observed and observed.get("listeners") is not None:
        problems.extend(_listener_problems(host, wanted_ports(topology, host, settings, options),
                                           observed["listeners"], set(options["own_units"]),
                                           set(options["own_uids"])))
    return unique(problems)
