# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Judge a router failover: a pd_load.py run (with --connect-retry) through the routers' virtual address, during which
the router holding the address was killed.

The run passes when
  - every failed request was in flight on the killed router (started before the kill, ended after it): a request sent
    after the kill waits for the address to move and succeeds;
  - some request started after the kill succeeded (the address moved and the other router served).

It prints the figures: requests sent and failed, those in flight at the kill, and how long after the kill a new
request was first answered (its status line came).

    python tests/load/failover_report.py --load load.json --kill 1767261234.5 [--json verdict.json]

Exit status 1 when the run does not pass; the report is printed either way.
"""
import argparse
import json
import sys


def verdict(result, kill):
    """``result``: pd_load's run_load() result; ``kill``: epoch seconds. Returns {"passed", "violations", "figures",
    "lines"}."""
    records = result["records"]
    in_flight = [r for r in records if r["start"] <= kill <= r["end"]]
    failed = [r for r in records if r["failure"]]
    violations = ["request %d (%s) started %.2f s after the kill and failed: %s %s"
                  % (r["index"], "stream" if r["stream"] else "plain", r["start"] - kill, r["failure"], r["detail"][:120])
                  for r in failed if r["start"] > kill]
    violations += ["request %d failed before the kill: %s" % (r["index"], r["failure"]) for r in failed if r["end"] < kill]
    after = [r for r in records if r["start"] > kill and not r["failure"]]
    if not after:
        violations.append("no request sent after the kill succeeded: the address did not move, or nobody served it")
    answered = min((r.get("answered") or r["end"]) for r in after) - kill if after else None
    figures = {"sent": len(records), "failed": len(failed), "in_flight_at_kill": len(in_flight),
               "serving_again_after_s": round(answered, 2) if answered is not None else None,
               "most_connect_retries": max([r.get("connect_retries", 0) for r in records] or [0])}
    lines = ["failover: %(sent)d requests, %(failed)d failed, %(in_flight_at_kill)d in flight on the killed router"
             % figures,
             "failover: a new request was answered %s after the kill (up to %d refused connections retried)"
             % ("%.2f s" % answered if answered is not None else "never", figures["most_connect_retries"])]
    lines += ["VIOLATION: %s" % v for v in violations]
    return {"passed": not violations, "violations": violations, "figures": figures, "lines": lines}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", required=True, help="pd_load.py --json output")
    parser.add_argument("--kill", type=float, required=True, help="when the router was killed (epoch seconds)")
    parser.add_argument("--json", dest="json_path", default="", help="write the verdict here")
    args = parser.parse_args(argv)
    with open(args.load, encoding="utf-8") as handle:
        result = json.load(handle)
    out = verdict(result, args.kill)
    for line in out["lines"]:
        print(line)
    if args.json_path:
        with open(args.json_path, "w", encoding="utf-8") as handle:
            json.dump(out, handle)
    return 0 if out["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
