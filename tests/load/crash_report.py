# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Judge a crash test: a pd_load.py run (with --watch-workers) during which workers were killed.

For each kill (worker URL and time) it finds when the router marked that worker down and when it
took it back, from the load's record of ``GET /workers``. The run passes when
  - no non-streaming request failed (the router retries those on another pair);
  - every failed stream started before the router marked the killed worker down (streams in
    flight on a killed server, or sent to it before the router knew, cannot be saved), and ended
    after that kill;
  - the router marked every killed worker down, and took it back.

    python tests/load/crash_report.py --load load.json --kill http://h:30002=1767261234.5 \\
        [--restarted http://h:30002=1767261246.1] [--json verdict.json]

Exit status 1 when the run does not pass; the report is printed either way.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pd_load  # noqa: E402  pylint: disable=wrong-import-position


def _marks(events, url, after):
    """(down, up) times of the router's first 'not healthy' mark of ``url`` at or after ``after``
    and its next 'healthy' mark; None where it did not happen."""
    down = up = None
    for event in sorted((e for e in events if e["url"] == url), key=lambda e: e["t"]):
        if down is None:
            if event["t"] >= after and not event.get("healthy"):
                down = event["t"]
        elif event.get("healthy"):
            up = event["t"]
            break
    return down, up


def verdict(result, kills, restarted=None):
    """``result``: pd_load's run_load() result; ``kills``: [{"url", "t"}] in any order;
    ``restarted``: {url: t} when the unit was active again (reported only).
    Returns {"passed", "violations", "kills", "lines"}."""
    records, events = result["records"], result["events"]
    origin = result["started"]
    kills = sorted(kills, key=lambda k: k["t"])
    out = []
    for kill in kills:
        down, up = _marks(events, kill["url"], kill["t"])
        out.append({"url": kill["url"], "t": kill["t"], "down": down, "up": up,
                    "restarted": (restarted or {}).get(kill["url"]), "failed": []})
    violations = []
    for kill in out:
        if kill["down"] is None:
            violations.append("the router never marked %s down after its kill" % kill["url"])
        elif kill["up"] is None:
            violations.append("the router did not take %s back" % kill["url"])
    for record in records:
        if not record["failure"]:
            continue
        what = "%s request #%d (started %.2f s, ended %.2f s: %s %s)" % (
            "streaming" if record["stream"] else "non-streaming", record["index"], record["start"] - origin,
            record["end"] - origin, record["failure"], record["detail"][:160])
        if not record["stream"]:
            violations.append("lost a %s" % what)
            continue
        cause = [k for k in out if k["t"] <= record["end"]]
        if not cause:
            violations.append("a %s failed before any kill" % what)
            continue
        kill = cause[-1]
        kill["failed"].append(record)
        if kill["down"] is not None and record["start"] > kill["down"]:
            violations.append("a %s started %.2f s after the router marked %s down"
                              % (what, record["start"] - kill["down"], kill["url"]))

    lines = pd_load.format_report(pd_load.summarize(records, events), origin=origin)
    for kill in out:
        rel = kill["t"] - origin

        def after(t, base=kill["t"], digits=2):
            return "+%.*f s" % (digits, t - base) if t is not None else "never"

        # systemd gives the restart time in whole seconds
        lines.append("kill -9 %s at %.2f s: router marked it down %s, unit active again %s, router took it back %s"
                     % (kill["url"], rel, after(kill["down"]), after(kill["restarted"], digits=0), after(kill["up"])))
        if kill["failed"]:
            starts = [r["start"] - kill["t"] for r in kill["failed"]]
            classes = sorted(set(r["failure"] for r in kill["failed"]))
            lines.append("  %d failed stream(s) (%s), started %+.2f .. %+.2f s from the kill (router mark: %s)"
                         % (len(starts), ", ".join(classes), min(starts), max(starts), after(kill["down"])))
        else:
            lines.append("  no failed request")
        kill["failed"] = len(kill["failed"])
    lines += ["VIOLATION: " + v for v in violations] or ["passed: no non-streaming request lost, failed streams "
                                                         "only before the router marked the worker down"]
    return {"passed": not violations, "violations": violations, "kills": out, "lines": lines}


def _pairs(values):
    """['URL=T', ...] -> [(URL, T), ...]"""
    out = []
    for value in values or []:
        url, _sep, t = value.rpartition("=")
        out.append((url, float(t)))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", required=True, help="pd_load.py --json output")
    parser.add_argument("--kill", action="append", required=True, help="URL=epoch seconds of a kill -9")
    parser.add_argument("--restarted", action="append", help="URL=epoch seconds the unit was active again")
    parser.add_argument("--json", dest="json_path", default="", help="write the verdict here")
    args = parser.parse_args(argv)
    with open(args.load, encoding="utf-8") as handle:
        result = json.load(handle)
    kills = [{"url": url, "t": t} for url, t in _pairs(args.kill)]
    return report(verdict(result, kills, dict(_pairs(args.restarted))), args.json_path)


def report(out, json_path=""):
    """Print a verdict's lines, write it as JSON where asked; the exit status: 0 when it passed."""
    for line in out["lines"]:
        print(line)
    if json_path:
        with open(json_path, "w", encoding="utf-8") as handle:
            json.dump(out, handle)
    return 0 if out["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
