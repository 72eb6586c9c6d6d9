# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""tests/load/partition_report.py: what a partition test accepts and what it rejects."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "load"))

import partition_report  # noqa: E402  pylint: disable=wrong-import-position

CUT, HEALED = 110.0, 140.0


def rec(index, stream, start, end, failure="", detail=""):
    return {"index": index, "client": 0, "stream": stream, "start": start, "end": end,
            "status": 200 if failure in ("", "stream_error") else 500, "done": stream and not failure,
            "failure": failure, "detail": detail}


def judge(records):
    return partition_report.verdict({"records": records}, CUT, HEALED, 30.0, 20.0)


GOOD = [rec(0, False, 100.0, 101.0),
        rec(1, True, 112.0, 122.5, "stream_error", '{"message": "Decode transfer failed ... Losing connection"}'),
        rec(2, False, 111.0, 142.0),            # retried by the router until the heal
        rec(3, True, 141.0, 142.0), rec(4, False, 150.0, 151.0)]


def test_answered_fast_failures_and_serving_after_the_heal_pass_with_figures():
    out = judge(GOOD)
    assert out["passed"], out["violations"]
    fig = out["figures"]
    assert (fig["sent"], fig["failed"], fig["in_window"]) == (5, 1, 2)
    assert fig["longest_failed_s"] == 10.5 and fig["longest_request_s"] == 31.0
    assert fig["serving_again_after_heal_s"] == 1.0 and fig["failed_by_class"] == {"stream_error": 1}


@pytest.mark.parametrize("bad, words", [
    (rec(9, False, 112.0, 232.0, "timeout", "no complete answer within 120 s"), "without an error answer"),
    (rec(9, True, 112.0, 120.0, "stream_cut"), "without an error answer"),
    (rec(9, False, 112.0, 150.0, "http_500"), "failed after 38.0 s"),
    (rec(9, True, 165.0, 166.0, "stream_error"), "after the heal"),
    (rec(9, False, 100.0, 175.0), "a request took 75.0 s"),
])
def test_hangs_unanswered_or_late_failures_fail(bad, words):
    out = judge(GOOD + [bad])
    assert not out["passed"] and any(words in v for v in out["violations"]), out["violations"]


def test_a_partition_that_did_not_bite_fails():
    out = judge([rec(0, False, 100.0, 101.0), rec(1, False, 150.0, 151.0)])
    assert not out["passed"] and "did not bite" in out["violations"][0]


def test_never_serving_again_fails():
    out = judge(GOOD[:3] + [rec(5, True, 145.0, 146.0, "stream_error")])
    assert not out["passed"] and any("never served again" in v for v in out["violations"])
