# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The router failover's judge (tests/load/failover_report.py)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "load"))

import failover_report  # noqa: E402  pylint: disable=wrong-import-position

KILL = 1000.0


def record(index, start, end, failure="", answered=None, retries=0, stream=True):
    return {"index": index, "start": start, "end": end, "failure": failure, "detail": "", "stream": stream,
            "answered": answered if answered is not None else (0.0 if failure else start + 0.1),
            "connect_retries": retries}


def test_only_requests_in_flight_may_fail_and_a_new_one_must_be_answered():
    result = {"records": [record(0, 998.0, 999.0), record(1, 999.5, 1000.2, "stream_cut"),
                          record(2, 1000.1, 1002.5, answered=1001.3, retries=6), record(3, 1001.5, 1002.0)]}
    out = failover_report.verdict(result, KILL)
    assert out["passed"], out["lines"]
    assert out["figures"] == {"sent": 4, "failed": 1, "in_flight_at_kill": 1, "serving_again_after_s": 1.3,
                              "most_connect_retries": 6}


def test_a_request_sent_after_the_kill_that_failed_is_a_violation():
    result = {"records": [record(0, 999.0, 1000.5, "stream_cut"), record(1, 1000.5, 1003.0, "connect", retries=20),
                          record(2, 1003.5, 1004.0)]}
    out = failover_report.verdict(result, KILL)
    assert not out["passed"] and "started 0.50 s after the kill" in out["violations"][0]


def test_no_answer_after_the_kill_is_a_violation():
    out = failover_report.verdict({"records": [record(0, 998.0, 999.0), record(1, 999.5, 1000.2, "stream_cut")]}, KILL)
    assert not out["passed"] and out["figures"]["serving_again_after_s"] is None
