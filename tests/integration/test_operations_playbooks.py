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
from test_rolling_drain import SLOW, Load

pytestmark = pytest.mark.integration
KEY = "roll-key-3f9c"
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
                        ANSIBLE_CALLBACKS_ENABLED="pdserve.sglang.restart_plan", ANSIBLE_NOCOLOR="1",
                        ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
        self.systemctl("start", *units)
        for mode in self.servers:
            for _name, emu in self.servers[mode]:
                stack.Emulator.wait_healthy(emu, 60)
        self.router = stack.Router(prefill=[(e.url, e.bootstrap_port) for _n, e in self.servers["prefill"]],
                                   decode=[e.url for _n, e in self.servers["decode"]], args=["--api-key", KEY])
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
            "sglang_model_served_name": stack.MODEL, "sglang_router_wait_timeout": 60, "sglang_server_wait_timeout": 60,
            "sglang_roll_router_timeout": 30, "sglang_roll_drain_timeout": 30,
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
        assert "%s (%s on pdserve-roll): drain" % (name, name.split("-")[0]) in out
        assert "sglang-%s.service on pdserve-roll: restarted (rolling restart)" % name in out
    assert "served " in out and "during the roll" in out
    assert KEY not in out, "the router's API key was printed"


def test_a_single_worker_is_refused_then_restarted_in_place_on_request(local_stack):
    pd = local_stack(prefill=1, decode=2)
    before = pd.pids()
    rc, out = pd.playbook("rolling_restart.yml", "-e", '{"sglang_roll_instances": ["prefill-0"]}')
    assert rc != 0 and "prefill-0 is the only prefill worker" in out, out[-4000:]
    assert pd.pids() == before
    rc, out = pd.playbook("rolling_restart.yml", "-e", '{"sglang_roll_instances": ["prefill-0"], "sglang_roll_plain_restart": true}')
    assert rc == 0, out[-8000:]
    assert "restarted in place" in out and "expect an outage of about" in out
    assert pd.pids()["sglang-prefill-0.service"] != before["sglang-prefill-0.service"]
    assert pd.pids()["sglang-decode-0.service"] == before["sglang-decode-0.service"]
