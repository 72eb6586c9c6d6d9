# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Judge a partition test: a pd_load.py run during which the traffic between the prefill and the decode hosts was
dropped (nftables) from ``--cut`` to ``--healed`` (epoch seconds).

Passes when
  - the partition bit: at least one request failed;
  - every failed request failed with an error answer (a 5xx or a stream's error event), none by the client's timeout
    or a cut connection, and within ``--fail-bound`` seconds of its start (SGLang's PD timeouts, not the router's
    request timeout);
  - no request at all took longer than the partition plus ``--fail-bound`` (nothing hung);
  - no request started later than ``--settle`` seconds after the heal failed.
Figures: sent, failed (by class), the longest failed request, the longest request, and the time from the heal until
serving again (the start of the first request after the heal from which on every request succeeded).

    python tests/load/partition_report.py --load load.json --cut 1767261234.5 --healed 1767261264.5 \\
        --fail-bound 30 --settle 20 [--json verdict.json]

Exit status 1 when the run does not pass; the report is printed either way.
"""
import argparse
import json
import sys

ANSWERED = ("stream_error",)  # a stream the router answered with an error event


def answered(record):
    """A failure the client was told about: an HTTP error status or a stream's error event."""
    return record["failure"] in ANSWERED or record["failure"].startswith("http_5")


def verdict(result, cut, healed, fail_bound, settle):
    """``result``: pd_load's run_load() result. Returns {"passed", "violations", "figures", "lines"}."""
    records = result["records"]
    failed = [r for r in records if r["failure"]]
    took = [r["end"] - r["start"] for r in records]
    violations = []
    if not failed:
        violations.append("no request failed: the partition did not bite")
    for r in failed:
        where = "request %d (%s, started %+.1f s from the cut)" % (
            r["index"], "stream" if r["stream"] else "non-streaming", r["start"] - cut)
        if not answered(r):
            violations.append("%s failed without an error answer: %s %s" % (where, r["failure"], r["detail"][:160]))
        if r["end"] - r["start"] > fail_bound:
            violations.append("%s failed after %.1f s (bound %.0f s)" % (where, r["end"] - r["start"], fail_bound))
        if r["start"] > healed + settle:
            violations.append("%s failed, %.1f s after the heal (settle %.0f s): %s"
                              % (where, r["start"] - healed, settle, r["detail"][:160]))
    longest_bound = (healed - cut) + fail_bound
    if took and max(took) > longest_bound:
        violations.append("a request took %.1f s (bound: the partition plus %.0f s = %.0f s)"
                          % (max(took), fail_bound, longest_bound))
    after = sorted((r for r in records if r["start"] >= healed), key=lambda r: r["start"])
    serving = None
    for i, r in enumerate(after):
        if all(not x["failure"] for x in after[i:]):
            serving = r["start"] - healed
            break
    classes = {}
    for r in failed:
        classes[r["failure"]] = classes.get(r["failure"], 0) + 1
    figures = {
        "sent": len(records),
        "failed": len(failed),
        "failed_by_class": classes,
        "in_window": sum(1 for r in records if cut <= r["start"] < healed),
        "longest_failed_s": round(max((r["end"] - r["start"] for r in failed), default=0.0), 1),
        "longest_request_s": round(max(took, default=0.0), 1),
        "partition_s": round(healed - cut, 1),
        "serving_again_after_heal_s": None if serving is None else round(serving, 1),
        "failed_after_heal": sum(1 for r in failed if r["start"] >= healed),
    }
    if serving is None:
        violations.append("never served again after the heal: the last request after it failed, or none was sent")
    lines = [
        "partition of %.1f s: %d requests, %d failed %s (%d sent in the window, %d of the failed after the heal)"
        % (figures["partition_s"], figures["sent"], figures["failed"], json.dumps(classes), figures["in_window"],
           figures["failed_after_heal"]),
        "longest failed request %.1f s (bound %.0f s); longest request %.1f s"
        % (figures["longest_failed_s"], fail_bound, figures["longest_request_s"]),
        "serving again %s after the heal" % ("never" if serving is None else "%.1f s" % serving),
    ]
    for r in failed[:3]:
        lines.append("  e.g. %s: %s" % (r["failure"], r["detail"][:200]))
    lines += ["VIOLATION: " + v for v in violations]
    lines.append("passed" if not violations else "failed")
    return {"passed": not violations, "violations": violations, "figures": figures, "lines": lines}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", required=True, help="pd_load.py --json output")
    parser.add_argument("--cut", type=float, required=True, help="epoch seconds the drop began")
    parser.add_argument("--healed", type=float, required=True, help="epoch seconds the drop ended")
    parser.add_argument("--fail-bound", type=float, required=True, help="seconds a failed request may take")
    parser.add_argument("--settle", type=float, required=True, help="seconds after the heal failures may still start")
    parser.add_argument("--json", dest="json_path", default="", help="write the verdict here")
    args = parser.parse_args(argv)
    with open(args.load, encoding="utf-8") as handle:
        result = json.load(handle)
    report = verdict(result, args.cut, args.healed, args.fail_bound, args.settle)
    print("\n".join(report["lines"]))
    if args.json_path:
        with open(args.json_path, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=1)
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
