#!/usr/bin/env python
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Where the round trips of an idempotent rerun of site.yml go, per role and task (inventories/local over SSH).

The deterministic figure beside benchmarks/rollout.py's timings: the timing of a rerun changes with the machine's
load, the count of module calls does not. A benchmark: it prints, it asserts nothing.

    python benchmarks/round_trips.py up      # container, SSH, emulator, full rollout (about 2 minutes)
    python benchmarks/round_trips.py count   # site.yml again: per role the module calls (round trips to the host)
                                             # and the controller-side tasks (argument specs, asserts, includes)
    python benchmarks/round_trips.py down

Container pdserve-rt-local on network pdserve-rt; state (SSH key and config, the json output of each count) under
--state (default /tmp/pdserve-round-trips). Run under the molecule lock (docs/development.md). Only loopback and
this container are contacted.
"""

import argparse
import collections
import datetime
import json
import os
import subprocess
import sys
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "platform"))

import ssh_stand  # noqa: E402  pylint: disable=wrong-import-position

NETWORK, CONTAINER = "pdserve-rt", "pdserve-rt-local"
LOCAL = os.path.join(ROOT, "inventories", "local")
ENV = {"ANSIBLE_PIPELINING": "True", "ANSIBLE_SSH_ARGS": "-o ControlMaster=auto -o ControlPersist=120s",
       "ANSIBLE_FORCE_COLOR": "0"}
# Actions that run on the controller: no round trip to the host.
CONTROLLER = {"ansible.builtin." + name for name in (
    "set_fact", "assert", "debug", "fail", "include_tasks", "include_role", "import_tasks", "validate_argument_spec",
    "meta", "include_vars")}


def _extra(state):
    path = os.path.join(state, "extra.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"ansible_host": CONTAINER, "pdserve_local_container": CONTAINER,
                   "ansible_connection": "ansible.builtin.ssh", "ansible_ssh_common_args": "-F %s/config" % state},
                  handle)
    return path


def _play(state, callback=None):
    env = dict(os.environ, **ENV)
    if callback:
        env["ANSIBLE_STDOUT_CALLBACK"] = callback
    start = time.monotonic()
    proc = subprocess.run(["ansible-playbook", "-i", LOCAL, "-e", "@" + _extra(state), os.path.join(ROOT, "site.yml")],
                          cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    return proc, time.monotonic() - start


def up(state):
    ssh_stand.up(state, NETWORK, [CONTAINER])
    with open(os.path.join(LOCAL, "group_vars", "all", "main.yml"), encoding="utf-8") as handle:
        local = yaml.safe_load(handle)
    subprocess.run(["podman", "exec", CONTAINER, "mkdir", "-p", "/opt/pdserve/emulator", local["sglang_model_path"]],
                   check=True)
    for item in ("sglang_emulator.py", "sglemu"):
        subprocess.run(["podman", "cp", os.path.join(ROOT, "tests", "emulator", item),
                        CONTAINER + ":/opt/pdserve/emulator/"], check=True)
    proc, seconds = _play(state)
    print(proc.stdout[-2000:])
    print("full rollout: rc=%d, %.1f s" % (proc.returncode, seconds))


def _seconds(duration):
    if not duration.get("end"):
        return 0.0
    parse = datetime.datetime.fromisoformat
    return (parse(duration["end"].replace("Z", "+00:00")) - parse(duration["start"].replace("Z", "+00:00"))).total_seconds()


def _skipped(result):
    # Not the "skipped" key: serving_preflight returns its list of skipped checks under that name.
    if "skip_reason" in result or "skipped_reason" in result:
        return True
    return bool(result.get("results")) and all("skip_reason" in item for item in result["results"])


def report(data, seconds, label):
    roles = collections.OrderedDict()
    rows = []
    for play in data["plays"]:
        for task in play["tasks"]:
            name = task["task"]["name"]
            role = name.split(" : ")[0].replace("pdserve.sglang.", "") if " : " in name else "(plays' own tasks)"
            for result in task["hosts"].values():
                counts = roles.setdefault(role, collections.Counter())
                if _skipped(result):
                    counts["skipped"] += 1
                    continue
                remote = result.get("action") not in CONTROLLER
                counts["remote" if remote else "controller"] += 1
                counts["changed"] += bool(result.get("changed"))
                counts["centiseconds"] += int(100 * _seconds(task["task"]["duration"]))
                rows.append((remote, result.get("action"), name, _seconds(task["task"]["duration"])))
    print("%s: %.1f s, recap %s" % (label, seconds, json.dumps(data.get("stats", {}))))
    print("  %-22s %7s %11s %8s %8s %8s" % ("role", "remote", "controller", "skipped", "changed", "seconds"))
    total = collections.Counter()
    for role, counts in roles.items():
        total.update(counts)
        print("  %-22s %7d %11d %8d %8d %8.1f" % (
            role, counts["remote"], counts["controller"], counts["skipped"], counts["changed"], counts["centiseconds"] / 100.0))
    print("  %-22s %7d %11d %8d %8d %8.1f" % (
        "total", total["remote"], total["controller"], total["skipped"], total["changed"], total["centiseconds"] / 100.0))
    print("  module calls (round trips), in order:")
    for remote, action, name, task_seconds in rows:
        if remote:
            print("    %5.2f s  %-34s %s" % (task_seconds, action, name))


def count(state, label):
    proc, seconds = _play(state, callback="ansible.posix.json")
    with open(os.path.join(state, label + ".json"), "w", encoding="utf-8") as handle:
        handle.write(proc.stdout)
    if proc.returncode != 0 or "{" not in proc.stdout:
        print(proc.stdout[-4000:])
        raise SystemExit("site.yml failed (%d)" % proc.returncode)
    report(json.loads(proc.stdout[proc.stdout.index("{"):]), seconds, label)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["up", "count", "down"])
    parser.add_argument("--state", default="/tmp/pdserve-round-trips")
    parser.add_argument("--label", default="rerun", help="name of the saved json output of a count")
    args = parser.parse_args()
    os.makedirs(args.state, exist_ok=True)
    if args.action == "up":
        up(args.state)
    elif args.action == "count":
        count(args.state, args.label)
    else:
        ssh_stand.down(args.state, NETWORK, [CONTAINER])


if __name__ == "__main__":
    main()
