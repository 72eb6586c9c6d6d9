#!/usr/bin/env python
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Rollout figures over SSH and over podman exec, with the goals of issue 12 beside them.

A benchmark, not a test: it prints, it asserts nothing. Model loads are emulated (tests/emulator):
20 s for prefill and 30 s for decode by default, so "above the slowest load" is the rollout's own
cost. Every ansible-playbook run is timed as a whole and profiled per task (ansible.posix's
profile_tasks callback); its recap counts are printed with it. Only figures of one run of this
script are compared: the machine's load changes them from run to run.

  connection  40 ping tasks to one container over SSH (ControlPersist, pipelining), podman exec,
              and the local connection: the cost of one task round trip.
  local       inventories/local (the whole stack in one container), once over SSH and once over
              podman exec (a fresh container each):
                full cold rollout   site.yml from an empty host; the install layer's own time apart
                idempotent rerun    site.yml again                          goal <= 15 s (SSH), changed=0
                --tags router       a router-only change, with validation  goal <= 8 s (SSH) + the router's
                                    own stop (smg drains 5 s, serving, before it closes its port)
                serving cold        site.yml on a host with the install layer done and no units
                                    yet                                     goal <= slowest load + 10 s
  multihost   inventories/multinode's layout on three containers over SSH (router, prefill,
              decode hosts): serving cold rollout of 1P1D, then of 4P4D (four prefill instances on
              the prefill host, four decode on the decode host)   goal: 4P4D <= 1.3 x 1P1D

The local idempotent rerun and serving cold rollout run --repeat times (3): their goals judge the median run.

Run from the repository root after scripts/setup.sh:
    source scripts/env.sh; python benchmarks/rollout.py [--parts connection local multihost] [--repeat 3]
Containers pdserve-bench-* and network pdserve-bench are removed at the end (--keep keeps them).
Nothing but loopback and these containers is contacted.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "platform"))

import ssh_stand  # noqa: E402  pylint: disable=wrong-import-position

sys.path.insert(0, os.path.join(ROOT, "tests", "emulator", "standin"))
import build_wheel  # noqa: E402  pylint: disable=wrong-import-position

NETWORK = "pdserve-bench"
LOCAL_INVENTORY = os.path.join(ROOT, "inventories", "local")
STAND_VARS = os.path.join(ROOT, "extensions", "molecule", "multihost", "inventory")
# Every run: SSH with ControlPersist and pipelining (podman's connection cannot pipeline), and a
# per-task profile.
ANSIBLE_ENV = {
    "ANSIBLE_PIPELINING": "True",
    "ANSIBLE_SSH_ARGS": "-o ControlMaster=auto -o ControlPersist=120s",
    "ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.profile_tasks",
    "PROFILE_TASKS_TASK_OUTPUT_LIMIT": "all",
    "PROFILE_TASKS_SORT_ORDER": "none",
    "ANSIBLE_FORCE_COLOR": "0",
}
GOALS = {"idempotent": 15.0, "router": 8.0, "serving_over_load": 10.0, "scale_ratio": 1.3}


class Run:
    """One timed ansible-playbook run: wall time, recap counts, per-task profile."""

    def __init__(self, label, seconds, output):
        self.label = label
        self.seconds = seconds
        self.output = output
        self.recap = recap_counts(output)
        self.tasks = task_profile(output)
        self.router_stop = 0.0  # --tags router: the router's own stop, from its journal

    def layer_seconds(self, role):
        return sum(t for name, t in self.tasks if name.startswith("pdserve.sglang.%s : " % role))

    def counts(self):
        return "ok=%(ok)d changed=%(changed)d skipped=%(skipped)d failed=%(failed)d" % self.recap


def recap_counts(output):
    totals = {"ok": 0, "changed": 0, "skipped": 0, "failed": 0, "unreachable": 0}
    for line in output.split("PLAY RECAP")[-1].splitlines():
        for key in totals:
            match = re.search(r"\b%s=(\d+)" % key, line)
            if match:
                totals[key] += int(match.group(1))
    return totals


def task_profile(output):
    """[(task name, seconds)] from profile_tasks' summary, in execution order."""
    summary = output.split("TASKS RECAP")[-1] if "TASKS RECAP" in output else ""
    return [(m.group(1), float(m.group(2))) for m in re.finditer(r"^(.+?) -+ ([0-9.]+)s$", summary, re.M)]


