#!/usr/bin/env python
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Rollout figures of the local inventory (a benchmark, not a test: it prints, it asserts nothing).

On a fresh systemd container (inventories/local, emulated servers with load delays of 20 s for
prefill and 30 s for decode, the real router) it measures:
  - cold rollout: `ansible-playbook site.yml` from nothing to a validated stack, and its overhead
    above the slowest model load (30 s). Prefill and decode load in parallel when the cold rollout
    takes less than the sum of both loads plus the overhead, and the units' start times are close;
  - idempotent rerun: the same command again (nothing changes, validation runs again);
  - router-only rerun: `--tags router` with a router-only change (the router restarts, servers stay).

Run from the repository root after scripts/setup.sh: `source scripts/env.sh; python benchmarks/rollout.py`.
The container is named pdserve-bench and removed at the end (--keep keeps it).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONTAINER = "pdserve-bench"
INVENTORY = os.path.join(ROOT, "inventories", "local")


def run(cmd, check=True):
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    elapsed = time.monotonic() - start
    if check and proc.returncode != 0:
        sys.stdout.write(proc.stdout[-6000:])
        raise SystemExit("failed (%s): %s" % (proc.returncode, " ".join(cmd)))
    return elapsed, proc.stdout


def playbook(extra_file, *args):
    return ["ansible-playbook", "-i", INVENTORY, "-e", "@" + extra_file, *args]


def unit_times():
    out = subprocess.run(
        ["podman", "exec", CONTAINER, "systemctl", "show", "-p", "Id", "-p", "ExecMainStartTimestampMonotonic",
         "-p", "MainPID", "sglang-prefill.service", "sglang-decode.service", "sglang-router.service"],
        stdout=subprocess.PIPE, text=True, check=True).stdout
    units = {}
    for block in out.strip().split("\n\n"):
        props = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        units[props["Id"]] = {"start_us": int(props.get("ExecMainStartTimestampMonotonic") or 0),
                              "pid": props.get("MainPID")}
    return units


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefill-delay", type=float, default=20.0)
    parser.add_argument("--decode-delay", type=float, default=30.0)
    parser.add_argument("--keep", action="store_true", help="keep the container")
    args = parser.parse_args()

    with open(os.path.join(INVENTORY, "group_vars", "all", "main.yml"), encoding="utf-8") as handle:
        local = yaml.safe_load(handle)
    prefill = [dict(i, env=dict(i.get("env") or {}, SGLANG_EMULATOR_LOAD_DELAY=str(args.prefill_delay)))
               for i in local["sglang_prefill_instances"]]
    decode = [dict(i, env=dict(i.get("env") or {}, SGLANG_EMULATOR_LOAD_DELAY=str(args.decode_delay)))
              for i in local["sglang_decode_instances"]]
    extra = {
        "ansible_host": CONTAINER,
        "pdserve_local_container": CONTAINER,
        "sglang_prefill_instances": prefill,
        "sglang_decode_instances": decode,
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(extra, handle)
        extra_file = handle.name
    slowest = max(args.prefill_delay, args.decode_delay)
    try:
        run(["podman", "rm", "-f", "-t", "0", CONTAINER], check=False)
        setup, _setup_output = run(playbook(extra_file, os.path.join(ROOT, "playbooks", "local_container.yml")))
        cold, out = run(playbook(extra_file, os.path.join(ROOT, "site.yml")))
        units = unit_times()
        ready = dict(re.findall(r"(sglang-\w+\.service) http://\S+ ready in ([\d.]+) s", out))
        rerun, out_rerun = run(playbook(extra_file, os.path.join(ROOT, "site.yml")))
        changed_rerun = re.search(r"changed=(\d+)", out_rerun.split("PLAY RECAP")[-1]).group(1)
        router_only, out_router = run(playbook(extra_file, os.path.join(ROOT, "site.yml"), "--tags", "router",
                                               "-e", "sglang_router_log_level=debug"))
        after = unit_times()
    finally:
        if not args.keep:
            run(["podman", "rm", "-f", "-t", "0", CONTAINER], check=False)
        os.unlink(extra_file)

    start_gap = abs(units["sglang-decode.service"]["start_us"] - units["sglang-prefill.service"]["start_us"]) / 1e6
    servers_kept = all(after[u]["pid"] == units[u]["pid"] for u in ("sglang-prefill.service", "sglang-decode.service"))
    print("load delays: prefill %.0f s, decode %.0f s (emulated)" % (args.prefill_delay, args.decode_delay))
    print("container setup (not part of the rollout): %.1f s" % setup)
    print("cold rollout (site.yml, to a validated stack): %.1f s; overhead above the slowest load: %.1f s"
          % (cold, cold - slowest))
    print("  prefill and decode units started %.1f s apart; sum of both loads would be %.0f s"
          % (start_gap, args.prefill_delay + args.decode_delay))
    print("  wait_ready (from the validate play's start): %s" % ", ".join("%s %s s" % kv for kv in sorted(ready.items())))
    print("idempotent rerun (site.yml again): %.1f s, changed=%s" % (rerun, changed_rerun))
    print("router-only rerun (--tags router, new log level): %.1f s; model servers kept their PIDs: %s"
          % (router_only, servers_kept))


if __name__ == "__main__":
    main()
