# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The alert rules with the real promtool (Debian 12's 2.42): they load, and each alert fires and stays quiet
where it should (tests/unit/fixtures/monitoring/alerts.test.yml)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil

import pytest
import yaml

from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring import rules as mr

from monitoring_paths import FIXTURES, ROOT

TEST_FILE = os.path.join(FIXTURES, "monitoring", "alerts.test.yml")
PARAMS = {"runbook_url": "https://runbook.example/docs/runbook.md", "scrape_interval": 15,
          "router_health_check_interval": 10, "health_window_intervals": 3, "expected_gpus": {"g1": 2}}


def _dump(data, path):
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(data, handle, sort_keys=False, width=200)


def _groups(params=None):
    return [group for dummy, group in mr.rule_groups(params or PARAMS)]


def test_rule_files_pass_promtool_check(tmp_path, promtool):
    paths = []
    for name, content in mr.rule_files(PARAMS).items():
        path = tmp_path / name
        _dump(content, str(path))
        paths.append(str(path))
    result = promtool("check", "rules", *paths)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_alert_fires_and_stays_quiet_in_promtool(tmp_path, promtool):
    # promtool compares annotations verbatim: test a copy without them (check rules parses them above)
    groups = []
    for group in _groups():
        rules = [dict((k, v) for k, v in rule.items() if k != "annotations") for rule in group["rules"]]
        groups.append({"name": group["name"], "rules": rules})
    _dump({"groups": groups}, str(tmp_path / "rules.yml"))
    shutil.copy(TEST_FILE, str(tmp_path / "alerts.test.yml"))
    result = promtool("test", "rules", "alerts.test.yml", cwd=str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_the_promtool_file_has_a_firing_and_a_quiet_case_per_alert():
    with open(TEST_FILE, encoding="utf-8") as handle:
        cases = yaml.safe_load(handle)["tests"]
    firing, quiet = set(), set()
    for case in cases:
        for check in case["alert_rule_test"]:
            (firing if check["exp_alerts"] else quiet).add(check["alertname"])
    names = set(mr.alert_names(PARAMS))
    assert names - firing == set(), "alerts without a firing case"
    assert names - quiet == set(), "alerts without a quiet case"
    assert (firing | quiet) - names == set(), "cases for alerts that do not exist"


def test_every_alert_has_severity_summary_description_and_runbook():
    for group in _groups():
        for rule in group["rules"]:
            assert rule["labels"]["severity"] in mr.SEVERITIES, rule["alert"]
            notes = rule["annotations"]
            assert notes["summary"] and notes["description"], rule["alert"]
            assert notes["runbook_url"] == PARAMS["runbook_url"] + "#" + rule["alert"].lower()


def test_every_alert_has_a_runbook_section():
    with open(os.path.join(ROOT, "docs", "runbook.md"), encoding="utf-8") as handle:
        headings = [line[3:].strip() for line in handle if line.startswith("## ")]
    missing = sorted(set(mr.alert_names(PARAMS)) - set(headings))
    assert not missing, "docs/runbook.md has no '## <alert>' section for %s" % missing


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
