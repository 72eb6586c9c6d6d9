# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""tests/load/hang_report.py: what a hung-server test accepts and what it rejects."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "load"))

import hang_report  # noqa: E402  pylint: disable=wrong-import-position

D = "http://d:30002"


def rec(index, stream, start, end, failure=""):
    return {"index": index, "client": 0, "stream": stream, "start": start, "end": end,
            "status": 200 if not failure else 502, "done": stream and not failure, "failure": failure, "detail": ""}


def result(records, back=True):
    # stopped at 110, marked down at 120, continued at 150, healthy again at 150.5
    events = [{"t": 100.0, "url": D, "healthy": True}, {"t": 120.0, "url": D, "healthy": False}]
    if back:
        events.append({"t": 150.5, "url": D, "healthy": True})
    return {"started": 100.0, "records": records, "events": events}


def test_requests_caught_by_the_stop_are_counted_and_the_run_passes():
    records = [rec(0, False, 109.0, 151.0), rec(1, True, 115.0, 152.0), rec(2, False, 121.0, 122.0),
               rec(3, True, 101.0, 102.0)]
    out = hang_report.verdict(result(records), D, 110.0, 150.0)
    assert out["passed"], out["violations"]
    assert out["figures"]["marked_down_s"] == 10.0
    assert out["figures"]["back_after_sigcont_s"] == 0.5
    assert out["figures"]["caught"] == 2 and out["figures"]["caught_longest_s"] == 42.0
    assert out["figures"]["served_while_down"] == 1
    assert any(line.startswith("SIGSTOP http://d:30002 at 10.00 s: router marked it down +10.00 s, SIGCONT +40.00 s")
               for line in out["lines"])


def test_failure_after_the_mark_and_a_lost_plain_request_fail():
    records = [rec(0, False, 109.0, 151.0, "http_502"), rec(1, True, 125.0, 126.0, "stream_cut")]
    out = hang_report.verdict(result(records), D, 110.0, 150.0)
    assert not out["passed"]
    assert any(v.startswith("lost a non-streaming request #0") for v in out["violations"])
    assert any(v.startswith("request #1 started 5.00 s after the router marked") for v in out["violations"])


def test_worker_never_taken_back_fails():
    out = hang_report.verdict(result([rec(0, False, 101.0, 102.0)], back=False), D, 110.0, 150.0)
    assert out["violations"] == ["the router did not take %s back" % D]


def test_command_line(tmp_path, capsys):
    load = tmp_path / "load.json"
    load.write_text(json.dumps(result([rec(0, False, 121.0, 122.0)])))
    assert hang_report.main(["--load", str(load), "--stopped", D + "=110", "--continued", D + "=150",
                             "--json", str(tmp_path / "v.json")]) == 0
    assert "passed: the router routed around the hung worker" in capsys.readouterr().out
    assert json.loads((tmp_path / "v.json").read_text())["figures"]["stopped_s"] == 40.0