def ansible(label, inventory, playbook, extra=None, args=()):
    cmd = ["ansible-playbook", "-i", inventory]
    if extra:
        cmd += ["-e", "@" + extra]
    cmd += [playbook] + list(args)
    env = dict(os.environ, **ANSIBLE_ENV)
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          check=False)
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        sys.stdout.write(proc.stdout[-8000:])
        raise SystemExit("%s failed (%s): %s" % (label, proc.returncode, " ".join(cmd)))
    return Run(label, seconds, proc.stdout)


def podman(*args, check=True):
    return ssh_stand.run(["podman"] + list(args), check=check, timeout=300)


def put_standin(container, paths, wheels):
    """Test plumbing, not timed: what the multihost scenario's prepare.yml puts on a host: the stand-in
    SGLang wheel beside the machine wheelhouse's wheels (linked) in /opt/pdserve/stand-wheelhouse, and
    the inventory's paths."""
    podman("exec", container, "sh", "-c",
           "mkdir -p /opt/pdserve/stand-wheelhouse %s && find /opt/pdserve/wheelhouse -maxdepth 1 -type f "
           "-exec ln -sfn {} /opt/pdserve/stand-wheelhouse/ ';'" % " ".join(paths))
    for wheel in wheels:
        podman("cp", wheel, "%s:/opt/pdserve/stand-wheelhouse/" % container)


def put_emulator(container, paths):
    """Test plumbing, not timed: the emulator and the inventory's paths into a container."""
    podman("exec", container, "mkdir", "-p", "/opt/pdserve/emulator", *paths)
    for item in ("sglang_emulator.py", "sglemu"):
        podman("cp", os.path.join(ROOT, "tests", "emulator", item), "%s:/opt/pdserve/emulator/" % container)


def router_stop_seconds(container, since):
    """How long systemd waited for the router to stop in its last stop after ``since`` (epoch seconds): the router's
    own drain (smg keeps serving for min(grace / 2, 5 s) before it closes its port; sglang-router closes at once)."""
    out = podman("exec", container, "journalctl", "-u", "sglang-router", "-o", "short-unix", "--no-pager",
                 "--since", "@%d" % int(since)).stdout
    stopping, stopped = None, None
    for line in out.splitlines():
        match = re.match(r"^([0-9.]+) \S+ systemd\[1\]: (Stopping|Stopped) sglang-router", line)
        if match and match.group(2) == "Stopping":
            stopping = float(match.group(1))
        elif match and stopping is not None:
            stopped = float(match.group(1)) - stopping
    return stopped or 0.0


def remove_units(container):
    """Back to 'install layer done, no units yet' (not timed)."""
    podman("exec", container, "sh", "-c",
           "systemctl stop 'sglang-*' 2>/dev/null; rm -f /etc/systemd/system/sglang-*.service /etc/sglang/*.env; "
           "systemctl daemon-reload; systemctl reset-failed")


def write_json(directory, name, data):
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    return path


def with_delays(instances, delay):
    return [dict(i, env=dict(i.get("env") or {}, SGLANG_EMULATOR_LOAD_DELAY=str(delay))) for i in instances]


# ---- connection cost ----------------------------------------------------------------------------

def connection_part(work, state, count=40):
    playbook = os.path.join(work, "ping.yml")
    with open(playbook, "w", encoding="utf-8") as handle:
        yaml.safe_dump([{"name": "Ping", "hosts": "all", "gather_facts": False,
                         "tasks": [{"name": "ping %d" % i, "ansible.builtin.ping": {}} for i in range(count)]}],
                       handle)
    connections = {
        "ssh": ("pdserve-bench-ssh", {"ansible_connection": "ansible.builtin.ssh",
                                      "ansible_ssh_common_args": "-F %s/config" % state}),
        "podman exec": ("pdserve-bench-podman", {"ansible_connection": "containers.podman.podman"}),
        "local": ("localhost", {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}),
    }
    rows = []
    for name, (host, host_vars) in connections.items():
        path = os.path.join(work, "ping-%s.yml" % name.replace(" ", "-"))
        host_vars = dict({"ansible_python_interpreter": "/usr/bin/python3"}, **host_vars)
        with open(path, "w", encoding="utf-8") as handle:
            yaml.safe_dump({"all": {"hosts": {host: host_vars}}}, handle)
        run = ansible("%d pings (%s)" % (count, name), path, playbook)
        rows.append((name, run.seconds, run.seconds / count))
    print("\n== connection: %d ping tasks to one container" % count)
    for name, seconds, per_task in rows:
        print("  %-12s %6.1f s  %.2f s per task" % (name, seconds, per_task))
    return rows


