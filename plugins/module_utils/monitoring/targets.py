# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What Prometheus scrapes, from the serving topology: pure functions, unit-tested.

Every prefill and decode instance's ``/metrics``, every router's own metrics port, a node exporter on every
serving (and monitoring) host and a GPU exporter on every GPU host, each target labelled with its inventory
host, its role and (for SGLang) its instance name. Targets are never typed twice: they come from the
topology of ``pdserve.sglang.serving_topology`` and the monitoring settings. A layout Prometheus cannot
scrape is reported as problems ``{host, variable, message, fix}``, each naming the variable to change.
"""

from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from ansible_collections.pdserve.sglang.plugins.module_utils.problems import problem
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.instances import (
    host_ports,
    instance_variable,
    is_int,
    is_loopback,
    url_host,
)
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.topology import local_host, reach_host

JOBS = ("sglang-prefill", "sglang-decode", "sglang-router", "node", "gpu", "prometheus", "alertmanager")
SGLANG_JOBS = JOBS[:3]
# Prometheus 2.x negotiates a format in which prometheus_client (SGLang's /metrics) writes sample names with
# '_' instead of ':' (prometheus/client_python#1177): store them under SGLang's own names again.
SGLANG_RELABEL = [
    {"source_labels": ["__name__"], "regex": "sglang_(.+)", "target_label": "__name__", "replacement": "sglang:$1"},
]
DEFAULTS = {
    "monitoring_hosts": [],
    "gpu_hosts": [],
    "extra_hosts": [],
    "addresses": {},
    "exporter_hosts": {},
    "prometheus": {"host": "127.0.0.1", "port": 9090},
    "alertmanager": {"enabled": False, "port": 9093},
    "grafana": {"enabled": False, "host": "127.0.0.1", "port": 3000},
    "node_exporter": {"enabled": True, "port": 9100, "scrape_auth": {}},
    "gpu_exporter": {"scrape": True, "port": 9400, "scrape_auth": {}},
}


def _settings(settings):
    out = dict(DEFAULTS)
    for key, value in (settings or {}).items():
        if isinstance(DEFAULTS.get(key), dict) and isinstance(value, dict):
            merged = dict(DEFAULTS[key])
            merged.update(value)
            out[key] = merged
        elif value is not None:
            out[key] = value
    return out


def _address(topology, settings, host):
    entry = (topology.get("hosts") or {}).get(host)
    if entry and entry.get("address"):
        return str(entry["address"])
    return str((settings["addresses"] or {}).get(host) or host)


def exporter_hosts(topology: Dict[str, Any], settings: Optional[Dict[str, Any]]) -> List[str]:
    """Every host that runs exporters: serving hosts, GPU hosts and monitoring hosts, inventory order."""
    settings = _settings(settings)
    hosts = []
    for host in list((topology.get("hosts") or {}).keys()) + list(settings["gpu_hosts"]) + \
            list(settings["extra_hosts"]) + list(settings["monitoring_hosts"]):
        if host not in hosts:
            hosts.append(host)
    return hosts


def exporter_bind(topology: Dict[str, Any], settings: Optional[Dict[str, Any]], host: str) -> str:
    """The address a host's exporters listen on.

    ``exporter_hosts[host]`` when set; else loopback when the only Prometheus runs on this very host,
    else the host's address (how the inventory reaches it).
    """
    settings = _settings(settings)
    given = (settings["exporter_hosts"] or {}).get(host)
    if given:
        return str(given)
    if list(settings["monitoring_hosts"]) == [host]:
        return "127.0.0.1"
    return _address(topology, settings, host)


def _join(host, port):
    return "%s:%s" % (url_host(host), port)


def _endpoint(bind, address, port, same_host):
    """host:port Prometheus uses, and whether it can reach it (False: loopback on another host)."""
    if same_host:
        return _join(local_host(bind), port), True
    reach = reach_host(bind, address)
    return _join(reach, port), not is_loopback(reach)


def _strip(url):
    return url.split("://", 1)[-1].split("/", 1)[0]


def targets(topology: Dict[str, Any], monitoring_host: str,
            settings: Optional[Dict[str, Any]] = None) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """``(targets, problems)`` for the Prometheus on ``monitoring_host``.

    A target: ``{job, address, labels: {host, role, sglang_instance?}}``. A problem names the variable that
    makes an endpoint unreachable from ``monitoring_host`` or a server whose metrics are off.
    """
    settings = _settings(settings)
    found = []
    problems = []
    hosts = topology.get("hosts") or {}
    for inv_host, entry in hosts.items():
        same = inv_host == monitoring_host
        for mode in ("prefill", "decode"):
            for inst in entry.get(mode) or []:
                if not inst.get("metrics", True):
                    problems.append(problem(
                        inv_host, "sglang_server_enable_metrics",
                        "%s on %s serves no /metrics (sglang_server_enable_metrics is false): Prometheus cannot "
                        "watch it and the alerts would stay silent" % (instance_variable(inst), inv_host),
                        "set sglang_server_enable_metrics: true for %s (SGLang's --enable-metrics)" % inv_host))
                    continue
                url = inst.get("local_url") if same else inst.get("url")
                if not url:
                    continue  # a malformed port: the serving preflight reports it
                if not same and is_loopback(inst.get("reach_host")):
                    problems.append(problem(
                        inv_host, "%s.host" % instance_variable(inst),
                        "Prometheus on %s cannot scrape %s: it is served on %s, a loopback address of %s"
                        % (monitoring_host, inst["metrics_url"], inst["reach_host"], inv_host),
                        "bind the instance to an address of %s that %s can reach (its host, or sglang_server_host "
                        "of %s), or run Prometheus on %s" % (inv_host, monitoring_host, inv_host, inv_host)))
                    continue
                labels = {"host": inv_host, "role": mode, "sglang_instance": inst["name"]}
                if (inst.get("nnodes") or 1) > 1:
                    # One instance over several hosts: every node is scraped (a rank > 0's dummy server serves its own
                    # schedulers' /metrics), and its series say which node of the one instance they come from.
                    labels.update(node_rank=str(inst.get("node_rank") or 0), nnodes=str(inst["nnodes"]))
                found.append({"job": "sglang-%s" % mode, "address": _strip(url), "labels": labels})
        router = entry.get("router")
        if router:
            url = router.get("prometheus_local_url") if same else router.get("prometheus_url")
            if not url:
                problems.append(problem(
                    inv_host, "sglang_router_prometheus_host",
                    "Prometheus on %s cannot scrape the router's metrics on %s: they are served on %s, a loopback "
                    "address of %s" % (monitoring_host, inv_host, router.get("prometheus_host"), inv_host),
                    "set sglang_router_prometheus_host of %s to an address %s can reach (or 0.0.0.0), "
                    "or run Prometheus on %s" % (inv_host, monitoring_host, inv_host)))
            else:
                found.append({"job": "sglang-router", "address": _strip(url),
                              "labels": {"host": inv_host, "role": "router", "sglang_instance": "router"}})
    exporters = [("node", settings["node_exporter"], exporter_hosts(topology, settings))]
    if settings["gpu_exporter"].get("scrape"):
        exporters.append(("gpu", settings["gpu_exporter"], list(settings["gpu_hosts"])))
    for job, spec, hosts_of_job in exporters:
        if job == "node" and not spec.get("enabled", True):
            continue
        for inv_host in hosts_of_job:
            bind = exporter_bind(topology, settings, inv_host)
            address, reachable = _endpoint(bind, _address(topology, settings, inv_host), spec["port"],
                                           inv_host == monitoring_host)
            if not reachable:
                problems.append(problem(
                    inv_host, "monitoring_exporter_host",
                    "Prometheus on %s cannot scrape the %s exporter of %s: it would listen on %s, a loopback address"
                    % (monitoring_host, job, inv_host, bind),
                    "set monitoring_exporter_host of %s to an address %s can reach" % (inv_host, monitoring_host)))
                continue
            found.append({"job": job, "address": address, "labels": {"host": inv_host, "role": job}})
    prom = settings["prometheus"]
    found.append({"job": "prometheus", "address": _join(local_host(prom["host"]), prom["port"]),
                  "labels": {"host": monitoring_host, "role": "prometheus"}})
    if settings["alertmanager"].get("enabled"):
        manager = settings["alertmanager"]
        found.append({"job": "alertmanager", "address": _join(local_host(manager.get("host", "127.0.0.1")), manager["port"]),
                      "labels": {"host": monitoring_host, "role": "alertmanager"}})
    return found, problems


def _sglang_interval(prom):
    """The SGLang jobs' own ``scrape_interval`` (and a timeout within it): ``sglang_scrape_interval`` seconds where
    that is shorter than the global interval (0: the global one). Their queues and latency histograms change with
    every request, and a server or router that just became ready is seen sooner."""
    interval = int(prom.get("scrape_interval", 15))
    mine = int(prom.get("sglang_scrape_interval") or 0)
    if mine <= 0 or mine >= interval:
        return {}
    return {"scrape_interval": "%ds" % mine,
            "scrape_timeout": "%ds" % min(int(prom.get("scrape_timeout", 10)), mine)}


def scrape_configs(found: List[Dict[str, Any]], settings: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
    """Prometheus ``scrape_configs`` for the targets, one job each, SGLang jobs with the name fix."""
    settings = _settings(settings)
    configs = []
    for job in JOBS:
        mine = [t for t in found if t["job"] == job]
        if not mine:
            continue
        config: Dict[str, Any] = {"job_name": job}
        auth = {"node": settings["node_exporter"].get("scrape_auth"),
                "gpu": settings["gpu_exporter"].get("scrape_auth"),
                "prometheus": settings["prometheus"].get("scrape_auth")}.get(job) or {}
        if isinstance(auth, dict):
            config.update(auth)
        config["static_configs"] = [{"targets": [t["address"]], "labels": dict(sorted(t["labels"].items()))}
                                    for t in mine]
        if job in ("sglang-prefill", "sglang-decode"):
            config["metric_relabel_configs"] = [dict(r) for r in SGLANG_RELABEL]
        if job in SGLANG_JOBS:
            config.update(_sglang_interval(settings["prometheus"]))
        configs.append(config)
    return configs


def port_problems(topology: Dict[str, Any], host: str,
                  settings: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
    """Ports the monitoring services would take on ``host`` that serving units (or each other) already use."""
    settings = _settings(settings)
    entry = (topology.get("hosts") or {}).get(host) or {}
    used: Dict[Any, str] = {}
    for port, var in host_ports((entry.get("prefill") or []) + (entry.get("decode") or []), entry.get("router")):
        used.setdefault(port, var)
    wanted = []
    if host in exporter_hosts(topology, settings) and settings["node_exporter"].get("enabled", True):
        wanted.append((settings["node_exporter"]["port"], "monitoring_node_exporter_port"))
    if host in settings["gpu_hosts"] and settings["gpu_exporter"].get("scrape"):
        wanted.append((settings["gpu_exporter"]["port"], "monitoring_gpu_exporter_port"))
    if host in settings["monitoring_hosts"]:
        wanted.append((settings["prometheus"]["port"], "monitoring_prometheus_port"))
        if settings["alertmanager"].get("enabled"):
            wanted.append((settings["alertmanager"]["port"], "monitoring_alertmanager_port"))
        if settings["grafana"].get("enabled"):
            wanted.append((settings["grafana"]["port"], "monitoring_grafana_port"))
    problems = []
    for port, var in wanted:
        if not is_int(port) or not 1 <= port <= 65535:
            problems.append(problem(host, var, "must be a port between 1 and 65535, got %r" % (port,),
                                    "write a whole number without quotes"))
            continue
        if port in used:
            problems.append(problem(host, var, "port %s is used by both %s and %s" % (port, used[port], var),
                                    "give %s another port" % var))
        else:
            used[port] = var
    return problems


def layout_problems(topology: Dict[str, Any], settings: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
    """Every problem of the monitoring layout: unreachable or metrics-less endpoints for each Prometheus
    host, and port collisions on every host that runs a monitoring service."""
    settings = _settings(settings)
    problems = []
    for monitoring_host in settings["monitoring_hosts"]:
        problems.extend(targets(topology, monitoring_host, settings)[1])
    for host in exporter_hosts(topology, settings):
        problems.extend(port_problems(topology, host, settings))
    seen = set()
    unique = []
    for item in problems:
        key = (item["host"], item["variable"], item["message"])
        if key not in seen:
            seen.add(key)
            unique.append(item)
    return unique


def expected_gpu_counts(topology: Dict[str, Any], settings: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """{gpu host: GPUs expected}: ``expected_gpus[host]`` (pdserve_expected_gpu_count) when given, else the
    distinct GPUs the host's instances use, else None (no GPUMissing rule for that host)."""
    settings = _settings(settings)
    declared = settings.get("expected_gpus") or {}
    out = {}
    for host in settings["gpu_hosts"]:
        if declared.get(host) is not None:
            out[host] = declared[host]
            continue
        entry = (topology.get("hosts") or {}).get(host) or {}
        used: Set[int] = set()
        for inst in (entry.get("prefill") or []) + (entry.get("decode") or []):
            used.update(g for g in inst.get("gpus") or [] if is_int(g))
        out[host] = len(used) or None
    return out


