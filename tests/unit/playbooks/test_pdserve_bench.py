# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The benchmark client's pure functions: percentiles, stream folding, per-level figures, table and CSV."""
import csv
import http.server
import io
import json
import os
import random
import sys
import threading

import pytest

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


# --- failed requests say why; the key comes from a file ---------------------------------------------------------

class _Router(http.server.BaseHTTPRequestHandler):
    """A router on loopback that wants ``Bearer right-key`` and answers non-streaming chat."""

    def do_POST(self):  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Authorization") != "Bearer right-key":
            body, status = b'{"error": {"message": "Invalid API key",\n "type": "unauthorized"}}', 401
        else:
            body, status = json.dumps({"choices": [{"message": {"content": "ok"}}],
                                       "usage": {"prompt_tokens": 3, "completion_tokens": 1}}).encode(), 200
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def router():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Router)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d" % server.server_address[1]
    server.shutdown()
    server.server_close()


def _bench(router, tmp_path, key, capsys):
    key_file = tmp_path / "api-key"
    key_file.write_text(key + "\n")
    key_file.chmod(0o600)
    rc = bench.main(["--url", router, "--model", "m", "--concurrency", "2", "--requests", "4", "--no-stream",
                     "--input-len", "4", "--output-len", "1", "--api-key-file", str(key_file),
                     "--json", str(tmp_path / "b.json")])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.skipif(bench.aiohttp is None, reason="aiohttp is not installed")
def test_a_router_that_refuses_the_key_shows_401_and_its_body(router, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("PDSERVE_BENCH_API_KEY", raising=False)
    rc, out, err = _bench(router, tmp_path, "wrong-key", capsys)
    assert rc == 1
    line = 'failed at C=2: HTTP 401: {"error": {"message": "Invalid API key", "type": "unauthorized"}}'
    assert line in out.splitlines(), out
    assert "C=2: 0 ok, 4 failed" in err and "; HTTP 401: " in err
    # The key is never written into the results.
    assert "wrong-key" not in (tmp_path / "b.json").read_text() and "wrong-key" not in out + err


@pytest.mark.skipif(bench.aiohttp is None, reason="aiohttp is not installed")
def test_the_key_from_its_file_is_sent(router, tmp_path, capsys):
    rc, out, err = _bench(router, tmp_path, "right-key", capsys)
    assert rc == 0, out + err
    assert "failed at" not in out and "C=2: 4 ok, 0 failed" in err


def test_http_errors_on_one_line():
    assert bench.http_error(401, b"Unauthorized\n  key") == "HTTP 401: Unauthorized key"
    assert bench.http_error(502, b"") == "HTTP 502"
    assert bench.http_error(500, b"x" * 500) == "HTTP 500: " + "x" * 200


def test_an_https_router_is_verified_against_the_ca_file(tmp_path):
    import ssl  # pylint: disable=import-outside-toplevel
    from tls_support import TestCA  # pylint: disable=import-error,import-outside-toplevel
    ca = TestCA(tmp_path, "stack CA")
    assert bench.tls_context(None) is True
    context = bench.tls_context(ca.path)
    assert isinstance(context, ssl.SSLContext) and context.verify_mode == ssl.CERT_REQUIRED
    assert context.cert_store_stats()["x509_ca"] == 1
