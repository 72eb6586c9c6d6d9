# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The files each entry point of the monitoring role writes on each host of the shipped inventories, laid out on the
controller (files.yml): each with a kind the role knows, the collection's rules and Alertmanager's configuration
accepted by the real promtool and amtool, and what each host is asked to have before its installs are skipped."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring import files as monitoring_files
from monitoring_paths import ROOT

EVERYTHING = {"monitoring_alertmanager_enabled": True, "monitoring_grafana_source": "apt_repo",
              "monitoring_grafana_admin_password": "admin-s3cret",
              "monitoring_prometheus_client_auth": {"username": "grafana", "password": "client-s3cret"},
              "monitoring_node_exporter_web_config": {"basic_auth_users": {"prom": "$2y$10$hash"}},
              "monitoring_node_exporter_scrape_auth": {"basic_auth": {"username": "prom", "password": "scrape-s3cret"}}}


@pytest.fixture(scope="module")
def layout_roles(tmp_path_factory):
    """A roles path with the role "layout": its task (layout/main.yml) and, linked, the monitoring role's templates and
    files, so a template lookup finds them as in the role's own tasks (made here: the collection ships no links)."""
    role = tmp_path_factory.mktemp("roles") / "layout"
    (role / "tasks").mkdir(parents=True)
    shutil.copy(os.path.join(ROOT, "tests", "unit", "monitoring", "layout", "main.yml"), str(role / "tasks" / "main.yml"))
    for name in ("templates", "files"):
        os.symlink(os.path.join(ROOT, "roles", "monitoring", name), str(role / name))
    return str(role.parent)


def _layout(roles_path, inventory, extra=None):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_ROLES_PATH=roles_path)
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", os.path.join(ROOT, ".cache", "collections"))
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
            os.path.join(ROOT, "tests", "unit", "monitoring", "files.yml"), "-i", "inventories/%s" % inventory,
            "--tags", "files"]
    if extra:
        argv += ["-e", json.dumps(extra)]
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    hosts = json.loads(proc.stdout)["plays"][0]["tasks"][-1]["hosts"]
    return dict((host, result["msg"]) for host, result in hosts.items())


@pytest.fixture(scope="module")
def layouts(layout_roles):
    out = dict((inventory, _layout(layout_roles, inventory)) for inventory in ("local", "multinode", "blackwell"))
    out["everything"] = _layout(layout_roles, "local", EVERYTHING)
    return out


def _by_path(files):
    return dict((f["path"], f) for f in files)


def test_every_file_has_a_kind_the_role_knows(layouts):
    for inventory, hosts in layouts.items():
        for host, layout in hosts.items():
            for files in (layout["exporter_files"], layout["main_files"]):
                assert len(monitoring_files.managed(files)) == len(files), (inventory, host)


def test_the_local_host_is_asked_for_the_monitoring_packages_units_and_directories(layouts):
    local = layouts["local"]["pdserve-local"]
    assert local["exporter_specs"] == ["prometheus-node-exporter"]
    assert local["exporter_units"] == ["prometheus-node-exporter.service"]
    assert local["exporter_dirs"] == []
    assert local["main_specs"] == ["prometheus"]
    assert local["main_units"] == ["prometheus.service"]
    assert local["main_lines"] == [{"path": "/etc/apt/sources.list.d/pdserve-monitoring.list",
                                    "line": "deb [trusted=yes] file:/opt/pdserve/apt-monitoring ./"}]
    assert [f["path"] for f in local["main_files"]][:3] == [
        "/etc/default/prometheus", "/etc/prometheus/prometheus.yml", "/etc/prometheus/rules/pdserve.rules.yml"]
    assert [f["kind"] for f in local["main_files"]].count("dashboard") == 4
    assert local["local_url"] == "http://127.0.0.1:9090"


def test_gpu_hosts_get_the_gpu_exporter_files_and_the_router_only_the_node_exporter(layouts):
    multinode = layouts["multinode"]
    prefill = _by_path(multinode["gpu-prefill-1"]["exporter_files"])
    assert prefill["/etc/dcgm-exporter/pdserve-counters.csv"]["content"].startswith("#")
    dropin = prefill["/etc/systemd/system/nvidia-dcgm-exporter.service.d/pdserve.conf"]["content"]
    assert '"-a" "10.0.0.11:9400"' in dropin
    assert multinode["gpu-prefill-1"]["exporter_units"] == [
        "prometheus-node-exporter.service", "nvidia-dcgm-exporter.service"]
    assert multinode["gpu-prefill-1"]["exporter_specs"] == ["prometheus-node-exporter", "datacenter-gpu-manager-exporter"]
    assert list(_by_path(multinode["router-1"]["exporter_files"])) == ["/etc/default/prometheus-node-exporter"]
    assert multinode["gpu-prefill-1"]["main_files"] == []


def test_the_rule_files_pass_promtool(layouts, promtool, tmp_path):
    for inventory in ("local", "multinode", "blackwell"):
        for host, layout in layouts[inventory].items():
            for item in layout["main_files"]:
                if item["kind"] != "prometheus_rules":
                    continue
                path = tmp_path / ("%s-%s-%s" % (inventory, host, os.path.basename(item["path"])))
                path.write_text(item["content"])
                result = promtool("check", "rules", str(path))
                assert result.returncode == 0, result.stdout + result.stderr


def test_alertmanager_grafana_and_web_config_when_enabled(layouts, amtool, tmp_path):
    local = layouts["everything"]["pdserve-local"]
    files = _by_path(local["main_files"])
    path = tmp_path / "alertmanager.yml"
    path.write_text(files["/etc/prometheus/alertmanager.yml"]["content"])
    result = amtool("check-config", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "--web.listen-address=127.0.0.1:9093" in files["/etc/default/prometheus-alertmanager"]["content"]
    datasource = files["/etc/grafana/provisioning/datasources/pdserve.yml"]
    assert (datasource["group"], datasource["mode"]) == ("grafana", "0640")
    assert files["/etc/grafana/pdserve.env"]["kind"] == "grafana_provisioning"
    assert files["/etc/systemd/system/grafana-server.service.d/pdserve.conf"]["kind"] == "grafana_unit"
    assert sorted(local["secrets"]) == ["admin-s3cret", "client-s3cret", "scrape-s3cret"]
    assert local["main_specs"] == ["prometheus", "prometheus-alertmanager", "grafana"]
    assert local["main_units"] == ["prometheus.service", "prometheus-alertmanager.service", "grafana-server.service"]
    assert "/etc/systemd/system/grafana-server.service.d" in [d["path"] for d in local["main_dirs"]]
    exporter = _by_path(local["exporter_files"])
    assert exporter["/etc/prometheus/node-exporter-web.yml"]["mode"] == "0640"
    assert "--web.config.file=/etc/prometheus/node-exporter-web.yml" in \
        exporter["/etc/default/prometheus-node-exporter"]["content"]


def test_every_action_a_file_notifies_has_a_handler():
    import yaml
    with open(os.path.join(ROOT, "roles", "monitoring", "handlers", "main.yml"), encoding="utf-8") as handle:
        listens = set(h["listen"] for h in yaml.safe_load(handle))
    notified = set(a for actions, dummy in monitoring_files.KINDS.values() for a in actions)
    assert notified <= listens, sorted(notified - listens)