def prometheus_config(topology: Dict[str, Any], monitoring_host: str,
                      settings: Optional[Dict[str, Any]]) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
    """``(config, problems)``: the whole prometheus.yml of ``monitoring_host`` as a dict."""
    settings = _settings(settings)
    prom = settings["prometheus"]
    found, problems = targets(topology, monitoring_host, settings)
    interval = int(prom.get("scrape_interval", 15))
    glob: Dict[str, Any] = {"scrape_interval": "%ds" % interval,
                            "scrape_timeout": "%ds" % min(int(prom.get("scrape_timeout", 10)), interval),
                            "evaluation_interval": "%ds" % int(prom.get("evaluation_interval", 15))}
    if prom.get("external_labels"):
        glob["external_labels"] = dict(prom["external_labels"])
    config = {"global": glob, "rule_files": ["%s/*.yml" % str(prom.get("rules_dir", "/etc/prometheus/rules")).rstrip("/")]}
    managers = []
    alertmanager = settings["alertmanager"]
    if alertmanager.get("enabled"):
        managers.append(_join(local_host(alertmanager.get("host", "127.0.0.1")), alertmanager["port"]))
    managers.extend(str(u) for u in alertmanager.get("urls") or [])
    if managers:
        config["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": managers}]}]}
    config["scrape_configs"] = scrape_configs(found, settings) + list(prom.get("extra_scrape_configs") or [])
    return config, problems


