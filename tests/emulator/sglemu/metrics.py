"""/metrics with SGLang's metric names, served through prometheus_client like SGLang does."""
import re

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


# Scheduler metrics carry these labels; tokenizer metrics carry model_name and engine_type,
# the request counters and latency histograms also is_streaming
# (sglang/srt/observability/metrics_collector.py in 0.5.23).
LABELS = ("model_name", "engine_type", "tp_rank", "pp_rank", "moe_ep_rank")
TOKENIZER_LABELS = ("model_name", "engine_type")
STREAMING_LABELS = ("model_name", "engine_type", "is_streaming")

GAUGES = {
    "sglang:num_running_reqs": "The number of running requests.",
    "sglang:num_queue_reqs": "The number of requests in the waiting queue.",
    "sglang:gen_throughput": "The generation throughput (token/s).",
    "sglang:token_usage": "The token usage.",
    "sglang:cache_hit_rate": "The prefix cache hit rate.",
    "sglang:num_prefill_bootstrap_queue_reqs": "The number of requests in the prefill bootstrap queue.",
    "sglang:num_decode_transfer_queue_reqs": "The number of requests in the decode transfer queue.",
}
COUNTERS = {
    "sglang:prompt_tokens": "Number of prefill tokens processed.",
    "sglang:generation_tokens": "Number of generation tokens processed.",
    "sglang:num_requests": "Number of requests processed.",
}
# Scheduler counters that only get a sample once a failure happened.
FAILURE_COUNTERS = {
    "sglang:num_bootstrap_failed_reqs": "The number of bootstrap failed requests.",
    "sglang:num_transfer_failed_reqs": "The number of transfer failed requests.",
}
_TTFT = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
_E2E = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 800)
_ITL = (0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060,
        0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000)
# name -> (help, buckets, label names)
HISTOGRAMS = {
    "sglang:time_to_first_token_seconds": (
        "Histogram of time to first token in seconds.", _TTFT, STREAMING_LABELS),
    "sglang:inter_token_latency_seconds": (
        "Histogram of inter-token latency in seconds.", _ITL, TOKENIZER_LABELS),
    "sglang:e2e_request_latency_seconds": (
        "Histogram of End-to-end request latency in seconds", _E2E, STREAMING_LABELS),
    "sglang:kv_transfer_latency_ms": (
        "Histogram of KV cache transfer latency in ms.",
        (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000), LABELS),
}


class Metrics:
    """The metric set of one server process."""

    def __init__(self, model_name, engine_type, tp_rank="0"):
        self.registry = CollectorRegistry()
        self.exposed = CollectorRegistry(auto_describe=False)
        self.exposed.register(_SampledOnly(self.registry))
        self.labels = {"model_name": model_name, "engine_type": engine_type,
                       "tp_rank": tp_rank, "pp_rank": "0", "moe_ep_rank": "0"}
        self.tokenizer_labels = {"model_name": model_name, "engine_type": engine_type}
        self.gauges = {n: Gauge(n, h, LABELS, registry=self.registry) for n, h in GAUGES.items()}
        self.counters = {n: Counter(n, h, STREAMING_LABELS, registry=self.registry)
                         for n, h in COUNTERS.items()}
        self.failures = {n: Counter(n, h, LABELS, registry=self.registry)
                         for n, h in FAILURE_COUNTERS.items()}
        self.histograms = {n: (Histogram(n, h, labels, buckets=b, registry=self.registry), labels)
                           for n, (h, b, labels) in HISTOGRAMS.items()}
        for gauge in self.gauges.values():
            gauge.labels(**self.labels).set(0)

    def _label_values(self, names, streaming):
        values = dict(self.labels)
        values["is_streaming"] = "true" if streaming else "false"
        return {k: values[k] for k in names}

    def gauge(self, name, value):
        self.gauges[name].labels(**self.labels).set(value)

    def gauge_add(self, name, delta):
        self.gauges[name].labels(**self.labels).inc(delta)

    def count(self, name, amount=1, streaming=False):
        self.counters[name].labels(**self._label_values(STREAMING_LABELS, streaming)).inc(amount)

    def fail(self, name):
        self.failures[name].labels(**self.labels).inc()

    def observe(self, name, value, streaming=False):
        histogram, names = self.histograms[name]
        histogram.labels(**self._label_values(names, streaming)).observe(value)

    def route(self):
        """The /metrics route as SGLang mounts it (no 307 redirect to /metrics/)."""
        route = Mount("/metrics", make_asgi_app(registry=self.exposed))
        route.path_regex = re.compile("^/metrics(?P<path>.*)$")
        return route
