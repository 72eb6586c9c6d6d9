# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The benchmark client's pure functions: percentiles, stream folding, per-level figures, table and CSV."""
import csv
import io
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "roles", "sglang_operations", "files"))
import pdserve_bench as bench  # noqa: E402


def test_percentile_interpolates_like_numpy():
    assert bench.percentile([], 50) is None
    assert bench.percentile([5], 99) == 5
    assert bench.percentile([1, 2, 3, 4], 50) == 2.5
    assert round(bench.percentile(list(range(1, 101)), 99), 2) == 99.01


def test_prompts_are_unique_and_of_the_asked_length():
    rng = random.Random(1)
    first, second = bench.prompt(rng, 20, 0), bench.prompt(rng, 20, 1)
    assert first != second and len(first.split()) == 20 and first.startswith("[0 ")


def test_stream_events_fold_into_times_usage_and_errors():
    record = {"first": None, "chunks": [], "done": False}
    bench.read_event('{"choices": [{"delta": {"role": "assistant", "content": ""}}]}', record, 1.0)
    bench.read_event('{"choices": [{"delta": {"reasoning_content": "Hm"}}]}', record, 1.5)
    bench.read_event('{"choices": [{"delta": {"content": "391"}}]}', record, 1.7)
    bench.read_event('{"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 2}}', record, 1.8)
    bench.read_event("[DONE]", record, 1.9)
    assert record["first"] == 1.5 and record["chunks"] == [1.5, 1.7] and record["done"]
    assert (record["prompt_tokens"], record["completion_tokens"]) == (12, 2)
    bench.read_event('{"error": {"message": "boom"}}', record, 2.0)
    assert record["error"].startswith("error event")


def test_a_level_in_figures():
    good = [{"ok": True, "start": 0.0, "first": 0.1 * i, "chunks": [0.1 * i, 0.1 * i + 0.02, 0.1 * i + 0.05],
             "end": 0.5 + 0.1 * i, "prompt_tokens": 100, "completion_tokens": 10} for i in range(1, 5)]
    bad = {"ok": False, "start": 0.0, "end": 1.0, "error": "HTTP 502"}
    row = bench.summarize(4, good + [bad], 2.0)
    assert (row["requests"], row["failed"], row["requests_per_s"]) == (4, 1, 2.0)
    assert (row["input_tokens_per_s"], row["output_tokens_per_s"]) == (200.0, 20.0)
    assert row["ttft_p50_ms"] == 250.0 and row["e2e_p50_ms"] == 750.0
    assert row["itl_p50_ms"] == 25.0 and row["errors"] == ["HTTP 502"]


def test_table_and_csv_have_one_row_per_level():
    rows = [bench.summarize(c, [{"ok": True, "start": 0, "first": 0.1, "chunks": [0.1], "end": 1.0,
                                 "prompt_tokens": 5, "completion_tokens": 5}], 1.0) for c in (1, 8)]
    text = bench.table(rows)
    assert text.splitlines()[0].split()[:6] == ["C", "ok", "fail", "req/s", "in", "tok/s"]
    assert len(text.splitlines()) == 5 and text.endswith("(latencies in ms)")
    parsed = list(csv.DictReader(io.StringIO(bench.to_csv(rows))))
    assert [r["concurrency"] for r in parsed] == ["1", "8"] and parsed[0]["itl_p50_ms"] == ""
    assert list(parsed[0]) == list(bench.COLUMNS)
