# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""prometheus.yml and the rules rendered by the role for every shipped inventory, checked by the real promtool.

The role's render entry point runs on the controller only (-e ansible_connection=local): the example addresses
of inventories/blackwell and inventories/multinode are never contacted."""

import os
import subprocess
import sys

import pytest
import yaml

from monitoring_paths import ROOT

INVENTORIES = sorted(p for p in os.listdir(os.path.join(ROOT, "inventories"))
                     if os.path.isdir(os.path.join(ROOT, "inventories", p)))


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = {}
    for inventory in INVENTORIES:
        dest = str(tmp_path_factory.mktemp("render-" + inventory))
        env = dict(os.environ, ANSIBLE_NOCOLOR="1")
        env.setdefault("ANSIBLE_COLLECTIONS_PATH", os.path.join(ROOT, ".cache", "collections"))
        proc = subprocess.run(
            [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
             os.path.join(ROOT, "tests", "unit", "monitoring", "render.yml"), "-i", "inventories/%s" % inventory,
             "-e", "monitoring_render_dir=%s" % dest, "-e", "ansible_connection=local"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=180, check=False)
        assert proc.returncode == 0, proc.stdout
        out[inventory] = dest
    return out


def _config(rendered, inventory, host):
    path = os.path.join(rendered[inventory], host, "prometheus.yml")
    with open(path, encoding="utf-8") as handle:
        return path, yaml.safe_load(handle)


def _targets(config, job):
    return sorted(t for sc in config["scrape_configs"] if sc["job_name"] == job
                  for static in sc["static_configs"] for t in static["targets"])


@pytest.mark.parametrize("inventory", INVENTORIES)
def test_promtool_accepts_the_config_and_its_rules(rendered, inventory, promtool):
    hosts = os.listdir(rendered[inventory])
    assert hosts, "no monitoring host rendered for %s" % inventory
    for host in hosts:
        path, config = _config(rendered, inventory, host)
        result = promtool("check", "config", path)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "SUCCESS: 1 rule files found" in result.stdout
        for job in ("sglang-prefill", "sglang-decode"):
            relabel = [sc for sc in config["scrape_configs"] if sc["job_name"] == job][0]["metric_relabel_configs"]
            assert relabel[0]["replacement"] == "sglang:$1"


def test_multinode_scrapes_every_host_at_its_address(rendered):
    dummy_path, config = _config(rendered, "multinode", "router-1")
    assert _targets(config, "sglang-prefill") == ["10.0.0.11:30000", "10.0.0.11:30010"]
    assert _targets(config, "sglang-decode") == ["10.0.0.21:30002"]
    assert _targets(config, "sglang-router") == ["127.0.0.1:29000"]
    assert _targets(config, "node") == ["10.0.0.11:9100", "10.0.0.21:9100", "127.0.0.1:9100"]
    assert _targets(config, "gpu") == ["10.0.0.11:9400", "10.0.0.21:9400"]


def test_blackwell_scrapes_everything_on_loopback_and_expects_eight_gpus(rendered):
    dummy_path, config = _config(rendered, "blackwell", "blackwell")
    every = [t for sc in config["scrape_configs"] for s in sc["static_configs"] for t in s["targets"]]
    assert every and all(t.startswith("127.0.0.1:") for t in every), every
    with open(os.path.join(rendered["blackwell"], "blackwell", "rules", "pdserve.rules.yml"), encoding="utf-8") as h:
        rules = [r for g in yaml.safe_load(h)["groups"] for r in g["rules"]]
    missing = [r for r in rules if r["alert"] == "GPUMissing"]
    assert len(missing) == 1 and missing[0]["expr"].endswith("< 8") and missing[0]["labels"]["host"] == "blackwell"


def test_local_has_no_gpu_job(rendered):
    dummy_path, config = _config(rendered, "local", "pdserve-local")
    assert "gpu" not in [sc["job_name"] for sc in config["scrape_configs"]]
    assert _targets(config, "sglang-decode") == ["127.0.0.1:30002"]


def test_alertmanager_default_config_passes_amtool(tmp_path, amtool):
    with open(os.path.join(ROOT, "roles", "monitoring", "defaults", "main.yml"), encoding="utf-8") as handle:
        config = yaml.safe_load(handle)["monitoring_alertmanager_config"]
    path = tmp_path / "alertmanager.yml"
    path.write_text(yaml.safe_dump(config))
    result = amtool("check-config", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
