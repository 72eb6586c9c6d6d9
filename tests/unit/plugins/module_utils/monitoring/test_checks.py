# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The monitoring preflight's judgement (module_utils/monitoring/checks.py): the ports the role's services want on
each host, foreign listeners on them, the role's options and the alert parameters."""

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring import checks as monitoring_checks
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.topology import build_topology
from serving_support import ONE_HOST_GROUPS, TOPOLOGY_DEFAULTS, one_host_vars  # noqa: E402  pylint: disable=wrong-import-position

ONE = build_topology(one_host_vars(), ONE_HOST_GROUPS, defaults=TOPOLOGY_DEFAULTS)
ONE_SETTINGS = {"monitoring_hosts": ["box"], "gpu_hosts": ["box"]}
# Two hosts: Prometheus on "mon", a GPU host "gpu" with a decode server that mon scrapes over its address.
TWO = build_topology({"gpu": {"ansible_host": "10.0.0.21", "sglang_server_host": "10.0.0.21",
                              "sglang_decode_instances": [{"name": "decode", "port": 30002}]},
                      "mon": {"ansible_host": "10.0.0.5"}},
                     {"sglang_decode": ["gpu"], "monitoring": ["mon"]}, defaults=TOPOLOGY_DEFAULTS)
TWO_SETTINGS = {"monitoring_hosts": ["mon"], "gpu_hosts": ["gpu"]}
RULES = {"runbook_url": "https://x", "scrape_interval": 15, "router_health_check_interval": 60,
         "health_window_intervals": 3}


def _sock(port, unit):
    return {"address": "127.0.0.1", "port": port, "uid": 0, "owners": [{"pid": "42", "unit": unit}]}


def test_a_host_running_everything_wants_every_port():
    ports = monitoring_checks.wanted_ports(ONE, "box", ONE_SETTINGS, {"grafana_source": "apt_repo"})
    assert [variable for _port, variable in ports] == [
        "monitoring_node_exporter_port", "monitoring_gpu_exporter_port", "monitoring_prometheus_port",
        "monitoring_grafana_port"]
    assert dict((v, p) for p, v in ports)["monitoring_prometheus_port"] == 9090
    assert dict((v, p) for p, v in ports)["monitoring_node_exporter_port"] == 9100


def test_what_the_role_does_not_install_wants_no_port():
    options = {"prometheus_install": "none", "gpu_exporter_source": "none", "grafana_source": "none"}
    ports = monitoring_checks.wanted_ports(ONE, "box", dict(ONE_SETTINGS, node_exporter={"enabled": False}), options)
    assert ports == []
    ports = monitoring_checks.wanted_ports(ONE, "box", dict(ONE_SETTINGS, alertmanager={"enabled": True}), options)
    assert [v for _p, v in ports] == ["monitoring_node_exporter_port", "monitoring_alertmanager_port"]


def test_each_host_wants_only_the_ports_of_what_runs_there():
    gpu = [v for _p, v in monitoring_checks.wanted_ports(TWO, "gpu", TWO_SETTINGS, {})]
    mon = [v for _p, v in monitoring_checks.wanted_ports(TWO, "mon", TWO_SETTINGS, {})]
    assert gpu == ["monitoring_node_exporter_port", "monitoring_gpu_exporter_port"]
    assert "monitoring_prometheus_port" in mon and "monitoring_gpu_exporter_port" not in mon


def test_a_clean_layout_has_no_problem():
    assert monitoring_checks.judge("box", ONE, ONE_SETTINGS) == []
    assert monitoring_checks.judge("mon", TWO, TWO_SETTINGS, {}, {"listeners": []}, RULES) == []


def test_foreign_listener_on_a_monitoring_port():
    own = {"own_units": ["prometheus.service", "prometheus-node-exporter.service"]}
    observed = {"listeners": [_sock(9090, "prometheus.service"), _sock(9100, "other.service"),
                              _sock(9400, "pdserve-dcgm-exporter-emulator.service")]}
    problems = monitoring_checks.judge("box", ONE, ONE_SETTINGS, dict(own, gpu_exporter_source="none"), observed)
    assert [(p["variable"], p["message"]) for p in problems] == [
        ("monitoring_node_exporter_port", "wants port 9100 but 127.0.0.1:9100 is already held by pid 42 (other.service)")]
    # the role installs the GPU exporter: then the port must be free (or the exporter's own)
    problems = monitoring_checks.judge("box", ONE, ONE_SETTINGS, dict(own, gpu_exporter_source="nvidia_repo"), observed)
    assert [p["variable"] for p in problems] == ["monitoring_node_exporter_port", "monitoring_gpu_exporter_port"]


def test_a_listener_of_no_systemd_unit_is_named_so():
    observed = {"listeners": [_sock(9090, "none")]}
    (problem,) = monitoring_checks.judge("box", ONE, ONE_SETTINGS, {}, observed)
    assert problem["message"] == "wants port 9090 but 127.0.0.1:9090 is already held by pid 42 (not a systemd service)"
    assert problem["fix"] == "stop that process or choose another port"


