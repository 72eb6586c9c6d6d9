"""/metrics with SGLang's metric names, served through prometheus_client like SGLang does."""
import re

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, make_asgi_app
from starlette.routing import Mount

LABELS = ("model_name", "engine_type", "tp_rank")

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
    "sglang:num_requests": "The number of processed requests.",
}
# Counters that SGLang only creates samples for once a failure happened.
FAILURE_COUNTERS = {
    "sglang:num_bootstrap_failed_reqs": "The number of bootstrap failed requests.",
    "sglang:num_transfer_failed_reqs": "The number of transfer failed requests.",
}
HISTOGRAMS = {
    "sglang:time_to_first_token_seconds": (
        "Histogram of time to first token in seconds.",
        (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
         10.0, 20.0, 40.0, 60.0, 80.0, 120.0, 160.0)),
    "sglang:inter_token_latency_seconds": (
        "Histogram of inter-token latency in seconds.",
        (0.002, 0.004, 0.006, 0.008, 0.01, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04, 0.06, 0.08,
         0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.0)),
    "sglang:e2e_request_latency_seconds": (
        "Histogram of End-to-end request latency in seconds",
        (0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0, 40.0, 60.0, 80.0, 100.0,
         150.0, 200.0, 250.0, 300.0, 350.0, 500.0, 1000.0)),
    "sglang:kv_transfer_latency_ms": (
        "Histogram of KV transfer latency in milliseconds.",
        (0.1, 0.5, 1.0, 5.0, 10.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0)),
}


class Metrics:
    """The metric set of one server; ``labels`` are fixed per process."""

    def __init__(self, model_name, engine_type, tp_rank="0"):
        self.registry = CollectorRegistry()
        self.labels = {"model_name": model_name, "engine_type": engine_type, "tp_rank": tp_rank}
        self.gauges = {n: Gauge(n, h, LABELS, registry=self.registry) for n, h in GAUGES.items()}
        self.counters = {n: Counter(n, h, LABELS, registry=self.registry)
                         for n, h in COUNTERS.items()}
        self.failures = {n: Counter(n, h, LABELS, registry=self.registry)
                         for n, h in FAILURE_COUNTERS.items()}
        self.histograms = {n: Histogram(n, h, LABELS, buckets=b, registry=self.registry)
                           for n, (h, b) in HISTOGRAMS.items()}
        for gauge in self.gauges.values():
            gauge.labels(**self.labels).set(0)
        for counter in self.counters.values():
            counter.labels(**self.labels)

    def gauge(self, name, value):
        self.gauges[name].labels(**self.labels).set(value)

    def gauge_add(self, name, delta):
        self.gauges[name].labels(**self.labels).inc(delta)

    def count(self, name, amount=1):
        self.counters[name].labels(**self.labels).inc(amount)

    def fail(self, name):
        self.failures[name].labels(**self.labels).inc()

    def observe(self, name, value):
        self.histograms[name].labels(**self.labels).observe(value)

    def route(self):
        """The /metrics route as SGLang mounts it (no 307 redirect to /metrics/)."""
        route = Mount("/metrics", make_asgi_app(registry=self.registry))
        route.path_regex = re.compile("^/metrics(?P<path>.*)$")
        return route
