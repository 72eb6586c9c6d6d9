# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A worker is idle when its own in-flight gauges read 0 twice in a row, read from a fake /metrics."""

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.operations import worker_metrics as wm
from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import HttpClient

from fake_pd import FakeWorker  # noqa: E402  pylint: disable=wrong-import-position

TEXT = '''# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m",engine_type="decode",tp_rank="0"} 2.0
sglang:num_running_reqs{model_name="m",engine_type="decode",tp_rank="1"} 1.0
sglang_num_queue_reqs{model_name="m",engine_type="decode",tp_rank="0"} 1.0
sglang:num_decode_transfer_queue_reqs{model_name="m",engine_type="decode",tp_rank="0"} NaN
sglang:num_requests_total{model_name="m",engine_type="decode",is_streaming="true"} 40.0
sglang:num_requests_total{model_name="m",engine_type="decode",is_streaming="false"} 2.0
sglang:num_requests_created{model_name="m"} 1.7e9
sglang:gen_throughput{model_name="m"} +Inf
'''


@pytest.fixture
def worker():
    made = []

    def make(**kwargs):
        fake = FakeWorker(**kwargs)
        made.append(fake)
        return fake
    yield make
    for fake in made:
        fake.stop()


def waiter(fake, **kwargs):
    kwargs.setdefault('interval', 0.01)
    return wm.IdleWaiter(HttpClient(timeout=5), fake.url, **kwargs)


def test_samples_are_summed_over_labels_in_both_spellings():
    sums = wm.parse_samples(TEXT)
    assert sums['sglang:num_running_reqs'] == 3.0
    assert sums['sglang:num_queue_reqs'] == 1.0
    assert 'sglang:num_decode_transfer_queue_reqs' not in sums  # NaN ignored
    assert sums['sglang:num_requests_total'] == 42.0


def test_reading_adds_the_in_flight_gauges():
    found = wm.reading(TEXT)
    assert found['in_flight'] == 4
    assert found['gauges'] == {'sglang:num_running_reqs': 3, 'sglang:num_queue_reqs': 1}
    assert found['requests_total'] == 42


def test_reading_without_the_running_gauge_says_why():
    with pytest.raises(wm.MetricsError, match='--enable-metrics'):
        wm.reading('sglang:num_queue_reqs 0\n')


def test_idle_needs_two_quiet_scrapes_in_a_row(worker):
    fake = worker(readings=[{'sglang:num_running_reqs': 3}, {'sglang:num_running_reqs': 0},
                            {'sglang:num_running_reqs': 0, 'sglang:num_prefill_bootstrap_queue_reqs': 1},
                            {'sglang:num_running_reqs': 0}], requests_total=9)
    found = waiter(fake).wait()
    assert found['idle'] and found['scrapes'] == 5
    assert found['first']['in_flight'] == 3
    assert found['requests_total'] == 10


def test_underscore_names_count_too(worker):
    fake = worker(readings=[{'sglang:num_queue_reqs': 2, 'sglang:num_running_reqs': 0}, {'sglang:num_running_reqs': 0}],
                  underscore=True)
    found = waiter(fake).wait()
    assert found['idle'] and found['first']['in_flight'] == 2


def test_timeout_reports_what_is_still_held(worker):
    fake = worker(readings=[{'sglang:num_running_reqs': 2, 'sglang:num_decode_transfer_queue_reqs': 1}])
    found = waiter(fake, timeout=0.1).wait()
    assert not found['idle'] and found['in_flight'] == 3


def test_once_reads_without_waiting(worker):
    fake = worker(readings=[{'sglang:num_running_reqs': 1}], requests_total=4)
    found = waiter(fake).once()
    assert found['scrapes'] == 1 and not found['idle'] and found['requests_total'] == 5


def test_no_metrics_is_an_error(worker):
    fake = worker(status=404)
    with pytest.raises(wm.MetricsError, match='cannot read'):
        waiter(fake).wait()
