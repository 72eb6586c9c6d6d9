"""/metrics with SGLang 0.5.23's names, labels and buckets, served through prometheus_client like SGLang.

The catalogue below is a subset of what sglang/srt/observability/metrics_collector.py defines in 0.5.23:
every metric the collection's dashboards and alert rules read, plus the neighbours that move with them.
tests/unit/emulator/test_emulator_metrics.py checks each entry (type, label names, buckets) against the
list extracted from the pinned wheel (tests/unit/fixtures/metrics/sglang-0.5.23.json).
"""
import re
import threading

from prometheus_client import (CollectorRegistry, Counter, Gauge, Histogram,
                               disable_created_metrics, make_asgi_app)
from starlette.routing import Mount

# SGLang runs prometheus_client in multiprocess mode (PROMETHEUS_MULTIPROC_DIR). Its collector
# writes no ``*_created`` series and leaves out every metric that has no sample yet (not even
# HELP/TYPE lines): a labelled counter appears with its first increment. The emulator does the
# same (the router's /engine_metrics fails on families without samples).
disable_created_metrics()


class _SampledOnly:
    """Collector exposing only the metric families of ``registry`` that have samples."""

    def __init__(self, registry):
        self.registry = registry

    def collect(self):
        for family in self.registry.collect():
            if family.samples:
                yield family


# The label sets of the two collectors (metrics_collector.py: the scheduler's and the tokenizer's
# ``labels`` dicts without priority, dp_rank or custom labels, which are off by default).
SCHEDULER = ("model_name", "engine_type", "tp_rank", "pp_rank", "moe_ep_rank")
TOKENIZER = ("model_name", "engine_type")

_TTFT = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
_E2E = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200,
        1800, 2400)
_ITL = (0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060,
        0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000)
_TOKENS = (100, 300, 500, 700, 1000, 1500, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000,
           12500, 15000, 17500, 20000, 22500, 25000, 27500, 30000, 35000, 40000, 60000, 80000,
           100000, 200000, 300000, 400000, 600000, 800000, 1000000, 1100000)
_QUEUE = (0.0, 0.001, 0.005, 0.010, 0.050, 0.100, 0.200, 0.500, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40,
          50, 60, 70, 80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600,
          1800, 2000, 2500, 3000)
_STAGE = tuple(0.001 * 1.62 ** i for i in range(30))  # exponential_buckets(0.001, 1.62, 30)
_KV_MS = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000)
_KV_BOOT_MS = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500)
_KV_SPEED = (0.1, 0.5, 1, 5, 10, 25, 50, 100, 200, 400)
_KV_MB = (1, 5, 10, 50, 100, 500, 1000, 5000, 10000)

