# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Generate the monitoring role's Grafana dashboards with grafana-foundation-sdk (Grafana's typed builders).

    python scripts/build_dashboards.py [OUTPUT_DIR]   # default roles/monitoring/files/dashboards

The JSON files are committed; tests/unit/monitoring/test_dashboards.py regenerates them into a temporary
directory and fails when they differ, so edit this file, run it, and commit both. Four dashboards of our own,
each with a fixed uid and a ``datasource`` variable (no datasource uid is written into a panel):

- pdserve-sglang-pd: what clients see (TTFT, ITL, e2e from the decode server), token throughput, the PD queues,
  KV transfer latency/speed/size/failures, cache hit rate and KV cache usage (SGLang 0.5.23, ``sglang:*``);
- pdserve-router: requests by route, status and error code, latency, worker health, circuit state, retries
  (sglang-router 0.3.2, ``smg_*``);
- pdserve-gpu: the GPU exporter's DCGM_FI_DEV_* fields, profiling fields in a collapsed optional row;
- pdserve-host: CPU, load, memory, disks, network and the sglang units' state (node exporter 1.5).

Panels filter on the scrape labels the role sets (``job``, ``host``, ``role``, ``sglang_instance``).
"""
import json
import os
import sys

from grafana_foundation_sdk.builders import dashboard, prometheus, stat, statetimeline, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import dashboard as dm

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUTPUT = os.path.join(ROOT, "roles", "monitoring", "files", "dashboards")
DATASOURCE_UID = "pdserve-prometheus"  # monitoring_grafana_datasource_uid's default
DS = dm.DataSourceRef(type_val="prometheus", uid="${datasource}")
TAGS = ["pdserve", "sglang"]
RATE = "$__rate_interval"


class P:
    """One panel: title, unit, [(expr, legend)], description, kind, width."""

    def __init__(self, title, unit, queries, description, kind="timeseries", width=8, mappings=None,
                 no_value=None, max_value=None):
        self.title, self.unit, self.queries, self.description = title, unit, queries, description
        self.kind, self.width, self.mappings, self.no_value, self.max_value = kind, width, mappings, no_value, max_value


def q(quantile, metric, selector, by="le"):
    return "histogram_quantile(%s, sum by (%s) (rate(%s_bucket{%s}[%s])))" % (quantile, by, metric, selector, RATE)


def datasource_variable():
    return (dashboard.DatasourceVariable("datasource").label("Prometheus").type("prometheus")
            .current(dm.VariableOption(selected=True, text=DATASOURCE_UID, value=DATASOURCE_UID)))


def label_variable(name, label, query):
    return (dashboard.QueryVariable(name).label(label).datasource(DS).query(query)
            .refresh(dm.VariableRefresh.ON_TIME_RANGE_CHANGED).include_all(True).all_value(".*").multi(True)
            .sort(dm.VariableSort.ALPHABETICAL_ASC)
            .current(dm.VariableOption(selected=True, text=["All"], value=["$__all"])))


def state_mappings(states):
    return [dm.ValueMap(options=dict((str(v), dm.ValueMappingResult(text=text, color=color, index=i))
                                     for i, (v, text, color) in enumerate(states)))]


def _panel(spec, panel_id):
    if spec.kind == "state":
        builder = statetimeline.Panel().show_value(common_visibility_auto()).merge_values(True)
    elif spec.kind == "stat":
        builder = stat.Panel()
    else:
        builder = timeseries.Panel().fill_opacity(10).line_width(1)
    builder = (builder.id(panel_id).title(spec.title).description(spec.description).datasource(DS).unit(spec.unit)
               .height(8).span(spec.width))
    if spec.mappings:
        builder = builder.mappings(spec.mappings)
    if spec.no_value is not None:
        builder = builder.no_value(spec.no_value)
    if spec.max_value is not None:
        builder = builder.min(0).max(spec.max_value)
    for index, (expr, legend) in enumerate(spec.queries):
        builder = builder.with_target(prometheus.Dataquery().expr(expr).legend_format(legend)
                                      .ref_id(chr(ord("A") + index)).range())
    return builder


def common_visibility_auto():
    from grafana_foundation_sdk.models import common
    return common.VisibilityMode.AUTO


def build(uid, title, description, variables, rows):
    """rows: [(row title, collapsed, [P, ...])]."""
    board = (dashboard.Dashboard(title).uid(uid).description(description).tags(TAGS).refresh("30s")
             .time("now-1h", "now").timezone("browser").editable().with_variable(datasource_variable()))
    for variable in variables:
        board = board.with_variable(variable)
    panel_id = 0
    for row_title, collapsed, panels in rows:
        panel_id += 1
        row = dashboard.Row(row_title).id(panel_id).collapsed(collapsed)
        if collapsed:
            for spec in panels:
                panel_id += 1
                row = row.with_panel(_panel(spec, panel_id))
            board = board.with_row(row)
        else:
            board = board.with_row(row)
            for spec in panels:
                panel_id += 1
                board = board.with_panel(_panel(spec, panel_id))
    return board.build()


def sglang_pd():
    f = 'model_name=~"$model_name", host=~"$host"'
    dec = 'engine_type="decode", ' + f
    return build(
        "pdserve-sglang-pd", "SGLang PD serving",
        "SGLang 0.5.23 prefill/decode servers (sglang:* metrics, scrape jobs sglang-prefill and sglang-decode). "
        "Client-facing latency comes from the decode server, whose TTFT spans prefill, KV bootstrap and transfer.",
        [label_variable("model_name", "Model", "label_values(sglang:num_requests_total, model_name)"),
         label_variable("host", "Host", 'label_values(up{job=~"sglang-prefill|sglang-decode"}, host)')],
        [("Latency seen by clients (decode server)", False, [
            P("Time to first token (decode)", "s",
              [(q(x, "sglang:time_to_first_token_seconds", dec), "p%s" % int(x * 100)) for x in (0.5, 0.9, 0.99)],
              "sglang:time_to_first_token_seconds of the decode servers (engine_type=decode): from the request's "
              "arrival to its first token, across prefill, KV bootstrap and transfer."),
            P("Inter-token latency (decode)", "s",
              [(q(x, "sglang:inter_token_latency_seconds", dec), "p%s" % int(x * 100)) for x in (0.5, 0.99)],
              "sglang:inter_token_latency_seconds of the decode servers: time between generated tokens."),
            P("End-to-end request latency (decode)", "s",
              [(q(x, "sglang:e2e_request_latency_seconds", dec), "p%s" % int(x * 100)) for x in (0.5, 0.99)],
              "sglang:e2e_request_latency_seconds of the decode servers: the whole request as the client sees it."),
        ]), ("Throughput", False, [
            P("Token throughput", "none",
              [('sum(rate(sglang:prompt_tokens_total{engine_type="prefill", %s}[%s]))' % (f, RATE),
                "prompt tokens/s (prefill)"),
               ('sum(rate(sglang:generation_tokens_total{%s}[%s]))' % (dec, RATE), "generated tokens/s (decode)"),
               ("sum(sglang:gen_throughput{%s})" % dec, "decode gen_throughput")],
              "sglang:prompt_tokens_total (prefill), sglang:generation_tokens_total and sglang:gen_throughput "
              "(decode), tokens per second."),
            P("Requests finished and aborted", "reqps",
              [("sum by (engine_type) (rate(sglang:num_requests_total{%s}[%s]))" % (f, RATE), "finished {{engine_type}}"),
               ("sum by (engine_type) (rate(sglang:num_aborted_requests_total{%s}[%s]))" % (f, RATE),
                "aborted {{engine_type}}")],
              "sglang:num_requests_total and sglang:num_aborted_requests_total by engine type. Each PD request is "
              "finished by both its prefill and its decode server.", no_value="0"),
            P("Running and waiting requests", "none",
              [("sum by (engine_type) (sglang:num_running_reqs{%s})" % f, "running {{engine_type}}"),
               ("sum by (engine_type) (sglang:num_queue_reqs{%s})" % f, "waiting {{engine_type}}")],
              "sglang:num_running_reqs and sglang:num_queue_reqs by engine type."),
        ]), ("PD pipeline", False, [
            P("Prefill queues", "none",
              [('sum by (host, sglang_instance) (sglang:num_prefill_bootstrap_queue_reqs{engine_type="prefill", %s})'
                % f, "bootstrap {{host}}/{{sglang_instance}}"),
               ('sum by (host, sglang_instance) (sglang:num_prefill_inflight_queue_reqs{engine_type="prefill", %s})'
                % f, "inflight {{host}}/{{sglang_instance}}")],
              "sglang:num_prefill_bootstrap_queue_reqs (waiting for a decode server's handshake) and "
              "sglang:num_prefill_inflight_queue_reqs (KV cache being sent)."),
            P("Decode queues", "none",
              [("sum by (host, sglang_instance) (sglang:num_decode_prealloc_queue_reqs{%s})" % dec,
                "prealloc {{host}}/{{sglang_instance}}"),
               ("sum by (host, sglang_instance) (sglang:num_decode_transfer_queue_reqs{%s})" % dec,
                "transfer {{host}}/{{sglang_instance}}")],
              "sglang:num_decode_prealloc_queue_reqs (waiting for KV memory and the bootstrap) and "
              "sglang:num_decode_transfer_queue_reqs (KV cache arriving)."),
            P("Stage latency p99", "s",
              [(q(0.99, "sglang:per_stage_req_latency_seconds", f, "le, engine_type, stage"),
                "{{engine_type}} {{stage}}")],
              "sglang:per_stage_req_latency_seconds by stage (prefill_bootstrap, prefill_transfer_kv_cache, "
              "decode_bootstrap, decode_transferred, ...)."),
        ]), ("KV transfer", False, [
            P("KV transfer latency (prefill)", "ms",
              [(q(x, "sglang:kv_transfer_latency_ms", 'engine_type="prefill", ' + f), "p%s" % int(x * 100))
               for x in (0.5, 0.99)],
              "sglang:kv_transfer_latency_ms, observed by the sending prefill server."),
            P("KV transfer speed and size (p50)", "none",
              [(q(0.5, "sglang:kv_transfer_speed_gb_s", f), "GB/s"),
               (q(0.5, "sglang:kv_transfer_total_mb", f), "MB per request")],
              "sglang:kv_transfer_speed_gb_s and sglang:kv_transfer_total_mb (prefill)."),
            P("Bootstrap and KV allocation time p99", "ms",
              [(q(0.99, "sglang:kv_transfer_bootstrap_ms", f, "le, engine_type"), "bootstrap {{engine_type}}"),
               (q(0.99, "sglang:kv_transfer_alloc_ms", f, "le, engine_type"), "alloc {{engine_type}}")],
              "sglang:kv_transfer_bootstrap_ms and sglang:kv_transfer_alloc_ms, on both sides of the handshake."),
            P("KV transfer and bootstrap failures (since server start)", "none",
              [("sum by (engine_type) (sglang:num_transfer_failed_reqs_total{%s})" % f, "transfer {{engine_type}}"),
               ("sum by (engine_type) (sglang:num_bootstrap_failed_reqs_total{%s})" % f, "bootstrap {{engine_type}}")],
              "sglang:num_transfer_failed_reqs_total and sglang:num_bootstrap_failed_reqs_total, counted by both "
              "servers of a failed handshake. They exist only after a first failure: no data means none.",
              no_value="0", width=24),
        ]), ("Capacity", False, [
            P("KV cache usage", "percentunit",
              [("max by (host, sglang_instance, engine_type) (sglang:token_usage{%s})" % f,
                "{{engine_type}} {{host}}/{{sglang_instance}}")],
              "sglang:token_usage: the fullest KV pool of each server, 0..1.", max_value=1),
            P("Prefix cache hit rate (prefill)", "percentunit",
              [('avg by (host, sglang_instance) (sglang:cache_hit_rate{engine_type="prefill", %s})' % f,
                "{{host}}/{{sglang_instance}}")],
              "sglang:cache_hit_rate of the prefill servers.", max_value=1),
            P("KV cache tokens", "none",
              [("sum by (engine_type) (sglang:kv_used_tokens{%s})" % f, "used {{engine_type}}"),
               ("sum by (engine_type) (sglang:kv_available_tokens{%s})" % f, "available {{engine_type}}")],
              "sglang:kv_used_tokens and sglang:kv_available_tokens."),
        ]), ("Start-up", False, [
            P("Last start per instance (engine up)", "s",
              [('max by (host, sglang_instance, engine_type) (sglang:startup_time_seconds{phase="tokenizer_e2e", %s})'
                % f, "{{engine_type}} {{host}}/{{sglang_instance}}")],
              "sglang:startup_time_seconds{phase=\"tokenizer_e2e\"}: seconds from the engine's start until it was up "
              "(weights, kernel compiles, KV pool, CUDA graphs; the HTTP port opens then, the short warmup follows). "
              "Set once per start: a start much longer than the one before points to a cold compile cache.",
              kind="stat", width=12),
            P("Start-up phases per instance", "s",
              [('max by (host, sglang_instance, phase) (sglang:startup_time_seconds{phase=~"load_weight|'
                'kv_cache_allocation", %s})' % f, "{{phase}} {{host}}/{{sglang_instance}}"),
               ("sum by (host, sglang_instance) (sglang:startup_cuda_graph_time_seconds{%s})" % f,
                "cuda_graph {{host}}/{{sglang_instance}}")],
              "sglang:startup_time_seconds by phase (load_weight includes the DeepGEMM kernel pre-compile) and "
              "sglang:startup_cuda_graph_time_seconds summed over its graph phases.", width=12),
        ])])


def router():
    r = 'job="sglang-router", host=~"$host"'
    return build(
        "pdserve-router", "SGLang router",
        "sglang-router 0.3.2 in PD mode (smg_* metrics, scrape job sglang-router).",
        [label_variable("host", "Router host", 'label_values(up{job="sglang-router"}, host)')],
        [("Traffic", False, [
            P("Requests by route", "reqps",
              [("sum by (method, path) (rate(smg_http_requests_total{%s}[%s]))" % (r, RATE), "{{method}} {{path}}")],
              "smg_http_requests_total by method and path."),
            P("Responses by status and error code", "reqps",
              [("sum by (status_code, error_code) (rate(smg_http_responses_total{%s}[%s]))" % (r, RATE),
                "{{status_code}} {{error_code}}")],
              "smg_http_responses_total: error_code says which side failed (decode_internal_error, "
              "server_selection_failed, prefill_server_error)."),
            P("5xx share", "percentunit",
              [('(sum(rate(smg_http_responses_total{%s, status_code=~"5.."}[%s])) or vector(0))\n'
                "/ sum(rate(smg_http_responses_total{%s}[%s]))" % (r, RATE, r, RATE), "5xx")],
              "The share of smg_http_responses_total that is 5xx (the SGLangRouterHigh5xxRatio alert).",
              max_value=1),
            P("Request latency", "s",
              [(q(x, "smg_router_request_duration_seconds", r), "p%s" % int(x * 100)) for x in (0.5, 0.99)],
              "smg_router_request_duration_seconds (PD requests, both workers)."),
            P("Requests by endpoint and streaming", "reqps",
              [("sum by (endpoint, streaming) (rate(smg_router_requests_total{%s}[%s]))" % (r, RATE),
                "{{endpoint}} streaming={{streaming}}")],
              "smg_router_requests_total by endpoint and streaming."),
            P("In-flight requests per worker", "none",
              [("smg_worker_requests_active{%s}" % r, "{{worker}}")],
              "smg_worker_requests_active."),
        ]), ("Workers", False, [
            P("Worker health", "none", [("smg_worker_health{%s}" % r, "{{worker}}")],
              "smg_worker_health: the router's verdict from its health checks.", kind="state",
              mappings=state_mappings([(0, "unhealthy", "red"), (1, "healthy", "green")])),
            P("Circuit breaker state", "none", [("smg_worker_cb_state{%s}" % r, "{{worker}}")],
              "smg_worker_cb_state. A failing decode opens the breaker of both the prefill and the decode worker.",
              kind="state",
              mappings=state_mappings([(0, "closed", "green"), (1, "open", "red"), (2, "half-open", "orange")])),
            P("Health checks by worker type", "ops",
              [("sum by (worker_type, result) (rate(smg_worker_health_checks_total{%s}[%s]))" % (r, RATE),
                "{{worker_type}} {{result}}")],
              "smg_worker_health_checks_total: the SGLangRouterNoHealthyWorkers alert counts these per worker type."),
            P("Retries", "ops",
              [("sum by (worker_type) (rate(smg_worker_retries_total{%s}[%s]))" % (r, RATE), "retried {{worker_type}}"),
               ("sum by (worker_type) (rate(smg_worker_retries_exhausted_total{%s}[%s]))" % (r, RATE),
                "exhausted {{worker_type}}")],
              "smg_worker_retries_total and smg_worker_retries_exhausted_total (they exist after a first retry).",
              no_value="0"),
            P("Registered workers", "none",
              [("sum by (worker_type) (smg_worker_pool_size{%s})" % r, "{{worker_type}}")],
              "smg_worker_pool_size: registered workers, healthy or not (see Worker health)."),
        ])])


def gpu():
    g = 'job="gpu", host=~"$host", gpu=~"$gpu"'
    legend = "{{host}} GPU {{gpu}}"
    return build(
        "pdserve-gpu", "GPUs",
        "The GPU exporter (dcgm-exporter, DCGM_FI_DEV_* fields of the role's counters file, scrape job gpu).",
        [label_variable("host", "Host", 'label_values(up{job="gpu"}, host)'),
         label_variable("gpu", "GPU", 'label_values(DCGM_FI_DEV_GPU_TEMP{host=~"$host"}, gpu)')],
        [("Load and memory", False, [
            P("GPU utilization", "percent", [("DCGM_FI_DEV_GPU_UTIL{%s}" % g, legend)],
              "DCGM_FI_DEV_GPU_UTIL.", max_value=100),
            P("Memory copy utilization", "percent", [("DCGM_FI_DEV_MEM_COPY_UTIL{%s}" % g, legend)],
              "DCGM_FI_DEV_MEM_COPY_UTIL: a proxy of KV-cache transfers over PCIe.", max_value=100),
            P("Framebuffer memory", "decmbytes",
              [("DCGM_FI_DEV_FB_USED{%s}" % g, "used " + legend), ("DCGM_FI_DEV_FB_FREE{%s}" % g, "free " + legend)],
              "DCGM_FI_DEV_FB_USED and DCGM_FI_DEV_FB_FREE (MiB). SGLang preallocates mem_fraction_static of it."),
            P("GPUs per host", "none", [('count by (host) (DCGM_FI_DEV_GPU_TEMP{job="gpu", host=~"$host"})', "{{host}}")],
              "GPUs the exporter lists (the GPUMissing alert compares it to the expected count).", kind="stat"),
        ]), ("Power, heat and clocks", False, [
            P("Power draw", "watt",
              [("DCGM_FI_DEV_POWER_USAGE{%s}" % g, legend),
               ("rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{%s}[%s]) / 1000" % (g, RATE), "energy rate " + legend)],
              "DCGM_FI_DEV_POWER_USAGE and the rate of DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ)."),
            P("Temperature", "celsius",
              [("DCGM_FI_DEV_GPU_TEMP{%s}" % g, "GPU " + legend), ("DCGM_FI_DEV_MEMORY_TEMP{%s}" % g, "memory " + legend)],
              "DCGM_FI_DEV_GPU_TEMP and DCGM_FI_DEV_MEMORY_TEMP."),
            P("Clocks", "hertz",
              [("DCGM_FI_DEV_SM_CLOCK{%s} * 1000000" % g, "SM " + legend),
               ("DCGM_FI_DEV_MEM_CLOCK{%s} * 1000000" % g, "memory " + legend)],
              "DCGM_FI_DEV_SM_CLOCK and DCGM_FI_DEV_MEM_CLOCK (MHz)."),
        ]), ("Errors", False, [
            P("Last XID error", "none", [("DCGM_FI_DEV_XID_ERRORS{%s}" % g, legend)],
              "DCGM_FI_DEV_XID_ERRORS: the code of the last XID error (0: none)."),
            P("Row remapping", "none",
              [("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{%s}" % g, "uncorrectable " + legend),
               ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS{%s}" % g, "correctable " + legend),
               ("DCGM_FI_DEV_ROW_REMAP_FAILURE{%s}" % g, "failure " + legend)],
              "DCGM_FI_DEV_*_REMAPPED_ROWS and DCGM_FI_DEV_ROW_REMAP_FAILURE."),
            P("PCIe replays", "ops",
              [("rate(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{%s}[%s])" % (g, RATE), legend)],
              "The rate of DCGM_FI_DEV_PCIE_REPLAY_COUNTER (PCIe link retries)."),
        ]), ("Profiling (optional: needs the DCGM profiling module and a supported GPU)", True, [
            P("Tensor, graphics and memory activity", "percentunit",
              [("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{%s}" % g, "tensor " + legend),
               ("DCGM_FI_PROF_GR_ENGINE_ACTIVE{%s}" % g, "graphics engine " + legend),
               ("DCGM_FI_PROF_DRAM_ACTIVE{%s}" % g, "DRAM " + legend)],
              "DCGM_FI_PROF_* ratios; empty when the exporter runs without the profiling module.", max_value=1,
              width=12),
            P("PCIe traffic", "Bps",
              [("DCGM_FI_PROF_PCIE_TX_BYTES{%s}" % g, "TX " + legend), ("DCGM_FI_PROF_PCIE_RX_BYTES{%s}" % g, "RX " + legend)],
              "DCGM_FI_PROF_PCIE_TX_BYTES and _RX_BYTES (bytes/s), the KV-transfer path on hosts without NVLink.",
              width=12),
        ])])


def host():
    n = 'job="node", host=~"$host"'
    fs = n + ', fstype!~"tmpfs|ramfs|squashfs|nsfs|fuse.*"'
    return build(
        "pdserve-host", "Hosts",
        "Every serving and monitoring host (node exporter 1.5, scrape job node).",
        [label_variable("host", "Host", 'label_values(up{job="node"}, host)')],
        [("CPU and memory", False, [
            P("CPU busy by mode", "percentunit",
              [('sum by (host, mode) (rate(node_cpu_seconds_total{%s, mode!="idle"}[%s]))\n'
                '/ on (host) group_left () count by (host) (node_cpu_seconds_total{%s, mode="idle"})' % (n, RATE, n),
                "{{host}} {{mode}}")],
              "node_cpu_seconds_total: the share of all CPUs in each non-idle mode."),
            P("Load", "none", [("node_load1{%s}" % n, "{{host}} 1m"), ("node_load15{%s}" % n, "{{host}} 15m")],
              "node_load1 and node_load15."),
            P("Memory", "bytes",
              [("node_memory_MemAvailable_bytes{%s}" % n, "available {{host}}"),
               ("node_memory_MemTotal_bytes{%s}" % n, "total {{host}}")],
              "node_memory_MemAvailable_bytes and node_memory_MemTotal_bytes (the HostMemoryLow alert)."),
        ]), ("Disks and network", False, [
            P("Filesystem free", "percentunit",
              [("node_filesystem_avail_bytes{%s} / node_filesystem_size_bytes{%s}" % (fs, fs),
                "{{host}} {{mountpoint}}")],
              "node_filesystem_avail_bytes / node_filesystem_size_bytes (the HostDiskAlmostFull alert).",
              max_value=1),
            P("Disk I/O", "Bps",
              [("sum by (host) (rate(node_disk_read_bytes_total{%s}[%s]))" % (n, RATE), "read {{host}}"),
               ("sum by (host) (rate(node_disk_written_bytes_total{%s}[%s]))" % (n, RATE), "written {{host}}")],
              "node_disk_read_bytes_total and node_disk_written_bytes_total."),
            P("Network", "Bps",
              [('sum by (host, device) (rate(node_network_receive_bytes_total{%s, device!~"lo|veth.*|docker.*|podman.*|cni.*"}[%s]))'
                % (n, RATE), "in {{host}} {{device}}"),
               ('sum by (host, device) (rate(node_network_transmit_bytes_total{%s, device!~"lo|veth.*|docker.*|podman.*|cni.*"}[%s]))'
                % (n, RATE), "out {{host}} {{device}}")],
              "node_network_receive/transmit_bytes_total of the physical interfaces (KV transfers between hosts)."),
        ]), ("Units", False, [
            P("sglang units", "none",
              [('max by (host, name) (node_systemd_unit_state{%s, name=~"sglang-.+\\\\.service", state="active"})' % n,
                "{{host}} {{name}}")],
              "node_systemd_unit_state of the sglang-* units (node exporter's systemd collector): active or not.",
              kind="state", width=24,
              mappings=state_mappings([(0, "not active", "red"), (1, "active", "green")])),
        ])])


DASHBOARDS = (sglang_pd, router, gpu, host)


def render(output=OUTPUT):
    os.makedirs(output, exist_ok=True)
    written = []
    for make in DASHBOARDS:
        board = make()
        text = json.dumps(board, cls=JSONEncoder, sort_keys=True, indent=2) + "\n"
        path = os.path.join(output, "%s.json" % json.loads(text)["uid"])
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        written.append(path)
    return written


if __name__ == "__main__":
    for item in render(sys.argv[1] if len(sys.argv) > 1 else OUTPUT):
        print(item)
