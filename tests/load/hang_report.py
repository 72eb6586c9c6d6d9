# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Judge a hung-server test: a pd_load.py run (with --watch-workers) during which one worker's processes were
stopped (SIGSTOP) and later continued (SIGCONT).

The crash test's rules hold (crash_report.verdict, the SIGSTOP in place of the kill): no non-streaming request lost,
failed streams only among those that started before the router marked the worker down, the worker marked down and
taken back. On top, for a hang:
  - none of the requests that started while the worker was marked down and still stopped failed (the router sends
    them to the other workers; how many there were is a figure: clients waiting on the stopped worker send nothing);
  - the requests that were in flight on the stopped worker are reported: how many, how long they waited (the
    router's request timeout does not end them; SIGCONT does), and how they ended.

    python tests/load/hang_report.py --load load.json --stopped http://h:30002=1767261234.5 \\
        --continued http://h:30002=1767261290.1 [--json verdict.json]

Exit status 1 when the run does not pass; the report is printed either way.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import crash_report  # noqa: E402  pylint: disable=wrong-import-position


def verdict(result, url, stopped, continued):
    """``result``: pd_load's run_load() result; the worker ``url`` was stopped at ``stopped`` and continued at
    ``continued`` (epoch seconds). Returns {"passed", "violations", "figures", "lines"}."""
    base = crash_report.verdict(result, [{"url": url, "t": stopped}], {url: continued})
    mark = base["kills"][0]
    down, up = mark["down"], mark["up"]
    records = result["records"]
    violations = list(base["violations"])
    # The crash report's own verdict and kill lines give way to the hang's below.
    dropped = ("VIOLATION", "passed", "kill -9", "  no failed", "  %d failed" % mark["failed"])
    lines = [line for line in base["lines"] if not line.startswith(dropped)]
    # The requests caught by the stop: in flight at the SIGSTOP, or sent before the router marked the worker down, and
    # still running at the SIGCONT (the others went to the healthy workers and ended in normal time).
    caught = [r for r in records if r["start"] < (down or continued) and r["end"] >= continued]
    served = [r for r in records if down is not None and down <= r["start"] and r["end"] < continued]
    late = [r for r in records if r["failure"] and down is not None and down <= r["start"] < continued]
    for record in late:
        violations.append("request #%d started %.2f s after the router marked %s down and failed: %s %s"
                          % (record["index"], record["start"] - down, url, record["failure"], record["detail"][:160]))

    def after(t, since):
        return "+%.2f s" % (t - since) if t is not None and since is not None else "never"

    figures = {
        "requests": len(records), "failed": sum(1 for r in records if r["failure"]),
        "marked_down_s": None if down is None else round(down - stopped, 2),
        "stopped_s": round(continued - stopped, 2),
        "back_after_sigcont_s": None if up is None else round(up - continued, 2),
        "served_while_down": len([r for r in served if not r["failure"]]),
        "caught": len(caught), "caught_failed": sum(1 for r in caught if r["failure"]),
        "caught_longest_s": round(max((r["end"] - r["start"] for r in caught), default=0.0), 2),
    }
    lines.append("SIGSTOP %s at %.2f s: router marked it down %s, SIGCONT %s, router took it back %s after SIGCONT"
                 % (url, stopped - result["started"], after(down, stopped), after(continued, stopped),
                    after(up, continued)))
    lines.append("  while marked down and stopped: %d requests served by the other workers, %d failed"
                 % (figures["served_while_down"], len(late)))
    lines.append("  caught by the stop (running until SIGCONT): %d requests, %d failed, the longest took %.1f s "
                 "(nothing but SIGCONT ended them: the router's request timeout is far longer)"
                 % (figures["caught"], figures["caught_failed"], figures["caught_longest_s"]))
    lines += ["VIOLATION: " + v for v in violations] or ["passed: the router routed around the hung worker and took it "
                                                         "back; no non-streaming request lost"]
    return {"passed": not violations, "violations": violations, "figures": figures, "lines": lines}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", required=True, help="pd_load.py --json output")
    parser.add_argument("--stopped", required=True, help="URL=epoch seconds of the SIGSTOP")
    parser.add_argument("--continued", required=True, help="URL=epoch seconds of the SIGCONT")
    parser.add_argument("--json", dest="json_path", default="", help="write the verdict here")
    args = parser.parse_args(argv)
    with open(args.load, encoding="utf-8") as handle:
        result = json.load(handle)
    (url, stopped), = crash_report._pairs([args.stopped])  # pylint: disable=protected-access
    (url_cont, continued), = crash_report._pairs([args.continued])  # pylint: disable=protected-access
    if url_cont != url:
        parser.error("--stopped and --continued name different workers (%s, %s)" % (url, url_cont))
    return crash_report.report(verdict(result, url, stopped, continued), args.json_path)


if __name__ == "__main__":
    sys.exit(main())
