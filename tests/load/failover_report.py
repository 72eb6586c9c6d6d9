# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Judge a router failover: a pd_load.py run (with --connect-retry) through the routers' virtual address, during which
the router holding the address was killed.

The run passes when
  - every failed request reached the killed router: it started before the router's process was gone (``--gone``, the
    time its exit had closed its sockets, measured on its host) and ended after the kill. SIGKILL is not instant: a
    connection the kernel accepted into the dying process's listen queue is reset when the process exits, as it would
    be for any client. A request started after the process was gone finds the port closed (refused, retried) or the
    address moved, and must succeed;
  - some request started after the kill succeeded (the address moved and the other router served).

It prints the figures: requests sent and failed, those in flight at the kill, how long the process took to die, and
how long after the kill a new request was first answered (its status line came).

    python tests/load/failover_report.py --load load.json --kill 1767261234.5 [--gone 1767261234.52] [--json v.json]

Exit status 1 when the run does not pass; the report is printed either way.
"""
import argparse
import json
import sys


def verdict(result, kill, gone=None):
    """``result``: pd_load's run_load() result; ``kill``: epoch seconds of the signal; ``gone``: when the killed
    process had exited (default: ``kill``). Returns {"passed", "violations", "figures", "lines"}."""
    gone = kill if gone is None else max(gone, kill)
    records = result["records"]
    in_flight = [r for r in records if r["start"] <= kill <= r["end"]]
    failed = [r for r in records if r["failure"]]
    dying = [r for r in failed if kill < r["start"] <= gone]
    violations = ["request %d (%s) started %.2f s after the kill (%.2f s after the router was gone) and failed: %s %s"
                  % (r["index"], "stream" if r["stream"] else "plain", r["start"] - kill, r["start"] - gone,
                     r["failure"], r["detail"][:120])
                  for r in failed if r["start"] > gone]
    violations += ["request %d failed before the kill: %s" % (r["index"], r["failure"]) for r in failed if r["end"] < kill]
    after = [r for r in records if r["start"] > kill and not r["failure"]]
    if not after:
        violations.append("no request sent after the kill succeeded: the address did not move, or nobody served it")
    answered = min((r.get("answered") or r["end"]) for r in after) - kill if after else None
    figures = {"sent": len(records), "failed": len(failed), "in_flight_at_kill": len(in_flight),
               "failed_while_dying": len(dying), "dying_s": round(gone - kill, 3),
               "serving_again_after_s": round(answered, 2) if answered is not None else None,
               "most_connect_retries": max([r.get("connect_retries", 0) for r in records] or [0])}
    lines = ["failover: %(sent)d requests, %(failed)d failed, %(in_flight_at_kill)d in flight on the killed router"
             % figures,
             "failover: the killed process was gone %(dying_s).3f s after the signal; %(failed_while_dying)d request(s)"
             " reached it meanwhile and failed" % figures,
             "failover: a new request was answered %s after the kill (up to %d refused connections retried)"
             % ("%.2f s" % answered if answered is not None else "never", figures["most_connect_retries"])]
    lines += ["VIOLATION: %s" % v for v in violations]
    return {"passed": not violations, "violations": violations, "figures": figures, "lines": lines}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", required=True, help="pd_load.py --json output")
    parser.add_argument("--kill", type=float, required=True, help="when the router was killed (epoch seconds)")
    parser.add_argument("--gone", type=float, default=None,
                        help="when the killed process had exited, its sockets closed (epoch seconds; default --kill)")
    parser.add_argument("--json", dest="json_path", default="", help="write the verdict here")
    args = parser.parse_args(argv)
    with open(args.load, encoding="utf-8") as handle:
        result = json.load(handle)
    out = verdict(result, args.kill, args.gone)
    for line in out["lines"]:
        print(line)
    if args.json_path:
        with open(args.json_path, "w", encoding="utf-8") as handle:
            json.dump(out, handle)
    return 0 if out["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
