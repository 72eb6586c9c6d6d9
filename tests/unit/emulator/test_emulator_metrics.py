# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The emulator's metrics are SGLang 0.5.23's: names, types, label names and buckets as the pinned
wheel defines them (tests/unit/fixtures/metrics/sglang-0.5.23.json, extracted by sglang_metrics.py)."""

import json
import os

import pytest

from sglemu import metrics

WHEEL_LIST = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "metrics",
                          "sglang-0.5.23.json")
with open(WHEEL_LIST, encoding="utf-8") as _handle:
    SGLANG = json.load(_handle)["metrics"]


@pytest.mark.parametrize("name", sorted(metrics.CATALOG))
def test_catalogue_entry_matches_the_wheel(name):
    kind, dummy_doc, base, extra, buckets = metrics.CATALOG[name]
    assert name in SGLANG, "%s is not a metric of sglang 0.5.23" % name
    real = SGLANG[name]
    assert kind == real["type"]
    assert list(base) == real["base_labels"], "base labels of %s" % name
    assert list(extra) == real["extra_labels"], "extra labels of %s" % name
    if kind == "histogram":
        assert real["buckets"], "the wheel's buckets of %s are not literal" % name
        assert [round(b, 12) for b in buckets] == real["buckets"], "buckets of %s" % name


def test_exposition_has_only_sampled_families_and_no_created_series():
    m = metrics.Metrics("model-x", "decode")
    from prometheus_client import generate_latest
    text = generate_latest(m.exposed).decode()
    assert "sglang:num_running_reqs{" in text
    assert 'engine_type="decode"' in text
    for absent in ("sglang:num_transfer_failed_reqs", "sglang:num_requests_total",
                   "sglang:time_to_first_token_seconds", "_created"):
        assert absent not in text, absent
    m.inc("sglang:num_transfer_failed_reqs_total")
    text = generate_latest(m.exposed).decode()
    assert ('sglang:num_transfer_failed_reqs_total{engine_type="decode",model_name="model-x",moe_ep_rank="0",'
            'pp_rank="0",tp_rank="0"} 1.0') in text