def _first_set(values, *names):
    for name in names:
        if values.get(name) not in (None, ""):
            return values[name]
    return None


def inventory_settings(host_vars: Dict[str, Dict[str, Any]], groups: Optional[Dict[str, List[str]]],
                       options: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """The settings of the functions above from inventory data: ``host_vars`` {host: vars} of the relevant hosts,
    ``groups`` {group: hosts}, ``options`` the role's own settings (ports, groups' names, ...)."""
    options = dict(options or {})
    monitoring = list((groups or {}).get(options.pop("monitoring_group", "monitoring")) or [])
    gpu_hosts = list((groups or {}).get(options.pop("gpu_group", "gpu_hosts")) or [])
    settings = dict(options)
    settings["monitoring_hosts"] = monitoring
    settings["gpu_hosts"] = gpu_hosts
    hosts = set(monitoring) | set(gpu_hosts) | set(host_vars or {})
    settings["addresses"] = dict((h, str((host_vars.get(h) or {}).get("ansible_host") or h)) for h in hosts)
    settings["exporter_hosts"] = dict((h, (host_vars.get(h) or {}).get("monitoring_exporter_host"))
                                      for h in hosts if (host_vars.get(h) or {}).get("monitoring_exporter_host"))
    # The count the driver layer verifies: the inventory's shared pdserve_expected_gpu_count, or the driver role's
    # own variable when the inventory sets it for a host.
    settings["expected_gpus"] = dict(
        (h, _first_set(host_vars.get(h) or {}, "nvidia_driver_expected_gpu_count", "pdserve_expected_gpu_count"))
        for h in gpu_hosts)
    return settings


# The dashboards the role ships (files/dashboards/<name>.json), in the order Grafana lists them.
DASHBOARDS = ("pdserve-sglang-pd", "pdserve-router", "pdserve-gpu", "pdserve-host")


def listen_address(bind: str, port: Any) -> str:
    """``host:port`` a service listens on (``--web.listen-address``, ``-a``), IPv6 literals in brackets."""
    return _join(bind, port)


def local_url(bind: Any, port: Any, tls: bool = False) -> str:
    """The URL a process on the same host reaches a service bound to ``bind`` at (loopback for a wildcard)."""
    return "%s://%s" % ("https" if tls else "http", _join(local_host(bind), port))


def dashboard_files(dest_dir: str, read: Callable[[str], str]) -> List[Dict[str, str]]:
    """``[{path, content}]``: each shipped dashboard under ``dest_dir``; ``read(name)`` gives a dashboard's JSON."""
    return [{"path": "%s/%s.json" % (str(dest_dir).rstrip("/"), name), "content": read(name)} for name in DASHBOARDS]