# ---- local layout -------------------------------------------------------------------------------

def local_part(work, state, transport, args):
    container = "pdserve-bench-" + ("ssh" if transport == "ssh" else "podman")
    with open(os.path.join(LOCAL_INVENTORY, "group_vars", "all", "main.yml"), encoding="utf-8") as handle:
        local = yaml.safe_load(handle)
    extra = {
        "ansible_host": container,
        "pdserve_local_container": container,
        "sglang_prefill_instances": with_delays(local["sglang_prefill_instances"], args.prefill_delay),
        "sglang_decode_instances": with_delays(local["sglang_decode_instances"], args.decode_delay),
    }
    if transport == "ssh":
        extra.update({"ansible_connection": "ansible.builtin.ssh", "ansible_ssh_common_args": "-F %s/config" % state})
    extra_file = write_json(work, "local-%s.json" % transport, extra)
    router_extra = write_json(work, "router-%s.json" % transport, {"sglang_router_log_level": "debug"})
    put_emulator(container, [local["sglang_model_path"]])
    site = os.path.join(ROOT, "site.yml")
    runs = {"full": ansible("full cold rollout", LOCAL_INVENTORY, site, extra_file)}
    runs["idempotent_all"] = [ansible("idempotent rerun", LOCAL_INVENTORY, site, extra_file)
                              for _run in range(args.repeat)]
    since = time.time()
    runs["router"] = ansible("--tags router", LOCAL_INVENTORY, site, extra_file,
                             ["--tags", "router", "-e", "@" + router_extra])
    runs["router"].router_stop = router_stop_seconds(container, since)
    runs["serving_all"] = []
    for _run in range(args.repeat):
        remove_units(container)
        runs["serving_all"].append(ansible("serving cold rollout", LOCAL_INVENTORY, site, extra_file))
    # The goals are judged on the median run of each repeated figure.
    runs["idempotent"] = median_run(runs["idempotent_all"])
    runs["serving"] = median_run(runs["serving_all"])
    return runs