# name -> (kind, help, base labels, extra labels, buckets)
CATALOG = {
    # scheduler gauges (log_stats sets them on every server, PD queues included)
    "sglang:num_running_reqs": ("gauge", "The number of running requests.", SCHEDULER, (), None),
    "sglang:num_queue_reqs": ("gauge", "The number of requests in the waiting queue.", SCHEDULER, (), None),
    "sglang:num_grammar_queue_reqs": ("gauge", "The number of requests in the grammar waiting queue.",
                                      SCHEDULER, (), None),
    "sglang:gen_throughput": ("gauge", "The generation throughput (token/s).", SCHEDULER, (), None),
    "sglang:cache_hit_rate": ("gauge", "The prefix cache hit rate.", SCHEDULER, (), None),
    "sglang:token_usage": ("gauge", "The token usage.", SCHEDULER, (), None),
    "sglang:full_token_usage": ("gauge", "The token usage for full attention layers.", SCHEDULER, (), None),
    "sglang:num_used_tokens": ("gauge", "The number of used tokens.", SCHEDULER, (), None),
    "sglang:kv_available_tokens": ("gauge", "Free KV cache slots.", SCHEDULER, (), None),
    "sglang:kv_evictable_tokens": ("gauge", "Evictable KV cache slots.", SCHEDULER, (), None),
    "sglang:kv_used_tokens": ("gauge", "Used KV cache slots.", SCHEDULER, (), None),
    "sglang:num_retracted_reqs": ("gauge", "The number of retracted requests.", SCHEDULER, (), None),
    "sglang:num_paused_reqs": ("gauge", "The number of paused requests by async weight sync.",
                               SCHEDULER, (), None),
    "sglang:num_prefill_bootstrap_queue_reqs": (
        "gauge", "The number of requests in the prefill bootstrap queue.", SCHEDULER, (), None),
    "sglang:num_prefill_inflight_queue_reqs": (
        "gauge", "The number of requests in the prefill inflight queue.", SCHEDULER, (), None),
    "sglang:num_decode_prealloc_queue_reqs": (
        "gauge", "The number of requests in the decode prealloc queue.", SCHEDULER, (), None),
    "sglang:num_decode_transfer_queue_reqs": (
        "gauge", "The number of requests in the decode transfer queue.", SCHEDULER, (), None),
    "sglang:num_decode_host_receive_queue_reqs": (
        "gauge", "The number of requests in the decode host receive queue.", SCHEDULER, (), None),
    "sglang:pending_prealloc_token_usage": (
        "gauge", "The token usage for pending preallocated tokens.", SCHEDULER, (), None),
    "sglang:prealloc_full_token_usage": (
        "gauge", "The token usage of the preallocated full attention tokens.", SCHEDULER, (), None),
    "sglang:utilization": ("gauge", "The utilization.", SCHEDULER, (), None),
    # constants emitted at startup
    "sglang:max_total_num_tokens": ("gauge", "Maximum total number of tokens in the KV cache pool.",
                                    SCHEDULER, (), None),
    "sglang:context_len": ("gauge", "The context length.", SCHEDULER, (), None),
    "sglang:page_size": ("gauge", "The page size.", SCHEDULER, (), None),
    # start-up phases: set once, when the engine is up (TokenizerManager.set_startup_time)
    "sglang:startup_time_seconds": ("gauge", "Engine startup duration by phase in seconds.", TOKENIZER,
                                    ("phase",), None),
    "sglang:startup_cuda_graph_time_seconds": ("gauge", "CUDA graph capture duration by phase in seconds.",
                                               TOKENIZER, ("phase",), None),
    # scheduler histograms and counters
    "sglang:queue_time_seconds": ("histogram", "Histogram of queueing time in seconds.", SCHEDULER, (),
                                  _QUEUE),
    "sglang:per_stage_req_latency_seconds": ("histogram", "The latency of each stage of requests.",
                                             SCHEDULER, ("stage",), _STAGE),
    "sglang:kv_transfer_latency_ms": ("histogram", "Histogram of KV transfer latency in ms.", SCHEDULER,
                                      (), _KV_MS),
    "sglang:kv_transfer_speed_gb_s": ("histogram", "Histogram of KV transfer speed in GB/s.", SCHEDULER,
                                      (), _KV_SPEED),
    "sglang:kv_transfer_total_mb": ("histogram", "Histogram of KV transfer total size in MB.", SCHEDULER,
                                    (), _KV_MB),
    "sglang:kv_transfer_bootstrap_ms": ("histogram", "Histogram of KV transfer bootstrap time in ms.",
                                        SCHEDULER, (), _KV_BOOT_MS),
    "sglang:kv_transfer_alloc_ms": ("histogram", "Histogram of KV transfer allocation time in ms.",
                                    SCHEDULER, (), _KV_BOOT_MS),
    # failure counters: a sample only after the first failure (SGLang increments them on failure)
    "sglang:num_bootstrap_failed_reqs_total": ("counter", "The number of bootstrap failed requests.",
                                               SCHEDULER, (), None),
    "sglang:num_transfer_failed_reqs_total": ("counter", "The number of transfer failed requests.",
                                              SCHEDULER, (), None),
    # tokenizer metrics: a sample only after the first finished (or aborted) request
    "sglang:prompt_tokens_total": ("counter", "Number of prefill tokens processed.", TOKENIZER,
                                   ("is_streaming",), None),
    "sglang:generation_tokens_total": ("counter", "Number of generation tokens processed.", TOKENIZER,
                                       ("is_streaming",), None),
    "sglang:num_requests_total": ("counter", "Number of requests processed.", TOKENIZER,
                                  ("is_streaming",), None),
    "sglang:num_aborted_requests_total": ("counter", "Number of requests aborted.", TOKENIZER, (), None),
    "sglang:cached_tokens_total": ("counter", "Number of cached prompt tokens by source (device/host/storage).",
                                   TOKENIZER, ("cache_source",), None),
    "sglang:prompt_tokens_histogram": ("histogram", "Histogram of prompt token length.", TOKENIZER, (),
                                       _TOKENS),
    "sglang:generation_tokens_histogram": ("histogram", "Histogram of generation token length.", TOKENIZER,
                                           (), _TOKENS),
    "sglang:time_to_first_token_seconds": ("histogram", "Histogram of time to first token in seconds.",
                                           TOKENIZER, ("is_streaming",), _TTFT),
    "sglang:inter_token_latency_seconds": ("histogram", "Histogram of inter-token latency in seconds.",
                                           TOKENIZER, (), _ITL),
    "sglang:request_time_per_output_token_seconds": (
        "histogram", "Per-request TPOT in seconds: (finished_time - first_token_time) / (completion_tokens - 1).",
        TOKENIZER, ("is_streaming",), _ITL),
    "sglang:e2e_request_latency_seconds": ("histogram", "Histogram of End-to-end request latency in seconds",
                                           TOKENIZER, ("is_streaming",), _E2E),
}
# Gauges with a sample from startup (SGLang logs scheduler stats from the start and emits the
# constants once); everything else appears with its first event (the start-up phases when the engine is up).
STARTUP_GAUGES = tuple(n for n, spec in CATALOG.items() if spec[0] == "gauge" and not spec[3])
_TYPES = {"gauge": Gauge, "counter": Counter, "histogram": Histogram}


