# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The alert rules as data (module_utils/monitoring/rules.py): parameters checked and named, thresholds in the
expressions, every alert annotated; promtool's view of them is tests/unit/monitoring/test_alert_rules.py."""

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring import rules as mr

PARAMS = {"runbook_url": "https://runbook.example/docs/runbook.md", "scrape_interval": 15,
          "router_health_check_interval": 10, "health_window_intervals": 3, "expected_gpus": {"g1": 2}}


def _groups(params=None):
    return [group for dummy, group in mr.rule_groups(params or PARAMS)]


def _rules(params=None):
    return dict((r["alert"], r) for g in _groups(params) for r in g["rules"])


def test_every_alert_has_severity_summary_description_and_runbook():
    for group in _groups():
        for rule in group["rules"]:
            assert rule["labels"]["severity"] in mr.SEVERITIES, rule["alert"]
            notes = rule["annotations"]
            assert notes["summary"] and notes["description"], rule["alert"]
            assert notes["runbook_url"] == PARAMS["runbook_url"] + "#" + rule["alert"].lower()


@pytest.mark.parametrize("interval, scrape, expected", [(60, 15, 180), (10, 15, 60), (1, 2, 8), (5, 1, 15)])
def test_no_healthy_worker_window_follows_the_router_health_interval(interval, scrape, expected):
    params = dict(PARAMS, router_health_check_interval=interval, scrape_interval=scrape)
    assert mr.health_window_seconds(params) == expected
    expr = [r for g in _groups(params) for r in g["rules"] if r["alert"] == "SGLangRouterNoHealthyWorkers"][0]["expr"]
    assert expr.count("[%ds]" % expected) == 2


def test_a_health_window_below_three_intervals_is_not_possible():
    params = dict(PARAMS, router_health_check_interval=60, health_window_intervals=1)
    assert mr.health_window_seconds(params) == 180


@pytest.mark.parametrize("thresholds, message", [
    ({"server_down_for": "10 minutes"}, "monitoring_alert_server_down_for must be a Prometheus duration"),
    ({"ttft_p99_seconds": "fast"}, "monitoring_alert_ttft_p99_seconds must be a number"),
    ({"router_5xx_ratio": -1}, "monitoring_alert_router_5xx_ratio must be a number >= 0"),
    ({"no_such": 1}, "unknown alert threshold(s): monitoring_alert_no_such"),
])
def test_bad_thresholds_are_named(thresholds, message):
    with pytest.raises(mr.RuleError, match=message.replace("(", r"\(").replace(")", r"\)")):
        mr.rule_groups(dict(PARAMS, thresholds=thresholds))


def test_thresholds_reach_the_expressions():
    params = dict(PARAMS, thresholds={"ttft_p99_seconds": 3, "server_down_for": "30s", "queue_reqs": 7})
    rules = dict((r["alert"], r) for g in _groups(params) for r in g["rules"])
    assert rules["SGLangHighTTFT"]["expr"].endswith("> 3")
    assert rules["SGLangServerDown"]["for"] == "30s"
    assert rules["SGLangQueueBuildup"]["expr"].endswith("> 7")
    zero = dict((r["alert"], r) for g in _groups(dict(PARAMS, thresholds={"server_down_for": "0s"}))
                for r in g["rules"])
    assert "for" not in zero["SGLangServerDown"]


def test_gpu_missing_is_one_rule_per_host_with_an_expected_count():
    params = dict(PARAMS, expected_gpus={"a": 8, "b": None, "c": 4})
    missing = [r for g in _groups(params) for r in g["rules"] if r["alert"] == "GPUMissing"]
    assert [r["expr"].rsplit("<", 1)[1].strip() for r in missing] == ["8", "4"]
    assert 'host="a"' in missing[0]["expr"] and 'host="c"' in missing[1]["expr"]
    with pytest.raises(mr.RuleError, match="expected GPU count of a"):
        mr.rule_groups(dict(PARAMS, expected_gpus={"a": 0}))