def test_socket_of_unknown_process_is_ours_when_the_service_user_holds_it():
    hidden = {"address": "127.0.0.1", "port": 9100, "uid": 101, "owners": []}
    problems = monitoring_checks.judge("box", ONE, ONE_SETTINGS, {"own_uids": [101]}, {"listeners": [hidden]})
    assert problems == []
    problems = monitoring_checks.judge("box", ONE, ONE_SETTINGS, {"own_uids": [0]}, {"listeners": [hidden]})
    assert [p["message"] for p in problems] == [
        "wants port 9100 but 127.0.0.1:9100 is already held by a process of uid 101"]


def test_listeners_not_observed_are_not_judged():
    assert monitoring_checks.judge("box", ONE, ONE_SETTINGS, {}, {"listeners": None}) == []
    assert monitoring_checks.judge("box", ONE, ONE_SETTINGS, {}, None) == []


def test_bad_threshold_is_a_problem_of_the_monitoring_host():
    rules = dict(RULES, thresholds={"server_down_for": "ten minutes"})
    problems = monitoring_checks.judge("box", ONE, ONE_SETTINGS, {}, None, rules)
    assert [(p["host"], p["variable"]) for p in problems] == [("box", "monitoring_alert_server_down_for")]
    assert problems[0]["fix"] == "correct the value in the inventory"
    # only the monitoring host renders the rules
    assert monitoring_checks.judge("gpu", TWO, TWO_SETTINGS, {}, None, rules) == []


def test_a_rule_error_names_its_variable_or_the_alert_variables():
    problems = monitoring_checks.judge("box", ONE, ONE_SETTINGS, {}, None, dict(RULES, runbook_url=""))
    assert [p["variable"] for p in problems] == ["monitoring_runbook_url"]
    problems = monitoring_checks.judge("box", ONE, ONE_SETTINGS, {}, None, dict(RULES, expected_gpus={"box": 0}))
    assert [p["variable"] for p in problems] == ["monitoring_alert_*"]
    assert problems[0]["message"] == "the expected GPU count of box must be a whole number >= 1, got 0"


@pytest.mark.parametrize("options, variable", [
    ({"package_source": "deb_files"}, "monitoring_deb_files"),
    ({"gpu_exporter_source": "deb_files"}, "monitoring_gpu_exporter_deb_files"),
    ({"grafana_source": "deb_file", "grafana_admin_password_set": True}, "monitoring_grafana_deb_file"),
    ({"grafana_source": "apt_repo"}, "monitoring_grafana_admin_password"),
    ({"prometheus_host": "0.0.0.0"}, "monitoring_prometheus_web_config"),
    ({"prometheus_host": "10.0.0.5"}, "monitoring_prometheus_web_config"),
    ({"prometheus_host": "::"}, "monitoring_prometheus_web_config"),
    ({"prometheus_basic_auth_users": True}, "monitoring_prometheus_client_auth"),
])
def test_option_problems(options, variable):
    problems = monitoring_checks.judge("box", ONE, ONE_SETTINGS, options)
    assert [p["variable"] for p in problems] == [variable]


@pytest.mark.parametrize("options", [
    {"prometheus_host": "127.0.0.1"},
    {"prometheus_host": "::1"},
    {"prometheus_host": "0.0.0.0", "prometheus_basic_auth_users": True, "prometheus_client_auth_set": True},
    {"prometheus_host": "0.0.0.0", "prometheus_allow_unauthenticated": True},
    # an existing Prometheus (install none) keeps its own flags: its listen address is not the role's
    {"prometheus_host": "0.0.0.0", "prometheus_install": "none"},
])
def test_prometheus_off_loopback_wants_basic_auth_or_an_opt_out(options):
    assert monitoring_checks.judge("box", ONE, ONE_SETTINGS, options) == []


def test_an_open_prometheus_names_the_opt_out_and_the_address():
    [found] = monitoring_checks.judge("box", ONE, ONE_SETTINGS, {"prometheus_host": "0.0.0.0"})
    assert "listens on 0.0.0.0" in found["message"]
    assert "monitoring_prometheus_allow_unauthenticated" in found["fix"]


def test_prometheus_auth_concerns_only_the_monitoring_host():
    assert monitoring_checks.judge("gpu", TWO, TWO_SETTINGS, {"prometheus_host": "0.0.0.0"}) == []


def test_grafana_options_concern_only_the_monitoring_host():
    assert monitoring_checks.judge("gpu", TWO, TWO_SETTINGS, {"grafana_source": "apt_repo"}) == []


def test_problems_of_the_scraped_layout_are_reported_once_on_the_monitoring_host():
    # decode left on loopback: Prometheus on mon cannot reach it
    topology = build_topology({"gpu": {"ansible_host": "10.0.0.21",
                                       "sglang_decode_instances": [{"name": "decode", "port": 30002}]},
                               "mon": {"ansible_host": "10.0.0.5"}},
                              {"sglang_decode": ["gpu"], "monitoring": ["mon"]}, defaults=TOPOLOGY_DEFAULTS)
    problems = monitoring_checks.judge("mon", topology, TWO_SETTINGS)
    assert [(p["host"], p["variable"]) for p in problems] == [("gpu", "sglang_decode_instances[decode].host")]
    assert monitoring_checks.judge("gpu", topology, TWO_SETTINGS) == []
