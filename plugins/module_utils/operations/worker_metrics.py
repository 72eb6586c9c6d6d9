# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

"""Whether an SGLang server still holds requests, from its own ``/metrics`` (``--enable-metrics``).

A worker taken out of the router keeps the requests it had: it is idle once its scheduler gauges (running,
waiting, and the PD queues: prefill bootstrap and in-flight, decode prealloc and transfer) all read 0, on two
scrapes in a row a moment apart (a request can sit between two queues for an instant). The router's own gauge
``smg_worker_requests_active`` must not be used: it drops to 0 when the worker is removed while requests still
run on it (measured with sglang-router 0.3.2).

SGLang serves ``/metrics`` through prometheus_client, which writes ``sglang_x`` instead of ``sglang:x`` for some
Accept headers (client_python#1177): both spellings are read.
"""

import math
import re
import time
from typing import Any, Dict, Optional

from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import join_url

# The gauges that count requests a server holds. Only num_running_reqs is required: the PD queues exist only on
# PD servers, and some only in newer releases.
IN_FLIGHT_GAUGES = (
    'sglang:num_running_reqs',
    'sglang:num_queue_reqs',
    'sglang:num_prefill_bootstrap_queue_reqs',
    'sglang:num_prefill_inflight_queue_reqs',
    'sglang:num_decode_prealloc_queue_reqs',
    'sglang:num_decode_transfer_queue_reqs',
)
REQUIRED_GAUGE = 'sglang:num_running_reqs'
REQUESTS_COUNTER = 'sglang:num_requests_total'

_SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)')


class MetricsError(Exception):
    """The server's /metrics could not be read or lacks what is needed."""


def canonical(name: str) -> str:
    """``sglang_num_running_reqs`` -> ``sglang:num_running_reqs`` (the name SGLang registers)."""
    if name.startswith('sglang_'):
        return 'sglang:' + name[len('sglang_'):]
    return name


def parse_samples(text: Optional[str]) -> Dict[str, float]:
    """{metric name: summed value over all label sets} of a Prometheus text exposition."""
    sums: Dict[str, float] = {}
    for line in (text or '').splitlines():
        if not line or line.startswith('#'):
            continue
        match = _SAMPLE.match(line)
        if not match:
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        if math.isnan(value):
            continue
        name = canonical(match.group(1))
        sums[name] = sums.get(name, 0.0) + value
    return sums


def reading(text: Optional[str]) -> Dict[str, Any]:
    """What one scrape says: {in_flight, gauges, requests_total}; MetricsError without the running gauge."""
    sums = parse_samples(text)
    if REQUIRED_GAUGE not in sums:
        raise MetricsError('no %s in /metrics: is the server started with --enable-metrics, and has its scheduler '
                           'reported yet?' % REQUIRED_GAUGE)
    gauges = dict((name, sums[name]) for name in IN_FLIGHT_GAUGES if name in sums)
    return {
        'in_flight': int(round(sum(gauges.values()))),
        'gauges': dict((k, int(round(v))) for k, v in gauges.items()),
        'requests_total': int(round(sums.get(REQUESTS_COUNTER, 0.0))),
    }


class IdleWaiter(object):
    """Scrape ``url``/metrics until ``scrapes`` readings in a row show nothing in flight, or the timeout."""

    def __init__(self, client, url, timeout=300.0, interval=1.0, scrapes=2, clock=time.monotonic, sleep=time.sleep):
        self.client = client
        self.url = url.rstrip('/')
        self.timeout = float(timeout)
        self.interval = float(interval)
        self.scrapes = max(1, int(scrapes))
        self.clock = clock
        self.sleep = sleep

    def scrape(self) -> Dict[str, Any]:
        answer = self.client.get(join_url(self.url, '/metrics'))
        if answer.status != 200:
            raise MetricsError('cannot read %s/metrics: %s' % (self.url, answer.summary('/metrics')))
        return reading(answer.text)

    def once(self) -> Dict[str, Any]:
        """One scrape, no waiting: {idle, in_flight, gauges, requests_total, seconds: 0, scrapes: 1}."""
        now = self.scrape()
        return dict(now, idle=now['in_flight'] == 0, seconds=0.0, scrapes=1, first=now)

    def wait(self) -> Dict[str, Any]:
        """{idle, seconds, scrapes, in_flight, gauges, requests_total, first}: ``first`` is the first reading
        (what the server held when the wait began), the rest the last one."""
        started = self.clock()
        deadline = started + self.timeout
        quiet = 0
        count = 0
        first = None
        while True:
            now = self.scrape()
            count += 1
            if first is None:
                first = now
            quiet = quiet + 1 if now['in_flight'] == 0 else 0
            elapsed = self.clock() - started
            if quiet >= self.scrapes:
                return dict(now, idle=True, seconds=round(elapsed, 3), scrapes=count, first=first)
            if self.clock() >= deadline:
                return dict(now, idle=False, seconds=round(elapsed, 3), scrapes=count, first=first)
            self.sleep(min(self.interval, max(0.0, deadline - self.clock())))
