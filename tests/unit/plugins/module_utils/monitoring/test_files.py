# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What a change of each monitoring file means: its check and the handlers it notifies (monitoring/files.py)."""

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring import files as mf

FILES = [
    {"path": "/etc/default/prometheus", "content": "ARGS=", "kind": "prometheus_start"},
    {"path": "/etc/prometheus/prometheus.yml", "content": "global: {}\n", "group": "prometheus", "mode": "0640",
     "kind": "prometheus_config"},
    {"path": "/etc/prometheus/rules/pdserve.rules.yml", "content": "groups: []\n", "kind": "prometheus_rules"},
    {"path": "/etc/prometheus/alertmanager.yml", "content": "route: {}\n", "kind": "alertmanager_config"},
    {"path": "/etc/grafana/provisioning/datasources/pdserve.yml", "content": "x", "kind": "grafana_provisioning"},
    {"path": "/etc/systemd/system/grafana-server.service.d/pdserve.conf", "content": "x", "kind": "grafana_unit"},
    {"path": "/var/lib/grafana/dashboards/pdserve/pdserve-host.json", "content": "{}", "kind": "dashboard"},
    {"path": "/etc/default/prometheus-node-exporter", "content": "ARGS=", "kind": "node_exporter"},
    {"path": "/etc/systemd/system/nvidia-dcgm-exporter.service.d/pdserve.conf", "content": "x",
     "kind": "gpu_exporter_unit"},
]


def paths(*kinds):
    return [f["path"] for f in FILES if f["kind"] in kinds]


def test_managed_files_get_the_files_without_their_kind():
    out = mf.managed(FILES)
    assert [f["path"] for f in out] == [f["path"] for f in FILES]
    assert all("kind" not in f for f in out)
    assert out[1] == {"path": "/etc/prometheus/prometheus.yml", "content": "global: {}\n", "group": "prometheus",
                      "mode": "0640"}


def test_an_unknown_kind_is_the_role_s_mistake():
    with pytest.raises(mf.FilesError, match="kind 'prometheus'"):
        mf.managed([{"path": "/x", "content": "", "kind": "prometheus"}])


def test_only_changed_files_with_a_tool_are_checked():
    assert mf.checks(FILES, []) == []
    out = mf.checks(FILES, paths("prometheus_config", "prometheus_rules", "dashboard", "alertmanager_config"))
    assert [(c["path"], c["argv"]) for c in out] == [
        ("/etc/prometheus/prometheus.yml", ["promtool", "check", "config", "%s"]),
        ("/etc/prometheus/rules/pdserve.rules.yml", ["promtool", "check", "rules", "%s"]),
        ("/etc/prometheus/alertmanager.yml", ["amtool", "check-config", "%s"]),
    ]
    assert out[0]["content"] == "global: {}\n"


def test_a_rule_change_reloads_prometheus_and_nothing_else():
    assert mf.actions(FILES, paths("prometheus_rules")) == ["monitoring reload prometheus"]


def test_a_flag_change_restarts_prometheus_and_drops_the_reload():
    assert mf.actions(FILES, paths("prometheus_rules", "prometheus_start", "prometheus_config")) == \
        ["monitoring restart prometheus"]


def test_a_dashboard_change_notifies_nothing():
    assert mf.actions(FILES, paths("dashboard")) == []


def test_unit_drop_ins_reload_systemd_first_and_restart_only_their_service():
    assert mf.actions(FILES, paths("gpu_exporter_unit")) == ["monitoring daemon-reload", "monitoring restart gpu exporter"]
    assert mf.actions(FILES, paths("grafana_unit", "grafana_provisioning", "node_exporter")) == [
        "monitoring restart grafana", "monitoring daemon-reload", "monitoring restart node exporter"]


def test_alertmanager_config_reloads_it():
    assert mf.actions(FILES, paths("alertmanager_config")) == ["monitoring reload alertmanager"]


def test_secret_values_are_the_passwords():
    assert mf.secret_values(["s3cret", "", {}, {"username": "u", "password": "p1"},
                             {"basic_auth": {"username": "u", "password": "p2"}, "scheme": "https"}]) == \
        ["s3cret", "p1", "p2"]
