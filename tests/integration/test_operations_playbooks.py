# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""playbooks/rolling_restart.yml for real on loopback: emulated servers as "units" of a fake systemctl, the real
router with an API key, a bounded load through it, ansible-playbook with a local connection.

What this proves without containers: the play's lockstep loop, the router calls with the key (never printed), the
idle wait, the restarts, the always-re-add, the per-worker report and the restart plan at the end of the run, the
refusal of a one-worker layout and the opt-in plain restart. The multi-host stand (molecule scenario multihost)
runs the same playbooks over SSH with systemd.
"""
import json
import os
import subprocess
import sys
import time

import pytest
import yaml

import fake_systemd
import stack
from ansible_collections.pdserve.sglang.plugins.module_utils.operations import venv_state
from test_rolling_drain import SLOW, Load

pytestmark = pytest.mark.integration
KEY = "roll-key-3f9c"
ADMIN_KEY = "roll-admin-key-8d21"
# The 2P2D roll and the upgrade/rollback cycle are what the multihost scenario's operations stages run with systemd
# over SSH (minutes on a loaded 2-core machine): here they run only on request, to work on the playbooks without
# containers. The lone-worker refusal and in-place restart are tested only here, so they always run.
FULL = pytest.mark.skipif(os.environ.get("PDSERVE_LOCAL_PLAYBOOK_TESTS") != "1",
                          reason="set PDSERVE_LOCAL_PLAYBOOK_TESTS=1 (the multihost scenario runs these playbooks)")
BIN = os.path.dirname(sys.executable)


class LocalStack(object):
    """Emulators registered as units of the fake systemctl, the real router, an inventory for them."""

    def __init__(self, tmp, prefill=2, decode=2):
        self.tmp = str(tmp)
        self.registry = os.path.join(self.tmp, "units.json")
        self.bin = fake_systemd.install(os.path.join(self.tmp, "bin"))
        self.servers = {"prefill": [], "decode": []}
        units = {}
        for mode, count in (("prefill", prefill), ("decode", decode)):
            for index in range(count):
                emu = stack.Emulator(mode, env=SLOW, args=["--api-key", KEY])
                name = "%s-%d" % (mode, index)
                units["sglang-%s.service" % name] = {
                    "cmd": emu.command(), "env": dict(stack.OFFLINE_ENV, **SLOW), "cwd": stack.REPO,
                    "log": os.path.join(self.tmp, "%s.log" % name), "pid": 0}
                self.servers[mode].append((name, emu))
        with open(self.registry, "w") as handle:
            json.dump(units, handle)
        self.env = dict(os.environ, PATH=self.bin + os.pathsep + os.environ["PATH"], PDSERVE_FAKE_SYSTEMD=self.registry,
                        ANSIBLE_COLLECTIONS_PATH=os.path.join(stack.REPO, ".cache", "collections"),
                        ANSIBLE_CALLBACKS_ENABLED=os.environ.get("PDSERVE_TEST_CALLBACKS", "pdserve.sglang.restart_plan"), ANSIBLE_NOCOLOR="1",
                        ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
        self.systemctl("start", *units)
        for mode in self.servers:
            for _name, emu in self.servers[mode]:
                stack.Emulator.wait_healthy(emu, 60)
        self.router = stack.Router(prefill=[(e.url, e.bootstrap_port) for _n, e in self.servers["prefill"]],
                                   decode=[e.url for _n, e in self.servers["decode"]], api_key=KEY,
                                   control_plane_api_key=ADMIN_KEY)
        self.router.start()
        self.inventory = os.path.join(self.tmp, "hosts.yml")
        self.write_inventory()

    def systemctl(self, *args):
        return subprocess.run([os.path.join(self.bin, "systemctl")] + list(args), env=self.env, check=True,
                              capture_output=True, text=True).stdout

    def pids(self):
        with open(self.registry) as handle:
            return dict((unit, entry["pid"]) for unit, entry in json.load(handle).items())

    def write_inventory(self):
        def instance(name, emu):
            item = {"name": name, "port": emu.port}
            if emu.mode == "prefill":
                item["bootstrap_port"] = emu.bootstrap_port
            return item
        host = {
            "ansible_connection": "local", "ansible_python_interpreter": sys.executable, "ansible_become": False,
            "sglang_prefill_instances": [instance(n, e) for n, e in self.servers["prefill"]],
            "sglang_decode_instances": [instance(n, e) for n, e in self.servers["decode"]],
            "sglang_router_host": "127.0.0.1", "sglang_router_port": self.router.port,
            "sglang_router_prometheus_port": self.router.prometheus_port, "sglang_router_api_key": KEY,
            "sglang_router_control_plane_api_key": ADMIN_KEY,
            "sglang_model_served_name": stack.MODEL, "sglang_router_wait_timeout": 60, "sglang_server_wait_timeout": 60,
            "sglang_operations_roll_router_timeout": 30, "sglang_operations_roll_drain_timeout": 30,
            "sglang_operations_roll_ready_timeout": 60,
        }
        groups = dict((g, {"hosts": {"pdserve-roll": None}}) for g in ("sglang_prefill", "sglang_decode", "sglang_router"))
        with open(self.inventory, "w") as handle:
            yaml.safe_dump({"all": {"hosts": {"pdserve-roll": host}, "children": groups}}, handle)

    def playbook(self, name, *args):
        cmd = [os.path.join(BIN, "ansible-playbook"), "playbooks/%s" % name, "-i", self.inventory] + list(args)
        started = time.monotonic()
        proc = subprocess.run(cmd, cwd=stack.REPO, env=self.env, capture_output=True, text=True, timeout=600, check=False)
        print("%s %s: rc=%s in %.1f s" % (name, " ".join(args), proc.returncode, time.monotonic() - started))
        return proc.returncode, proc.stdout + proc.stderr

    def stop(self):
        self.router.stop()
        subprocess.run([os.path.join(self.bin, "systemctl"), "stop"] + list(self.pids()), env=self.env, check=False)


@pytest.fixture
def local_stack(tmp_path):
    made = []

    def make(**kwargs):
        made.append(LocalStack(tmp_path, **kwargs))
        made[-1].router.wait_healthy(60)
        return made[-1]
    yield make
    for item in made:
        item.stop()


@FULL
def test_rolling_restart_of_2p2d_under_load(local_stack):
    pd = local_stack()
    before = pd.pids()
    with Load(pd.router.url, clients=6, api_key=KEY) as load:
        time.sleep(1)
        rc, out = pd.playbook("rolling_restart.yml")
        time.sleep(1)
    print(out[-6000:])
    assert rc == 0, out[-8000:]
    print("load: %d requests (%d streaming), %d failed" % (len(load.records), sum(r["stream"] for r in load.records),
                                                           len(load.failures())))
    assert load.records and load.failures() == [], load.failures()[:5]
    after = pd.pids()
    assert all(after[u] != before[u] for u in before), "every unit restarted once"
    for name in ("prefill-0", "prefill-1", "decode-0", "decode-1"):
        assert "%s (%s on pdserve-roll): drain" % (name, name.split("-", maxsplit=1)[0]) in out
        assert "sglang-%s.service on pdserve-roll: restarted (rolling restart)" % name in out
    assert "served " in out and "during the roll" in out
    assert KEY not in out and ADMIN_KEY not in out, "a router key was printed"


def test_a_single_worker_is_refused_then_restarted_in_place_on_request(local_stack):
    pd = local_stack(prefill=1, decode=2)
    before = pd.pids()
    rc, out = pd.playbook("rolling_restart.yml", "-e", '{"sglang_operations_roll_instances": ["prefill-0"]}')
    assert rc != 0 and "prefill-0 is the only prefill worker" in out, out[-4000:]
    assert pd.pids() == before
    rc, out = pd.playbook("rolling_restart.yml", "-e", '{"sglang_operations_roll_instances": ["prefill-0"], '
                                                       '"sglang_operations_roll_plain_restart": true}')
    assert rc == 0, out[-8000:]
    assert "restarted in place" in out and "expect an outage of about" in out
    assert pd.pids()["sglang-prefill-0.service"] != before["sglang-prefill-0.service"]
    assert pd.pids()["sglang-decode-0.service"] == before["sglang-decode-0.service"]


# ---- upgrade.yml and rollback.yml -------------------------------------------------------------------------------

STANDIN = os.path.join(stack.REPO, "tests", "emulator", "standin", "build_wheel.py")
VERSIONS = (("90.0.1", False), ("90.0.2", False), ("90.0.3", True))


def fake_venv(root, version, broken, wheels):
    """A real venv (no pip) holding the stand-in sglang wheel, which sees this test venv's packages (the emulator's
    web stack) through a .pth file instead of installing them; the molecule scenario builds complete ones."""
    import sysconfig
    import zipfile
    subprocess.run([sys.executable, STANDIN, "--version", version, "--out", wheels]
                   + (["--broken-tool-parser"] if broken else []), check=True, capture_output=True)
    venv = os.path.join(root, "sglang-%s" % version)
    # As the upgrade's install step does before it builds one: only recorded venvs are ever pruned.
    venv_state.record_created(root, venv)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    site = os.path.join(venv, "lib", "python%d.%d" % sys.version_info[:2], "site-packages")
    with zipfile.ZipFile(os.path.join(wheels, "sglang-%s-py3-none-any.whl" % version)) as wheel:
        wheel.extractall(site)
    with open(os.path.join(site, "pdserve-test-venv.pth"), "w") as handle:
        handle.write(sysconfig.get_paths()["purelib"] + "\n")
    return venv


class UnitStack(LocalStack):
    """LocalStack whose units are unit files the role renders, run from stand-in SGLang venvs."""

    def __init__(self, tmp, count=2):  # pylint: disable=super-init-not-called
        self.tmp = str(tmp)
        self.root = os.path.join(self.tmp, "venvs")
        self.units_dir = os.path.join(self.tmp, "units")
        self.conf = os.path.join(self.tmp, "etc")
        for path in (self.root, self.units_dir, self.conf):
            os.makedirs(path)
        self.wheels = os.path.join(self.tmp, "wheels")
        self.venvs = dict((v, fake_venv(self.root, v, b, self.wheels)) for v, b in VERSIONS)
        self.handmade = os.path.join(self.root, "my-venv")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", self.handmade], check=True)
        self.registry = os.path.join(self.tmp, "units.json")
        self.bin = fake_systemd.install(os.path.join(self.tmp, "bin"))
        self.servers = {"prefill": [], "decode": []}
        units = {}
        for mode in ("prefill", "decode"):
            for index in range(count):
                emu = stack.Emulator(mode)
                name = "%s-%d" % (mode, index)
                units["sglang-%s.service" % name] = {
                    "unit_file": os.path.join(self.units_dir, "sglang-%s.service" % name), "cwd": self.tmp,
                    "log": os.path.join(self.tmp, "%s.log" % name), "pid": 0}
                self.servers[mode].append((name, emu))
        with open(self.registry, "w") as handle:
            json.dump(units, handle)
        self.env = dict(os.environ, PATH=self.bin + os.pathsep + os.environ["PATH"], PDSERVE_FAKE_SYSTEMD=self.registry,
                        ANSIBLE_COLLECTIONS_PATH=os.path.join(stack.REPO, ".cache", "collections"),
                        ANSIBLE_CALLBACKS_ENABLED=os.environ.get("PDSERVE_TEST_CALLBACKS", "pdserve.sglang.restart_plan"), ANSIBLE_NOCOLOR="1",
                        ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
        self.router = stack.Router(prefill=[(e.url, e.bootstrap_port) for _n, e in self.servers["prefill"]],
                                   decode=[e.url for _n, e in self.servers["decode"]], api_key=KEY,
                                   control_plane_api_key=ADMIN_KEY)
        self.inventory = os.path.join(self.tmp, "hosts.yml")
        self.write_inventory()
        # The first deploy: the role renders every unit for venv 90.0.1 (what site.yml's server plays write).
        deploy = os.path.join(self.tmp, "deploy.yml")
        with open(deploy, "w") as handle:
            yaml.safe_dump([{"hosts": "sglang_prefill:sglang_decode", "gather_facts": False, "tasks": [{
                "ansible.builtin.include_role": {"name": "pdserve.sglang.sglang_server", "tasks_from": "switch"},
                "vars": {"sglang_server_switch_instances": [n for m in self.servers for n, _e in self.servers[m]],
                         "sglang_server_switch_write": True, "sglang_server_switch_flag_check": True}}]}], handle)
        rc, out = self.playbook(deploy)
        assert rc == 0, out[-4000:]
        self.systemctl("start", *units)
        for mode in self.servers:
            for _name, emu in self.servers[mode]:
                stack.Emulator.wait_healthy(emu, 60)
        self.router.start()

    def write_inventory(self):
        super(UnitStack, self).write_inventory()
        with open(self.inventory) as handle:
            data = yaml.safe_load(handle)
        host = data["all"]["hosts"]["pdserve-roll"]
        host.update({
            "sglang_venv": self.venvs["90.0.1"], "sglang_install_version": "90.0.1", "sglang_venv_root": self.root,
            "sglang_install_enabled": False, "sglang_server_unit_dir": self.units_dir,
            "sglang_server_config_dir": self.conf, "sglang_server_user": "root", "sglang_server_group": "root",
            # Where the operations read the units and env files: the shared directories (pdserve.sglang.sglang_defaults).
            "sglang_unit_dir": self.units_dir, "sglang_config_dir": self.conf,
            "sglang_model_path": "/models/m", "sglang_model_reasoning_parser": "deepseek-v4",
            "sglang_model_tool_call_parser": "deepseekv4", "sglang_server_numa_binding": "none",
            "sglang_server_extra_args": ["--log-level", "warning"],
            "sglang_server_env": dict(SLOW, HF_ENDPOINT="http://127.0.0.1:9", HF_HUB_OFFLINE="1"),
        })
        for mode in ("prefill", "decode"):
            for item, (_n, emu) in zip(host["sglang_%s_instances" % mode], self.servers[mode]):
                item["dist_init_port"] = stack.free_port()
        with open(self.inventory, "w") as handle:
            yaml.safe_dump(data, handle)

    def playbook(self, name, *args):
        path = name if os.path.isabs(name) else "playbooks/%s" % name
        cmd = [os.path.join(BIN, "ansible-playbook"), path, "-i", self.inventory] + list(args)
        started = time.monotonic()
        proc = subprocess.run(cmd, cwd=stack.REPO, env=self.env, capture_output=True, text=True, timeout=900, check=False)
        print("%s %s: rc=%s in %.1f s" % (os.path.basename(name), " ".join(args), proc.returncode, time.monotonic() - started))
        return proc.returncode, proc.stdout + proc.stderr

    def fingerprints(self):
        out = {}
        for name in os.listdir(self.conf):
            with open(os.path.join(self.conf, name)) as handle:
                out[name[:-4]] = dict(l.split("=", 1) for l in handle.read().splitlines() if l.startswith("PDSERVE_"))
        return out

    def versions(self):
        return sorted(set(f.get("PDSERVE_SGLANG", "").strip('"') for f in self.fingerprints().values()))

    def link(self, name):
        return os.path.realpath(os.path.join(self.root, name))


@FULL
def test_upgrade_passes_then_a_broken_version_rolls_back_then_rollback(tmp_path):
    pd = UnitStack(tmp_path)
    try:
        pd.router.wait_healthy(60)
        assert pd.versions() == ["90.0.1"]
        with Load(pd.router.url, clients=4, api_key=KEY) as load:
            rc, out = pd.playbook("upgrade.yml", "-e", "sglang_install_version=90.0.2")
            print(out[-5000:])
            assert rc == 0, out[-8000:]
            assert pd.versions() == ["90.0.2"]
            assert (pd.link("current"), pd.link("previous")) == (pd.venvs["90.0.2"], pd.venvs["90.0.1"])
            assert "fingerprint sglang 90.0.1 -> 90.0.2" in out and KEY not in out
            # The venvs the collection created that nothing uses are gone (here the unused 90.0.3); build it again.
            # A venv made by hand under the venv root stays.
            assert not os.path.exists(pd.venvs["90.0.3"])
            assert os.path.isfile(os.path.join(pd.handmade, "bin", "python"))
            fake_venv(pd.root, "90.0.3", True, pd.wheels)

            rc, out = pd.playbook("upgrade.yml", "-e", "sglang_install_version=90.0.3")
            print(out[-5000:])
            assert rc != 0 and "The upgrade stopped: decode-0" in out and "tools" in out, out[-8000:]
            assert pd.versions() == ["90.0.2"], "every instance is back on the venv it ran"
            assert (pd.link("current"), pd.link("previous")) == (pd.venvs["90.0.2"], pd.venvs["90.0.1"])

            rc, out = pd.playbook("rollback.yml")
            print(out[-3000:])
            assert rc == 0, out[-8000:]
            assert pd.versions() == ["90.0.1"]
            assert (pd.link("current"), pd.link("previous")) == (pd.venvs["90.0.1"], pd.venvs["90.0.2"])
            time.sleep(1)
        print("load: %d requests, %d failed" % (len(load.records), len(load.failures())))
        assert load.failures() == [], load.failures()[:5]
    finally:
        pd.stop()
