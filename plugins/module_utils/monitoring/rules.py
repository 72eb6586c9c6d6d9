# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The alert rules of the collection: pure functions from thresholds to Prometheus rule groups.

Every number is a parameter (the role's ``monitoring_alert_*`` variables). Metric names and labels are the
pinned versions' (SGLang 0.5.23 ``sglang:*`` with ``engine_type``, sglang-router 0.3.2 ``smg_*``, node exporter
1.5, dcgm-exporter 4.8 ``DCGM_FI_DEV_*``) and the scrape labels of monitoring_targets (``job``, ``host``,
``role``, ``sglang_instance``). Each alert carries ``summary``, ``description`` and a ``runbook_url`` into the
runbook page shipped in the collection (docs/runbook.md, one section per alert).
"""

import re
from typing import Any, Dict, List, Set, Tuple

# name -> (default, what it is); the role's variable is monitoring_alert_<name>.
THRESHOLDS = {
    "server_down_for": ("10m", "how long a prefill/decode /metrics must fail before SGLangServerDown"),
    "router_down_for": ("2m", "how long the router's metrics port must fail before SGLangRouterDown"),
    "unit_failed_for": ("1m", "how long a sglang-* unit must be failed before SGLangUnitFailed"),
    "no_healthy_worker_for": ("1m", "how long a worker type must have no passing health check"),
    "worker_unhealthy_for": ("2m", "how long one worker must be unhealthy before SGLangRouterWorkerUnhealthy"),
    "router_5xx_ratio": (0.05, "share of router responses that are 5xx"),
    "router_5xx_for": ("5m", "how long the 5xx share must stay above the ratio"),
    "retries_exhausted_window": ("10m", "window in which one request that ran out of retries alerts"),
    "ttft_p99_seconds": (10, "decode time-to-first-token p99, seconds"),
    "itl_p99_seconds": (0.25, "decode inter-token latency p99, seconds"),
    "latency_for": ("10m", "how long a latency p99 must stay above its threshold"),
    "queue_reqs": (50, "waiting requests of one server"),
    "queue_for": ("5m", "how long the waiting queue must stay above queue_reqs"),
    "kv_cache_usage": (0.95, "decode KV cache (token) usage, 0..1"),
    "kv_cache_for": ("10m", "how long the decode KV cache must stay above the usage"),
    "slow_start_ratio": (2.0, "a start this many times longer than the instance's quickest in slow_start_window"),
    "slow_start_window": ("1d", "how far back the quickest start of an instance is looked for"),
    "slow_start_min_seconds": (300, "starts shorter than this never alert"),
    "pd_failure_window": ("5m", "window in which one KV-transfer or bootstrap failure alerts"),
    "pd_stuck_for": ("5m", "how long a bootstrap/transfer queue may hold requests while none completes"),
    "gpu_exporter_down_for": ("5m", "how long the GPU exporter must fail before GPUExporterDown"),
    "gpu_missing_for": ("5m", "how long a host must report fewer GPUs than expected"),
    "xid_window": ("10m", "window in which a new XID error alerts"),
    "gpu_temp_celsius": (87, "GPU temperature, degrees Celsius"),
    "gpu_hot_for": ("10m", "how long a GPU must stay above the temperature"),
    "node_exporter_down_for": ("5m", "how long a node exporter must fail before NodeExporterDown"),
    "disk_free_ratio": (0.10, "free share of a filesystem"),
    "disk_for": ("15m", "how long a filesystem must stay below the free share"),
    "memory_available_ratio": (0.05, "available share of a host's memory"),
    "memory_for": ("10m", "how long available memory must stay below the share"),
    "prometheus_reload_failed_for": ("5m", "how long a failed configuration reload must last"),
    "rate_window": ("5m", "the rate window of the ratio, latency and rule-failure alerts"),
    "target_missing_for": ("5m", "how long a job may have fewer targets up than the role configured"),
}
_DURATION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")
SEVERITIES = ("critical", "warning", "none")
# Alerts that fire all the time on purpose: the dead man's switch, whose absence at the receiver is the alarm.
ALWAYS_FIRING = ("Watchdog",)


class RuleError(ValueError):
    """Bad alert parameters (the message names the variable)."""


def _check(params):
    th = dict((k, v[0]) for k, v in THRESHOLDS.items())
    th.update(dict((k, v) for k, v in (params.get("thresholds") or {}).items() if v is not None))
    unknown = sorted(set(th) - set(THRESHOLDS))
    if unknown:
        raise RuleError("unknown alert threshold(s): %s" % ", ".join("monitoring_alert_%s" % u for u in unknown))
    for name, value in th.items():
        default = THRESHOLDS[name][0]
        if isinstance(default, str):
            if not isinstance(value, str) or not _DURATION.match(value):
                raise RuleError("monitoring_alert_%s must be a Prometheus duration such as 5m, got %r" % (name, value))
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise RuleError("monitoring_alert_%s must be a number >= 0, got %r" % (name, value))
    for key in ("scrape_interval", "router_health_check_interval", "health_window_intervals"):
        value = params.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise RuleError("%s must be a number > 0, got %r" % (key, value))
    return th


def health_window_seconds(params: Dict[str, Any]) -> int:
    """The window of the no-healthy-worker alert: at least ``health_window_intervals`` of the router's
    health-check interval (it marks a worker unhealthy after 3 failed checks), and at least 4 scrapes so
    ``increase()`` always has samples to compare."""
    intervals = max(3, int(params.get("health_window_intervals") or 3))
    return int(max(intervals * float(params["router_health_check_interval"]), 4 * float(params["scrape_interval"])))


def _alert(name, expr, severity, summary, description, runbook, for_=None, labels=None):
    rule = {"alert": name, "expr": " ".join(expr.split())}
    if for_ and for_ not in ("0s", "0m"):
        rule["for"] = for_
    rule["labels"] = dict({"severity": severity}, **(labels or {}))
    rule["annotations"] = {"summary": summary, "description": description,
                           "runbook_url": "%s#%s" % (runbook.rstrip("#"), name.lower())}
    return rule


def _new_or_increased(metric, by, window):
    """``metric`` went up in ``window``, or appeared in it: counters created by their first event (SGLang's
    failure counters, the router's retry counters) have no earlier sample for ``increase()`` to compare."""
    return "sum by (%s) (increase(%s[%s])) > 0\nor\nsum by (%s) (%s unless %s offset %s)" % (
        by, metric, window, by, metric, metric, window)


def _num(value):
    return ("%g" % value) if isinstance(value, float) else str(value)


def rule_groups(params: Dict[str, Any]) -> List[Tuple[str, Dict[str, Any]]]:
    """``[(file stem, group)]``: the rule groups, one per file of the rules directory."""
    th = _check(params)
    runbook = str(params.get("runbook_url") or "")
    if not runbook:
        raise RuleError("monitoring_runbook_url must be set (the base URL of docs/runbook.md)")
    window = "%ds" % health_window_seconds(params)
    r = th["rate_window"]
    a = []
    a.append(_alert(
        "SGLangServerDown", 'up{job=~"sglang-prefill|sglang-decode"} == 0', "critical",
        "SGLang {{ $labels.role }} server {{ $labels.sglang_instance }} on {{ $labels.host }} is down",
        "Prometheus cannot scrape {{ $labels.instance }} (job {{ $labels.job }}) for %s: the server is stopped, "
        "crashed, still loading its model or unreachable.{{ with $labels.node_rank }} It is node rank {{ . }} of "
        "{{ $labels.nnodes }} of one instance over several hosts: the instance serves only with every rank up, and "
        "its ranks restart together (a rank cannot rejoin a running instance).{{ end }}" % th["server_down_for"],
        runbook, th["server_down_for"]))
    a.append(_alert(
        "SGLangRouterDown", 'up{job="sglang-router"} == 0', "critical",
        "The SGLang router on {{ $labels.host }} is down",
        "Prometheus cannot scrape the router's metrics port {{ $labels.instance }} for %s: no request reaches "
        "any worker through this router." % th["router_down_for"],
        runbook, th["router_down_for"]))
    a.append(_alert(
        "SGLangUnitFailed", 'node_systemd_unit_state{name=~"sglang-.+\\\\.service", state="failed"} == 1', "critical",
        "systemd unit {{ $labels.name }} on {{ $labels.host }} has failed",
        "{{ $labels.name }} is in the failed state (systemd gave up restarting it or it exited with an error); "
        "its server is not serving.", runbook, th["unit_failed_for"]))
    checks = "sum by (job, host, worker_type) (increase(smg_worker_health_checks_total{result=\"%s\"}[" + window + "]))"
    a.append(_alert(
        "SGLangRouterNoHealthyWorkers",
        "%s > 0\nunless on (job, host, worker_type)\n%s > 0" % (checks % "failure", checks % "success"),
        "critical",
        "The router on {{ $labels.host }} has no healthy {{ $labels.worker_type }} worker",
        "Every health check of the router's {{ $labels.worker_type }} workers failed in the last %s (at least %d "
        "of its health-check intervals); requests fail with 503 server_selection_failed. The worker pool size does "
        "not show this: it counts registered workers, healthy or not." % (window, max(3, int(
            params.get("health_window_intervals") or 3))),
        runbook, th["no_healthy_worker_for"]))
    a.append(_alert(
        "SGLangRouterWorkerUnhealthy", "smg_worker_health == 0", "warning",
        "Worker {{ $labels.worker }} is unhealthy at the router on {{ $labels.host }}",
        "The router marked {{ $labels.worker }} unhealthy (failed health checks) for %s and sends it no "
        "requests." % th["worker_unhealthy_for"],
        runbook, th["worker_unhealthy_for"]))
    a.append(_alert(
        "SGLangRouterHigh5xxRatio",
        'sum by (job, host) (rate(smg_http_responses_total{status_code=~"5.."}[%s]))\n/ sum by (job, host) '
        "(rate(smg_http_responses_total[%s])) > %s" % (r, r, _num(th["router_5xx_ratio"])),
        "critical",
        "The router on {{ $labels.host }} answers {{ $value | humanizePercentage }} of requests with 5xx",
        "More than %s of the router's responses over %s were 5xx; the error_code label of smg_http_responses_total "
        "tells which side failed (decode_internal_error, server_selection_failed, ...)."
        % (_num(th["router_5xx_ratio"]), r),
        runbook, th["router_5xx_for"]))
    a.append(_alert(
        "SGLangRouterRetriesExhausted",
        _new_or_increased("smg_worker_retries_exhausted_total", "job, host, worker_type",
                          th["retries_exhausted_window"]), "warning",
        "Requests ran out of retries at the router on {{ $labels.host }} ({{ $labels.worker_type }})",
        "Request(s) failed every retry against {{ $labels.worker_type }} workers in the last %s: the client got "
        "the error." % th["retries_exhausted_window"],
        runbook))
    availability = [a]

    lat = []
    for name, metric, what, key in (
            ("SGLangHighTTFT", "sglang:time_to_first_token_seconds_bucket", "time to first token", "ttft_p99_seconds"),
            ("SGLangHighITL", "sglang:inter_token_latency_seconds_bucket", "inter-token latency", "itl_p99_seconds")):
        lat.append(_alert(
            name,
            'histogram_quantile(0.99, sum by (le, host, sglang_instance, model_name) (rate(%s{engine_type="decode"}[%s])))'
            " > %s" % (metric, r, _num(th[key])), "warning",
            "Decode %s p99 is {{ $value | humanizeDuration }} on {{ $labels.host }}/{{ $labels.sglang_instance }}"
            % what,
            "The 99th percentile of the %s seen by decode server {{ $labels.sglang_instance }} (model "
            "{{ $labels.model_name }}) stayed above %ss for %s." % (what, _num(th[key]), th["latency_for"]),
            runbook, th["latency_for"]))
    lat.append(_alert(
        "SGLangQueueBuildup",
        "max by (host, sglang_instance, engine_type) (sglang:num_queue_reqs) > %s" % _num(th["queue_reqs"]),
        "warning",
        "{{ $value }} requests wait on {{ $labels.engine_type }} server {{ $labels.host }}/{{ $labels.sglang_instance }}",
        "More than %s requests stayed in the waiting queue for %s: the server cannot keep up."
        % (_num(th["queue_reqs"]), th["queue_for"]), runbook, th["queue_for"]))
    lat.append(_alert(
        "SGLangDecodeKVCacheFull",
        'max by (host, sglang_instance) (sglang:token_usage{engine_type="decode"}) > %s' % _num(th["kv_cache_usage"]),
        "warning",
        "Decode KV cache {{ $value | humanizePercentage }} full on {{ $labels.host }}/{{ $labels.sglang_instance }}",
        "The decode server's token usage stayed above %s for %s: new requests wait in the prealloc queue and "
        "running ones may be retracted." % (_num(th["kv_cache_usage"]), th["kv_cache_for"]),
        runbook, th["kv_cache_for"]))
    # The gauge is set once per start and held until the next one: the window's minimum is the quickest start the
    # instance made in it (this one included), so the alert lasts until that quicker start leaves the window.
    started = 'max by (host, sglang_instance, engine_type) (%s(sglang:startup_time_seconds{phase="tokenizer_e2e"}%s))'
    lat.append(_alert(
        "SGLangSlowStart",
        "%s\n> %s * %s\nand %s > %s" % (
            started % ("", ""), _num(th["slow_start_ratio"]),
            started % ("min_over_time", "[%s]" % th["slow_start_window"]), started % ("", ""),
            _num(th["slow_start_min_seconds"])),
        "warning",
        "{{ $labels.engine_type }} server {{ $labels.host }}/{{ $labels.sglang_instance }} took "
        "{{ $value | humanizeDuration }} to start",
        "Its last start (sglang:startup_time_seconds, phase tokenizer_e2e) took more than %s times its quickest "
        "start of the last %s: a cold kernel cache (a new venv, a removed cache directory), a slower model "
        "download or storage, or a GPU in trouble." % (_num(th["slow_start_ratio"]), th["slow_start_window"]),
        runbook))

    pd = []
    f = th["pd_failure_window"]
    for name, metric, what in (("SGLangKVTransferFailures", "sglang:num_transfer_failed_reqs_total", "KV-transfer"),
                               ("SGLangBootstrapFailures", "sglang:num_bootstrap_failed_reqs_total", "bootstrap")):
        pd.append(_alert(
            name, _new_or_increased(metric, "host, sglang_instance, engine_type", f),
            "critical",
            "%s failures on {{ $labels.engine_type }} server {{ $labels.host }}/{{ $labels.sglang_instance }}" % what,
            "{{ $labels.engine_type }} server {{ $labels.sglang_instance }} counted %s failure(s) in the last %s "
            "(the failed requests were answered 500; the router retries them on a new bootstrap room)." % (what, f),
            runbook))
    s = th["pd_stuck_for"]
    for name, queue, engine, what in (
            ("SGLangPrefillBootstrapStuck", "sglang:num_prefill_bootstrap_queue_reqs", "prefill", "bootstrap"),
            ("SGLangDecodeTransferStuck", "sglang:num_decode_transfer_queue_reqs", "decode", "transfer")):
        pd.append(_alert(
            name,
            "min_over_time(%s[%s]) > 0\nunless on (host, sglang_instance)\n"
            'sum by (host, sglang_instance) (increase(sglang:num_requests_total{engine_type="%s"}[%s])) > 0'
            % (queue, s, engine, s), "critical",
            "The %s queue of {{ $labels.host }}/{{ $labels.sglang_instance }} is stuck" % what,
            "The %s server kept requests in its %s queue for %s and finished none: the PD handshake between prefill "
            "and decode is broken." % (engine, what, s), runbook))

    gpu = [
        _alert("GPUExporterDown", 'up{job="gpu"} == 0', "warning",
               "The GPU exporter on {{ $labels.host }} is down",
               "Prometheus cannot scrape {{ $labels.instance }}: GPU health (XID errors, row remapping, temperature) "
               "is not watched on this host.", runbook, th["gpu_exporter_down_for"]),
    ]
    for host, count in sorted((params.get("expected_gpus") or {}).items()):
        if count is None:
            continue
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise RuleError("the expected GPU count of %s must be a whole number >= 1, got %r" % (host, count))
        sel = 'job="gpu", host="%s"' % host
        gpu.append(_alert(
            "GPUMissing",
            "(count by (host) (DCGM_FI_DEV_GPU_TEMP{%s})\n or sum by (host) (up{%s} == 1) * 0) < %d" % (sel, sel, count),
            "critical",
            "{{ $labels.host }} reports {{ $value }} GPU(s), %d expected" % count,
            "The GPU exporter of {{ $labels.host }} lists {{ $value }} GPU(s) but the inventory expects %d "
            "(pdserve_expected_gpu_count): a GPU fell off the bus or the driver lost it." % count,
            runbook, th["gpu_missing_for"], labels={"host": host}))
    gpu.append(_alert(
        "GPUXidError",
        'DCGM_FI_DEV_XID_ERRORS{job="gpu"} > 0\nand\nchanges(DCGM_FI_DEV_XID_ERRORS{job="gpu"}[%s]) > 0'
        % th["xid_window"], "critical",
        "XID {{ $value }} on GPU {{ $labels.gpu }} of {{ $labels.host }}",
        "GPU {{ $labels.gpu }} ({{ $labels.modelName }}) reported XID error {{ $value }} in the last %s; look "
        "it up in NVIDIA's XID catalogue." % th["xid_window"], runbook))
    gpu.append(_alert(
        "GPURowRemapFailure", 'DCGM_FI_DEV_ROW_REMAP_FAILURE{job="gpu"} > 0', "critical",
        "Row remapping failed on GPU {{ $labels.gpu }} of {{ $labels.host }}",
        "GPU {{ $labels.gpu }} could not remap a failing memory row: it needs a reset and, if this repeats, a "
        "replacement.", runbook))
    gpu.append(_alert(
        "GPUHot", 'DCGM_FI_DEV_GPU_TEMP{job="gpu"} > %s' % _num(th["gpu_temp_celsius"]), "warning",
        "GPU {{ $labels.gpu }} of {{ $labels.host }} is at {{ $value }} C",
        "GPU {{ $labels.gpu }} stayed above %s C for %s: it will throttle its clocks."
        % (_num(th["gpu_temp_celsius"]), th["gpu_hot_for"]), runbook, th["gpu_hot_for"]))

    fs = 'job="node", fstype!~"tmpfs|ramfs|squashfs|overlay|nsfs|fuse.*"'
    host = [
        _alert("NodeExporterDown", 'up{job="node"} == 0', "warning",
               "The node exporter on {{ $labels.host }} is down",
               "Prometheus cannot scrape {{ $labels.instance }}: disk, memory and unit-state alerts of this host are "
               "blind.", runbook, th["node_exporter_down_for"]),
        _alert("HostDiskAlmostFull",
               "node_filesystem_avail_bytes{%s} / node_filesystem_size_bytes{%s} < %s\nand\n"
               "node_filesystem_readonly{%s} == 0" % (fs, fs, _num(th["disk_free_ratio"]), fs),
               "warning",
               "{{ $labels.mountpoint }} on {{ $labels.host }} has {{ $value | humanizePercentage }} free",
               "Less than %s of {{ $labels.mountpoint }} stayed free for %s (model weights, kernel caches, logs and "
               "Prometheus' own storage grow there)." % (_num(th["disk_free_ratio"]), th["disk_for"]),
               runbook, th["disk_for"]),
        _alert("HostMemoryLow",
               'node_memory_MemAvailable_bytes{job="node"} / node_memory_MemTotal_bytes{job="node"} < %s'
               % _num(th["memory_available_ratio"]), "warning",
               "{{ $labels.host }} has {{ $value | humanizePercentage }} of its memory available",
               "Less than %s of the host's memory stayed available for %s: the OOM killer may end a server."
               % (_num(th["memory_available_ratio"]), th["memory_for"]), runbook, th["memory_for"]),
        _alert("PrometheusRuleFailures", "increase(prometheus_rule_evaluation_failures_total[%s]) > 0" % r,
               "warning",
               "Prometheus on {{ $labels.host }} fails to evaluate rules of {{ $labels.rule_group }}",
               "{{ $value | humanize }} rule evaluation(s) failed in the last %s: some alerts cannot fire." % r,
               runbook),
        _alert("PrometheusConfigReloadFailed", "prometheus_config_last_reload_successful == 0", "warning",
               "Prometheus on {{ $labels.host }} runs an old configuration",
               "The last configuration reload failed; Prometheus keeps the previous scrape targets and rules.",
               runbook, th["prometheus_reload_failed_for"]),
    ]
    return [
        ("pdserve-availability", {"name": "pdserve-availability", "rules": availability[0]}),
        ("pdserve-latency", {"name": "pdserve-latency", "rules": lat}),
        ("pdserve-pd", {"name": "pdserve-pd", "rules": pd}),
        ("pdserve-gpu", {"name": "pdserve-gpu", "rules": gpu}),
        ("pdserve-host", {"name": "pdserve-host", "rules": host}),
        ("pdserve-meta", {"name": "pdserve-meta", "rules": _meta_alerts(params, th, runbook)}),
    ]


def _target_counts(params):
    """{job: targets the role configured}, from ``targets`` (monitoring.targets.targets' list)."""
    counts = {}
    for target in params.get("targets") or []:
        job = target.get("job") if isinstance(target, dict) else None
        if not isinstance(job, str) or not re.match(r"^[A-Za-z0-9_.:-]+$", job):
            raise RuleError("targets must be the monitoring targets ({job, address, labels}), got %r" % (target,))
        counts[job] = counts.get(job, 0) + 1
    return counts


def _meta_alerts(params, th, runbook):
    """Monitoring of the monitoring: every configured target answering, and the dead man's switch."""
    meta = [_alert(
        "Watchdog", "vector(1)", "none",
        "Prometheus and Alertmanager are working (this alert always fires)",
        "A dead man's switch: route it to a receiver that alarms when it stops arriving (Prometheus, its rule "
        "evaluation or Alertmanager is down, or the path between them is broken). It never resolves by itself.",
        runbook)]
    for job, count in sorted(_target_counts(params).items()):
        meta.append(_alert(
            "PrometheusTargetMissing",
            '(count by (job) (up{job="%s"} == 1) < %d) or (absent(up{job="%s"} == 1) * 0)' % (job, count, job),
            "warning",
            "Prometheus has fewer %s targets up than the %d configured" % (job, count),
            "{{ $value }} of the %d %s target(s) the monitoring role configured answered scrapes for %s (0: none, "
            "or the job is gone from Prometheus' configuration): a target is down, unreachable or no longer "
            "scraped, and the alerts that read its metrics are blind." % (count, job, th["target_missing_for"]),
            runbook, th["target_missing_for"], labels={"job": job}))
    return meta


RULE_FILE = "pdserve.rules.yml"


def rule_files(params: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """{file name: content} for the rules directory: one file with every group (one validated write)."""
    return {RULE_FILE: {"groups": [group for dummy_stem, group in rule_groups(params)]}}


def alert_names(params: Dict[str, Any]) -> List[str]:
    """Every alert name (sorted, unique)."""
    names: Set[str] = set()
    for dummy, group in rule_groups(params):
        names.update(rule["alert"] for rule in group["rules"] if "alert" in rule)
    return sorted(names)
