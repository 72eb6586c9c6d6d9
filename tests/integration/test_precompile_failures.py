# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A DeepGEMM precompile that fails, on loopback: the role's units run from a stand-in SGLang venv under the fake
systemctl (tests/integration/fake_systemd.py, whose systemd-run runs the transient unit's command with its env file),
the stand-in's ``python -m sglang.compile_deep_gemm`` failing as the real tool does when it runs out of time: it waits
``--timeout`` and exits 1 with ``TimeoutError: DeepGEMM Kernels compilation timeout.`` (a cold compile longer than the
limit: the instance's own ``SGLANG_EMULATOR_COMPILE_TIME`` against ``sglang_server_precompile_timeout: 1``).

- First deploy: the play fails before any server starts, naming the instance and its tool's output; an instance whose
  precompile passed keeps its record.
- Upgrade of a layout with one worker of each type: the judge refuses to precompile (stop) a lone worker before
  anything moves, saying it is an outage and naming the opt-in.
- Upgrade: the drained worker whose precompile failed in the new venv goes back to its venv, serving and in the
  router, and the run fails naming the precompile and its output.
What systemd-run's sandbox and user do is the multihost scenario's (real systemd); here the protocol around them.
"""
import json
import os

import pytest
import yaml

import fake_systemd
import stack
from test_operations_playbooks import KEY, LocalStack, UnitStack, fake_venv

pytestmark = pytest.mark.integration
COLD = {"SGLANG_EMULATOR_COMPILE_TIME": "30"}
FAILING = {"sglang_server_precompile": "always", "sglang_server_precompile_timeout": 1}


class _NoRouter(object):
    """The router's ports for the inventory; the deploy never reaches it."""

    def __init__(self):
        self.port = stack.free_port()
        self.prometheus_port = stack.free_port()


class DeployStack(LocalStack):
    """One prefill and one decode instance as unit files the role will render, nothing running, no router."""

    def __init__(self, tmp):  # pylint: disable=super-init-not-called
        self.tmp = str(tmp)
        self.root = os.path.join(self.tmp, "venvs")
        self.units_dir = os.path.join(self.tmp, "units")
        self.conf = os.path.join(self.tmp, "etc")
        self.cache = os.path.join(self.tmp, "cache")
        for path in (self.root, self.units_dir, self.conf):
            os.makedirs(path)
        self.venv = fake_venv(self.root, "90.0.1", False, os.path.join(self.tmp, "wheels"))
        self.registry = os.path.join(self.tmp, "units.json")
        self.bin = fake_systemd.install(os.path.join(self.tmp, "bin"))
        self.servers = {"prefill": [("prefill-0", stack.Emulator("prefill"))], "decode": [("decode-0", stack.Emulator("decode"))]}
        units = dict(("sglang-%s.service" % n, {"unit_file": os.path.join(self.units_dir, "sglang-%s.service" % n),
                                                "cwd": self.tmp, "log": os.path.join(self.tmp, "%s.log" % n), "pid": 0})
                     for m in self.servers for n, _e in self.servers[m])
        with open(self.registry, "w") as handle:
            json.dump(units, handle)
        self.env = dict(os.environ, PATH=self.bin + os.pathsep + os.environ["PATH"], PDSERVE_FAKE_SYSTEMD=self.registry,
                        ANSIBLE_COLLECTIONS_PATH=os.path.join(stack.REPO, ".cache", "collections"), ANSIBLE_NOCOLOR="1",
                        ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
        self.router = _NoRouter()
        self.inventory = os.path.join(self.tmp, "hosts.yml")
        self.write_inventory()

    def write_inventory(self):
        LocalStack.write_inventory(self)
        with open(self.inventory) as handle:
            data = yaml.safe_load(handle)
        host = data["all"]["hosts"]["pdserve-roll"]
        host.update({
            "sglang_venv": self.venv, "sglang_install_version": "90.0.1", "sglang_venv_root": self.root,
            "sglang_server_unit_dir": self.units_dir, "sglang_server_config_dir": self.conf, "sglang_cache_root": self.cache,
            # An existing account the plan finds right as it is (home, nologin shell), so the play changes no user.
            "sglang_server_user": "daemon", "sglang_server_group": "daemon", "sglang_server_home": "/usr/sbin",
            "sglang_server_gpu_groups": [], "sglang_server_flag_check": "never", "sglang_server_preflight": False,
            "sglang_model_path": "/models/m", "sglang_server_numa_binding": "none",
            "sglang_server_env": {"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "1"},
        })
        host["sglang_prefill_instances"][0]["env"] = COLD
        for mode in ("prefill", "decode"):
            host["sglang_%s_instances" % mode][0]["dist_init_port"] = stack.free_port()
        with open(self.inventory, "w") as handle:
            yaml.safe_dump(data, handle)

    playbook = UnitStack.playbook

    def record(self, name):
        found = [os.path.join(d, "pdserve-precompile.json") for d, _s, _f in os.walk(self.cache)
                 if os.path.basename(d) == name]
        return [path for path in found if os.path.exists(path)]


def test_a_failed_precompile_on_first_deploy_fails_before_any_server_starts(tmp_path):
    pd = DeployStack(tmp_path)
    deploy = os.path.join(pd.tmp, "deploy.yml")
    with open(deploy, "w") as handle:
        yaml.safe_dump([{"hosts": "sglang_prefill:sglang_decode", "gather_facts": False, "tasks": [{
            "ansible.builtin.include_role": {"name": "pdserve.sglang.sglang_server"},
            "vars": dict(FAILING, sglang_server_modes=["prefill", "decode"])}]}], handle)
    rc, out = pd.playbook(deploy)
    print(out[-6000:])
    assert rc != 0
    flat = " ".join(out.split())
    assert ("DeepGEMM precompile of prefill-0 on pdserve-roll failed before its first start (the instances held back "
            "for it were not started): sglang.compile_deep_gemm failed (rc 1)") in flat, out[-6000:]
    assert "TimeoutError: DeepGEMM Kernels compilation timeout." in flat
    assert "journalctl -u sglang-precompile-prefill-0.service" in flat
    assert "decode-0: precompiled" in flat and "DeepGEMM precompile of decode-0" not in flat
    # Neither server started: the play stopped before run.yml. The decode's complete precompile is recorded (the next
    # run skips it), the prefill's is not (the next run compiles again).
    assert all(pid == 0 for pid in pd.pids().values()), pd.pids()
    assert os.path.exists(os.path.join(pd.units_dir, "sglang-prefill-0.service"))
    assert pd.record("prefill-0") == [] and len(pd.record("decode-0")) == 1
    with open(pd.record("decode-0")[0]) as handle:
        assert json.load(handle)["gpus"] == ["GPUs not read"]


class CachedUnitStack(UnitStack):
    """UnitStack with the compile caches under its own directory."""

    def write_inventory(self):
        super(CachedUnitStack, self).write_inventory()
        with open(self.inventory) as handle:
            data = yaml.safe_load(handle)
        data["all"]["hosts"]["pdserve-roll"]["sglang_cache_root"] = os.path.join(self.tmp, "cache")
        with open(self.inventory, "w") as handle:
            yaml.safe_dump(data, handle)

    def server_env(self):
        with open(self.inventory) as handle:
            return yaml.safe_load(handle)["all"]["hosts"]["pdserve-roll"]["sglang_server_env"]

    def healthy_workers(self):
        return sorted((w["worker_type"], w["url"]) for w in (self.router.workers() or {}).get("workers") or []
                      if w.get("is_healthy"))


def test_a_failed_precompile_in_an_upgrade_returns_the_worker_serving_and_fails_naming_it(tmp_path):
    pd = CachedUnitStack(tmp_path)
    try:
        pd.router.wait_healthy(60)
        extra = dict(FAILING, sglang_install_version="90.0.2", sglang_operations_upgrade_order="decode_first")
        # Every instance's env gains the emulator's cold compile time: the new venv's caches are cold, the old venv's
        # are warm from the servers' own first start, so only the precompile in the new venv runs out of time.
        extra["sglang_server_env"] = dict(pd.server_env(), **COLD)
        rc, out = pd.playbook("upgrade.yml", "-e", json.dumps(extra))
        print(out[-6000:])
        flat = " ".join(out.split())
        assert rc != 0
        assert "The upgrade stopped: decode-0 on pdserve-roll" in flat, out[-8000:]
        assert ('failed at "Fail naming each instance whose precompile failed": DeepGEMM precompile of decode-0 on '
                'pdserve-roll failed in %s, stopped before its start there' % pd.venvs["90.0.2"]) in flat
        assert "TimeoutError: DeepGEMM Kernels compilation timeout." in flat
        assert "journalctl -u sglang-precompile-decode-0.service" in flat
        # Back on its venv, in the router and serving; nothing else moved.
        assert pd.versions() == ["90.0.1"]
        assert pd.link("current") != pd.venvs["90.0.2"]
        decode = dict(pd.servers["decode"])["decode-0"]
        assert ("decode", decode.url) in pd.healthy_workers(), pd.router.workers()
        stack.Emulator.wait_healthy(decode, 30)
        assert KEY not in out
    finally:
        pd.stop()


def test_the_upgrade_judge_refuses_to_precompile_a_lone_worker_before_anything_moves(tmp_path):
    pd = CachedUnitStack(tmp_path, count=1)
    try:
        pd.router.wait_healthy(60)
        before = pd.pids()
        extra = {"sglang_server_precompile": "always", "sglang_install_version": "90.0.2",
                 "sglang_operations_upgrade_unvalidated_restart": True}
        rc, out = pd.playbook("upgrade.yml", "-e", json.dumps(extra))
        flat = " ".join(out.split())
        assert rc != 0
        assert ("decode-0 (decode), prefill-0 (prefill) on pdserve-roll: each the only worker of its type would stop "
                "for the DeepGEMM precompile in the new venv") in flat, out[-6000:]
        assert "an outage for as long as the compile takes" in flat
        assert "sglang_operations_upgrade_precompile_outage=true" in flat
        # Refused by the judge, before the routers, the install or any worker moved (upgrade order: decode first).
        assert pd.pids() == before and pd.versions() == ["90.0.1"]
    finally:
        pd.stop()
