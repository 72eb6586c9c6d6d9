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
    assert out["figures"] == {"sent": 4, "failed": 1, "in_flight_at_kill": 1, "failed_while_dying": 0, "dying_s": 0.0,
                              "serving_again_after_s": 1.3, "most_connect_retries": 6}


def test_a_request_sent_after_the_kill_that_failed_is_a_violation():
    result = {"records": [record(0, 999.0, 1000.5, "stream_cut"), record(1, 1000.5, 1003.0, "connect", retries=20),
                          record(2, 1003.5, 1004.0)]}
    out = failover_report.verdict(result, KILL)
    assert not out["passed"] and "started 0.50 s after the kill" in out["violations"][0]


def test_no_answer_after_the_kill_is_a_violation():
    out = failover_report.verdict({"records": [record(0, 998.0, 999.0), record(1, 999.5, 1000.2, "stream_cut")]}, KILL)
    assert not out["passed"] and out["figures"]["serving_again_after_s"] is None


def test_a_request_that_reached_the_dying_process_may_fail_one_after_it_was_gone_may_not():
    """SIGKILL takes a moment: a connection accepted into the dying router's listen queue is reset at its exit."""
    reset = record(1, 1000.004, 1000.02, "connect", stream=False)
    result = {"records": [reset, record(2, 1000.5, 1001.5, answered=1001.2, retries=3)]}
    out = failover_report.verdict(result, KILL, gone=1000.01)
    assert out["passed"], out["lines"]
    assert out["figures"]["failed_while_dying"] == 1 and out["figures"]["dying_s"] == 0.01
    late = record(3, 1000.02, 1000.03, "connect", stream=False)
    out = failover_report.verdict({"records": result["records"] + [late]}, KILL, gone=1000.01)
    assert not out["passed"] and "0.01 s after the router was gone" in out["violations"][0]


def test_without_a_gone_time_the_kill_is_the_bound():
    out = failover_report.verdict({"records": [record(1, 1000.004, 1000.02, "connect"),
                                               record(2, 1000.5, 1001.5)]}, KILL)
    assert not out["passed"] and "started 0.00 s after the kill" in out["violations"][0]