def median_run(runs):
    """The run with the median wall time (the upper one of an even count)."""
    return sorted(runs, key=lambda r: r.seconds)[len(runs) // 2]


# ---- multi-host stand ---------------------------------------------------------------------------

def stand_inventory(work, state, hosts, n, args, addresses=None):
    """inventories/multinode's layout (the multihost scenario's vars) with n prefill + n decode; ``addresses``
    ({container: address}, from ssh_stand.up) are the host firewall's peer addresses."""
    root = os.path.join(work, "mh-%d" % n)
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(os.path.join(STAND_VARS, "group_vars"), os.path.join(root, "group_vars"))
    os.makedirs(os.path.join(root, "host_vars"))
    router, prefill, decode = hosts
    with open(os.path.join(root, "hosts.yml"), "w", encoding="utf-8") as handle:
        yaml.safe_dump({"all": {
            "children": {"gpu_hosts": {"hosts": {prefill: None, decode: None}},
                         "sglang_prefill": {"hosts": {prefill: None}},
                         "sglang_decode": {"hosts": {decode: None}},
                         "sglang_router": {"hosts": {router: None}}},
            "vars": {"ansible_connection": "ansible.builtin.ssh", "ansible_ssh_common_args": "-F %s/config" % state,
                     "ansible_python_interpreter": "/usr/bin/python3"}}}, handle)
    shutil.copy(os.path.join(ROOT, "inventories", "multinode", "host_vars", "router-1.yml"),
                os.path.join(root, "host_vars", router + ".yml"))
    addresses = addresses or {}
    if router in addresses:
        with open(os.path.join(root, "host_vars", router + ".yml"), "a", encoding="utf-8") as handle:
            handle.write("sglang_firewall_host_addresses: [%s]\n" % addresses[router])
    for host, mode, base_port, bootstrap, dist_init, delay in (
            (prefill, "prefill", 30000, 8998, 30335, args.prefill_delay),
            (decode, "decode", 30002, None, 30435, args.decode_delay)):
        instances = []
        for i in range(n):
            inst = {"name": "%s-%d" % (mode, i), "numa_node": 0, "port": base_port + 10 * i,
                    "dist_init_port": dist_init + 10 * i, "env": {"SGLANG_EMULATOR_LOAD_DELAY": str(delay)}}
            if bootstrap:
                inst["bootstrap_port"] = bootstrap + i
            instances.append(inst)
        with open(os.path.join(root, "host_vars", host + ".yml"), "w", encoding="utf-8") as handle:
            yaml.safe_dump({"sglang_server_host": host, "sglang_%s_instances" % mode: instances,
                            "sglang_firewall_host_addresses": [addresses[host]] if host in addresses else []}, handle)
    return root


def multihost_part(work, state, args):
    hosts = ["pdserve-bench-mh-router", "pdserve-bench-mh-prefill", "pdserve-bench-mh-decode"]
    addresses = ssh_stand.up(state, NETWORK, hosts, image=args.image)
    with open(os.path.join(ROOT, "inventories", "multinode", "group_vars", "all", "model.yml"), encoding="utf-8") as h:
        model = yaml.safe_load(h)
    with open(os.path.join(STAND_VARS, "group_vars", "all", "stand.yml"), encoding="utf-8") as h:
        version = yaml.safe_load(h)["sglang_install_version"]
    wheels = [build_wheel.build(version, os.path.join(work, "standin-wheels"))]
    for host in hosts:
        put_standin(host, [model["sglang_model_path"], os.path.dirname(model["sglang_model_chat_template"])], wheels)
    for host in hosts[1:]:
        podman("exec", host, "touch", model["sglang_model_chat_template"])
    site = os.path.join(ROOT, "site.yml")
    runs = {}
    for n in (1, 4):
        inventory = stand_inventory(work, state, hosts, n, args, addresses)
        if n == 1:
            runs["full-1"] = ansible("1P1D full cold rollout", inventory, site)
        for host in hosts:
            remove_units(host)
        runs["serving-%d" % n] = ansible("%dP%dD serving cold rollout" % (n, n), inventory, site)
        runs["idempotent-%d" % n] = ansible("%dP%dD idempotent rerun" % (n, n), inventory, site)
    return runs


# ---- report -------------------------------------------------------------------------------------

def breakdown(run, top=8):
    by_layer = {}
    for name, seconds in run.tasks:
        layer = name.split(" : ")[0] if " : " in name else "plays' own tasks"
        by_layer[layer] = by_layer.get(layer, 0.0) + seconds
    lines = ["    %s (%.1f s, %d tasks): %s" % (run.label, run.seconds, len(run.tasks), ", ".join(
        "%s %.1f s" % (k.replace("pdserve.sglang.", ""), v) for k, v in sorted(by_layer.items(), key=lambda x: -x[1])))]
    for name, seconds in sorted(run.tasks, key=lambda x: -x[1])[:top]:
        lines.append("      %5.1f s  %s" % (seconds, name))
    return lines


def report_local(local, args):
    slowest = max(args.prefill_delay, args.decode_delay)
    print("\n== local layout (inventories/local, one container): SSH vs podman exec")
    print("  %-34s %9s %13s %7s   %s" % ("run", "SSH", "podman exec", "ratio", "goal (SSH)"))
    missed = []
    # The router's own stop (smg's drain, serving meanwhile) is not the collection's cost, as the emulated load is not.
    router_stop = local.get("ssh", {}).get("router") and local["ssh"]["router"].router_stop or 0.0
    goals = {"full": None, "idempotent": GOALS["idempotent"], "router": GOALS["router"] + router_stop,
             "serving": slowest + GOALS["serving_over_load"]}
    for key, label in (("full", "full cold rollout (empty host)"), ("serving", "serving cold rollout"),
                       ("idempotent", "idempotent rerun"), ("router", "--tags router (router change)")):
        ssh, pod = local.get("ssh", {}).get(key), local.get("podman", {}).get(key)
        goal = goals[key]
        verdict = ""
        if goal is not None and ssh is not None:
            verdict = "<= %.0f s: %s" % (goal, "met" if ssh.seconds <= goal else "MISSED by %.1f s" % (ssh.seconds - goal))
            if key == "idempotent" and ssh.recap["changed"]:
                verdict += "; changed=%d (goal: 0): MISSED" % ssh.recap["changed"]
            if ssh.seconds > goal or (key == "idempotent" and ssh.recap["changed"]):
                missed.append(ssh)
        print("  %-34s %8s %12s %7s   %s" % (
            label, "%.1f s" % ssh.seconds if ssh else "-", "%.1f s" % pod.seconds if pod else "-",
            "%.2fx" % (pod.seconds / ssh.seconds) if ssh and pod else "-", verdict))
    for transport in ("ssh", "podman"):
        for key in ("serving_all", "idempotent_all"):
            repeated = local.get(transport, {}).get(key) or []
            if len(repeated) > 1:
                print("    %-7s %-22s each run: %s (median %.1f s)" % (
                    transport, repeated[0].label, ", ".join("%.1f s" % r.seconds for r in repeated),
                    median_run(repeated).seconds))
    for transport in ("ssh", "podman"):
        for key in ("full", "serving", "idempotent", "router"):
            run = local.get(transport, {}).get(key)
            if run:
                print("    %-7s %-22s %s" % (transport, run.label, run.counts()))
    for transport in ("ssh", "podman"):
        runs = local.get(transport)
        if not runs:
            continue
        full = runs["full"]
        install = full.layer_seconds("sglang_install")
        print("  %s: full cold rollout %.1f s = install layer %.1f s + the rest %.1f s; serving cold rollout "
              "%.1f s = %.1f s above the slowest load (%.0f s)"
              % (transport, full.seconds, install, full.seconds - install, runs["serving"].seconds,
                 runs["serving"].seconds - slowest, slowest))
        print("  %s: --tags router ran the validation: %s; the router's own stop took %.1f s (goal: 8 s + that)" % (
            transport, "yes" if "chat through" in runs["router"].output else "no (no validate task has the router tag)",
            runs["router"].router_stop))
    return missed


def report_multihost(runs):
    print("\n== multi-host stand (router, prefill and decode hosts over SSH)")
    missed = []
    for key in ("full-1", "serving-1", "idempotent-1", "serving-4", "idempotent-4"):
        run = runs[key]
        extra = ""
        if key == "full-1":
            extra = " (install layer %.1f s)" % run.layer_seconds("sglang_install")
        print("  %-30s %7.1f s  %s%s" % (run.label, run.seconds, run.counts(), extra))
    ratio = runs["serving-4"].seconds / runs["serving-1"].seconds
    print("  4P4D / 1P1D serving cold rollout: %.2fx (goal <= %.1fx: %s)"
          % (ratio, GOALS["scale_ratio"], "met" if ratio <= GOALS["scale_ratio"] else "MISSED"))
    if ratio > GOALS["scale_ratio"]:
        missed += [runs["serving-1"], runs["serving-4"]]
    return missed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", default=["connection", "local", "multihost"],
                        choices=["connection", "local", "multihost"])
    parser.add_argument("--transports", nargs="+", default=["ssh", "podman"], choices=["ssh", "podman"])
    parser.add_argument("--prefill-delay", type=float, default=20.0)
    parser.add_argument("--decode-delay", type=float, default=30.0)
    parser.add_argument("--image", default=os.environ.get("PDSERVE_IMAGE", ssh_stand.IMAGE))
    parser.add_argument("--keep", action="store_true", help="keep the containers and the network")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of the local idempotent rerun and serving cold rollout; goals judge the median")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="pdserve-bench-")
    state = os.path.join(work, "ssh")
    started = time.monotonic()
    containers = []
    local, multihost, missed = {}, None, []
    try:
        if {"connection", "local"} & set(args.parts):
            containers += ["pdserve-bench-ssh", "pdserve-bench-podman"]
            ssh_stand.up(state, NETWORK, ["pdserve-bench-ssh"], image=args.image)
            ssh_stand.create_containers("none", ["pdserve-bench-podman"], image=args.image)
        if "connection" in args.parts:
            connection_part(work, state)
        if "local" in args.parts:
            for transport in args.transports:
                local[transport] = local_part(work, state, transport, args)
            missed += report_local(local, args)
        if "multihost" in args.parts:
            containers += ["pdserve-bench-mh-router", "pdserve-bench-mh-prefill", "pdserve-bench-mh-decode"]
            multihost = multihost_part(work, state, args)
            missed += report_multihost(multihost)
    finally:
        if not args.keep:
            ssh_stand.down(state, NETWORK, containers)
            shutil.rmtree(work, ignore_errors=True)
    print("\nload delays (emulated): prefill %.0f s, decode %.0f s; benchmark wall time %.0f s"
          % (args.prefill_delay, args.decode_delay, time.monotonic() - started))
    if missed:
        print("\nWhere the time went in the runs that missed a goal (per layer, then the slowest tasks):")
        for run in missed:
            for line in breakdown(run):
                print(line)


if __name__ == "__main__":
    main()