def test_the_groups_and_their_one_file():
    stems = [stem for stem, _group in mr.rule_groups(PARAMS)]
    assert stems == ["pdserve-availability", "pdserve-latency", "pdserve-pd", "pdserve-gpu", "pdserve-host",
                     "pdserve-meta"]
    assert all(stem == group["name"] for stem, group in mr.rule_groups(PARAMS))
    files = mr.rule_files(PARAMS)
    assert list(files) == [mr.RULE_FILE] and [g["name"] for g in files[mr.RULE_FILE]["groups"]] == stems


def test_alert_names_are_sorted_and_unique():
    names = mr.alert_names(PARAMS)
    assert names == sorted(set(names))
    assert {"SGLangServerDown", "SGLangRouterNoHealthyWorkers", "GPUMissing", "HostDiskAlmostFull"} <= set(names)
    assert "GPUMissing" not in mr.alert_names(dict(PARAMS, expected_gpus={}))


def test_defaults_fill_every_threshold():
    rules = _rules()
    assert rules["SGLangServerDown"]["for"] == mr.THRESHOLDS["server_down_for"][0]
    assert rules["SGLangHighITL"]["expr"].endswith("> 0.25")
    assert rules["GPUHot"]["expr"].endswith("> 87")
    # a threshold given as None keeps its default
    assert _rules(dict(PARAMS, thresholds={"queue_reqs": None}))["SGLangQueueBuildup"]["expr"].endswith("> 50")


@pytest.mark.parametrize("params, message", [
    ({"runbook_url": ""}, "monitoring_runbook_url must be set"),
    ({"scrape_interval": 0}, "scrape_interval must be a number > 0, got 0"),
    ({"router_health_check_interval": True}, "router_health_check_interval must be a number > 0, got True"),
    ({"health_window_intervals": None}, "health_window_intervals must be a number > 0, got None"),
    ({"thresholds": {"gpu_temp_celsius": True}}, "monitoring_alert_gpu_temp_celsius must be a number >= 0"),
    ({"expected_gpus": {"g1": "8"}}, "the expected GPU count of g1 must be a whole number >= 1"),
])
def test_bad_parameters_are_named(params, message):
    with pytest.raises(mr.RuleError) as exc:
        mr.rule_groups(dict(PARAMS, **params))
    assert str(exc.value).startswith(message)


def test_counters_born_with_their_first_event_alert_on_appearing():
    expr = _rules()["SGLangKVTransferFailures"]["expr"]
    assert "increase(sglang:num_transfer_failed_reqs_total[5m])" in expr
    assert "unless sglang:num_transfer_failed_reqs_total offset 5m" in expr


def test_one_target_missing_rule_per_configured_job_and_the_watchdog():
    params = dict(PARAMS, targets=[{"job": "node"}, {"job": "node"}, {"job": "sglang-router"}])
    meta = dict(mr.rule_groups(params))["pdserve-meta"]["rules"]
    assert [r["alert"] for r in meta] == ["Watchdog", "PrometheusTargetMissing", "PrometheusTargetMissing"]
    assert meta[0]["expr"] == "vector(1)" and meta[0]["labels"] == {"severity": "none"} and "for" not in meta[0]
    node, router = meta[1], meta[2]
    assert node["labels"] == {"severity": "warning", "job": "node"} and node["for"] == "5m"
    assert 'count by (job) (up{job="node"} == 1) < 2' in node["expr"] and 'absent(up{job="node"} == 1)' in node["expr"]
    assert 'up{job="sglang-router"} == 1) < 1' in router["expr"]
    assert dict(mr.rule_groups(dict(params, thresholds={"target_missing_for": "1m"})))["pdserve-meta"]["rules"][1]["for"] == "1m"
    # Without targets (the judge's parameters) only the watchdog.
    assert [r["alert"] for r in dict(mr.rule_groups(PARAMS))["pdserve-meta"]["rules"]] == ["Watchdog"]


def test_targets_must_be_the_monitoring_targets():
    for bad in ([{"job": 'x"} or vector(1) #'}], ["node"], [{"address": "h:1"}]):
        with pytest.raises(mr.RuleError, match="targets must be"):
            mr.rule_groups(dict(PARAMS, targets=bad))
