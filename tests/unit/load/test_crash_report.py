# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""tests/load/crash_report.py: what a crash test accepts and what it rejects."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "load"))

import crash_report  # noqa: E402  pylint: disable=wrong-import-position

D, P = "http://d:30002", "http://p:30000"


def rec(index, stream, start, end, failure=""):
    return {"index": index, "client": 0, "stream": stream, "start": start, "end": end,
            "status": 200 if not failure.startswith("http") else 502, "done": stream and not failure,
            "failure": failure, "detail": ""}


def result(records):
    # the decode is killed at 110, marked down at 113, back at 125; the prefill: 130, 133, 145
    events = [{"t": 100.0, "url": D, "healthy": True}, {"t": 100.0, "url": P, "healthy": True},
              {"t": 113.0, "url": D, "healthy": False}, {"t": 125.0, "url": D, "healthy": True},
              {"t": 133.0, "url": P, "healthy": False}, {"t": 145.0, "url": P, "healthy": True}]
    return {"started": 100.0, "records": records, "events": events}


KILLS = [{"url": P, "t": 130.0}, {"url": D, "t": 110.0}]


def test_streams_cut_before_the_mark_pass():
    records = [rec(0, False, 101, 102), rec(1, True, 109, 110.2, "stream_cut"),
               rec(2, True, 111.5, 112.4, "http_502"), rec(3, False, 111, 115),
               rec(4, True, 129.5, 130.1, "stream_cut")]
    out = crash_report.verdict(result(records), KILLS, {D: 121.0})
    assert out["passed"], out["violations"]
    decode, prefill = out["kills"]
    assert (decode["url"], decode["down"], decode["up"], decode["failed"]) == (D, 113.0, 125.0, 2)
    assert prefill["failed"] == 1
    assert ("kill -9 %s at 10.00 s: router marked it down +3.00 s, unit active again +11 s, "
            "router took it back +15.00 s" % D) in out["lines"]
    assert "  2 failed stream(s) (http_502, stream_cut), started -1.00 .. +1.50 s from the kill " \
           "(router mark: +3.00 s)" in out["lines"]
    assert out["lines"][-1].startswith("passed")


def test_lost_plain_request_and_late_stream_fail():
    records = [rec(0, False, 111, 112, "http_502"), rec(1, True, 114, 115, "stream_cut"),
               rec(2, True, 105, 106, "stream_cut")]
    out = crash_report.verdict(result(records), KILLS)
    assert not out["passed"]
    assert len(out["violations"]) == 3
    assert out["violations"][0].startswith("lost a non-streaming request #0")
    assert "started 1.00 s after the router marked %s down" % D in out["violations"][1]
    assert "failed before any kill" in out["violations"][2]


def test_worker_never_marked_down_or_never_back():
    data = result([])
    data["events"] = [e for e in data["events"] if not (e["url"] == P and e["t"] > 100)]
    data["events"] = [e for e in data["events"] if not (e["url"] == D and e["t"] == 125.0)]
    out = crash_report.verdict(data, KILLS)
    assert out["violations"] == ["the router did not take %s back" % D,
                                 "the router never marked %s down after its kill" % P]


def test_command_line(tmp_path, capsys):
    path = tmp_path / "load.json"
    path.write_text(json.dumps(result([rec(0, False, 101, 102)])))
    argv = ["--load", str(path), "--kill", "%s=110" % D, "--kill", "%s=130" % P, "--json", str(tmp_path / "v.json")]
    assert crash_report.main(argv) == 0
    assert json.loads((tmp_path / "v.json").read_text())["passed"] is True
    assert "passed" in capsys.readouterr().out
    path.write_text(json.dumps(result([rec(0, False, 111, 112, "timeout")])))
    assert crash_report.main(argv) == 1
