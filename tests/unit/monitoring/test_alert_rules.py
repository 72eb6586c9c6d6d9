# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The alert rules with the real promtool (Debian 12's 2.42): they load, and each alert fires and stays quiet
where it should (tests/unit/fixtures/monitoring/alerts.test.yml). The rules as data: tests/unit/plugins/module_utils/
monitoring/test_rules.py."""

import os
import shutil

import yaml

from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring import rules as mr

from monitoring_paths import FIXTURES, ROOT

TEST_FILE = os.path.join(FIXTURES, "monitoring", "alerts.test.yml")
PARAMS = {"runbook_url": "https://runbook.example/docs/runbook.md", "scrape_interval": 15,
          "router_health_check_interval": 10, "health_window_intervals": 3, "expected_gpus": {"g1": 2},
          "targets": [{"job": "sglang-decode"}, {"job": "sglang-decode"}, {"job": "prometheus"}]}


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
    # An always-firing alert has no quiet case; its own case checks it fires at every evaluation.
    assert set(mr.ALWAYS_FIRING) <= names and set(mr.ALWAYS_FIRING) & quiet == set()
    assert names - quiet - set(mr.ALWAYS_FIRING) == set(), "alerts without a quiet case"
    assert (firing | quiet) - names == set(), "cases for alerts that do not exist"


def test_every_alert_has_a_runbook_section():
    with open(os.path.join(ROOT, "docs", "runbook.md"), encoding="utf-8") as handle:
        headings = [line[3:].strip() for line in handle if line.startswith("## ")]
    missing = sorted(set(mr.alert_names(PARAMS)) - set(headings))
    assert not missing, "docs/runbook.md has no '## <alert>' section for %s" % missing