class Metrics:
    """The metric set of one server process (thread-safe: the bootstrap runs in threads)."""

    def __init__(self, model_name, engine_type, tp_rank="0"):
        self.registry = CollectorRegistry()
        self.exposed = CollectorRegistry(auto_describe=False)
        self.exposed.register(_SampledOnly(self.registry))
        self.base = {"model_name": model_name, "engine_type": engine_type, "tp_rank": tp_rank,
                     "pp_rank": "0", "moe_ep_rank": "0"}
        self.metrics = {}
        self._lock = threading.Lock()
        for name, (kind, doc, base, extra, buckets) in CATALOG.items():
            kwargs = {"registry": self.registry}
            if buckets is not None:
                kwargs["buckets"] = buckets
            # prometheus_client appends _total to counters itself
            metric_name = name[:-len("_total")] if kind == "counter" else name
            self.metrics[name] = _TYPES[kind](metric_name, doc, list(base) + list(extra), **kwargs)
        for name in STARTUP_GAUGES:
            self.set(name, 0)

    def _child(self, name, extra):
        base = CATALOG[name][2]
        values = dict((k, self.base[k]) for k in base)
        values.update(extra)
        return self.metrics[name].labels(**values)

    def set(self, name, value, **extra):
        self._child(name, extra).set(value)

    def add(self, name, delta, **extra):
        """Change a gauge by ``delta`` (queues and running requests)."""
        with self._lock:
            self._child(name, extra).inc(delta)

    def inc(self, name, amount=1, **extra):
        self._child(name, extra).inc(amount)

    def observe(self, name, value, **extra):
        self._child(name, extra).observe(value)

    def set_startup_time(self, timings):
        """What 0.5.23's emit_startup_time sets from the engine's start-up timings."""
        for phase in ("load_weight", "kv_cache_allocation", "scheduler_e2e", "tokenizer_e2e"):
            self.set("sglang:startup_time_seconds", timings[phase], phase=phase)
        for phase, seconds in timings["cuda_graph"].items():
            self.set("sglang:startup_cuda_graph_time_seconds", seconds, phase=phase)

    def value(self, name, **extra):
        """The current value of a gauge or counter sample (for the emulator's own bookkeeping)."""
        return self._child(name, extra)._value.get()  # pylint: disable=protected-access

    def route(self):
        """The /metrics route as SGLang mounts it (no 307 redirect to /metrics/)."""
        route = Mount("/metrics", make_asgi_app(registry=self.exposed))
        route.path_regex = re.compile("^/metrics(?P<path>.*)$")
        return route
