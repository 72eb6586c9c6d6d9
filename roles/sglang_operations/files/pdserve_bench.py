# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A bounded serving benchmark through the PD router, measured the way SGLang's bench_serving measures.

For each concurrency level, ``requests`` chat completions with synthetic prompts (random words, a unique prefix
each, so no prefix cache helps) of ``input_len`` words and ``max_tokens=output_len`` are sent by ``concurrency``
asyncio workers (aiohttp, which sglang-router brings; no thread per request). Token counts come from the answers'
``usage`` (``stream_options.include_usage`` when streaming). Per level it reports requests/s, input and output
tokens/s over the level's wall time, and TTFT (first content or reasoning delta), ITL (gaps between later deltas)
and end-to-end latency at p50, p90 and p99, in milliseconds; failed requests are counted, not timed.

    python pdserve_bench.py --url http://127.0.0.1:30001 --model deepseek-v4-flash \\
        --concurrency 1 8 64 --input-len 512 --output-len 256 --json bench.json --csv bench.csv

The API key, when the router has one, is read from a file (``--api-key-file``, mode 0600; the role writes it in the
run's private directory), or for a run by hand from the environment (PDSERVE_BENCH_API_KEY), never the command line.
A failed request is reported with its HTTP status and the start of its error body (``HTTP 401: ...``), after the
table. Only the standard library and aiohttp; the pure functions below are what the tests check.
"""
import argparse
import asyncio
import csv
import io
import json
import os
import random
import ssl
import sys
import time

try:
    import aiohttp
except ImportError:  # the pure functions work without it
    aiohttp = None

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar papa quebec "
         "romeo sierra tango uniform victor whiskey xray yankee zulu amber basalt cobalt dune ember fjord granite "
         "harbor island jasper kelp lagoon meadow nickel opal prairie quartz river summit tundra umber valley willow "
         "yarrow zenith").split()
PERCENTILES = (50, 90, 99)
COLUMNS = (["concurrency", "requests", "failed", "duration_s", "requests_per_s", "input_tokens_per_s",
            "output_tokens_per_s"] + ["%s_p%d_ms" % (m, p) for m in ("ttft", "itl", "e2e") for p in PERCENTILES])


def percentile(values, pct):
    """Linear interpolation between closest ranks (numpy's default); None for no values."""
    data = sorted(values)
    if not data:
        return None
    rank = (len(data) - 1) * pct / 100.0
    low = int(rank)
    high = min(low + 1, len(data) - 1)
    return data[low] + (data[high] - data[low]) * (rank - low)


def prompt(rng, words, index):
    """A synthetic prompt of ``words`` words with a unique prefix (request ``index``)."""
    body = " ".join(rng.choice(WORDS) for dummy in range(max(0, words - 2)))
    return "[%d %08x] %s" % (index, rng.getrandbits(32), body)


def summarize(concurrency, records, duration):
    """One level's figures from its request records: {ok, start, first, chunks (times), end, prompt_tokens,
    completion_tokens}."""
    good = [r for r in records if r["ok"]]
    ttft = [(r["first"] - r["start"]) * 1000.0 for r in good if r.get("first") is not None]
    itl = []
    for record in good:
        times = record.get("chunks") or []
        itl.extend((b - a) * 1000.0 for a, b in zip(times, times[1:]))
    e2e = [(r["end"] - r["start"]) * 1000.0 for r in good]
    duration = max(duration, 1e-9)
    row = {
        "concurrency": concurrency,
        "requests": len(good),
        "failed": len(records) - len(good),
        "duration_s": round(duration, 3),
        "requests_per_s": round(len(good) / duration, 3),
        "input_tokens_per_s": round(sum(r.get("prompt_tokens") or 0 for r in good) / duration, 2),
        "output_tokens_per_s": round(sum(r.get("completion_tokens") or 0 for r in good) / duration, 2),
    }
    for name, values in (("ttft", ttft), ("itl", itl), ("e2e", e2e)):
        for pct in PERCENTILES:
            value = percentile(values, pct)
            row["%s_p%d_ms" % (name, pct)] = None if value is None else round(value, 2)
    errors = sorted(set(r.get("error") or "" for r in records if not r["ok"]))
    row["errors"] = [e for e in errors if e][:5]
    return row


def _cell(value):
    return "-" if value is None else ("%g" % value if isinstance(value, float) else str(value))


def table(rows):
    """A fixed-width table: one line per concurrency level."""
    heads = ["C", "ok", "fail", "req/s", "in tok/s", "out tok/s"] + [
        "%s p%d" % (m.upper(), p) for m in ("ttft", "itl", "e2e") for p in PERCENTILES]
    keys = ["concurrency", "requests", "failed", "requests_per_s", "input_tokens_per_s", "output_tokens_per_s"] + [
        "%s_p%d_ms" % (m, p) for m in ("ttft", "itl", "e2e") for p in PERCENTILES]
    cells = [heads] + [[_cell(row.get(k)) for k in keys] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(heads))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(line, widths)) for line in cells]
    return "\n".join(lines[:1] + ["  ".join("-" * w for w in widths)] + lines[1:]) + "\n(latencies in ms)"


def to_csv(rows):
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(dict((k, "" if row.get(k) is None else row.get(k)) for k in COLUMNS))
    return out.getvalue()


def request_body(model, text, output_len, stream, ignore_eos):
    body = {"model": model, "messages": [{"role": "user", "content": text}], "max_tokens": output_len,
            "temperature": 0, "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    if ignore_eos:
        body["ignore_eos"] = True
    return body


def http_error(status, body):
    """``HTTP 401: <the start of the body, on one line>``: what a failed request is reported as."""
    text = " ".join((body or b"").decode("utf-8", "replace").split())
    return "HTTP %s: %s" % (status, text[:200]) if text else "HTTP %s" % status


def error_lines(rows):
    """What failed, per level: its distinct errors (HTTP status and body, or the client's exception)."""
    lines = []
    for row in rows:
        for error in row.get("errors") or []:
            lines.append("failed at C=%s: %s" % (row["concurrency"], error))
    return lines


def api_key(path=None):
    """The router's key: from ``path`` (a file of the key alone), else PDSERVE_BENCH_API_KEY, else None."""
    if path:
        with open(path) as handle:
            return handle.read().strip() or None
    return os.environ.get("PDSERVE_BENCH_API_KEY") or None


def read_event(data, record, now):
    """Fold one SSE data payload into ``record`` (times of content deltas, usage, errors)."""
    if data == "[DONE]":
        record["done"] = True
        return
    try:
        event = json.loads(data)
    except ValueError:
        record["error"] = "unparsable event"
        return
    if isinstance(event, dict) and event.get("error"):
        record["error"] = "error event: %s" % str(event["error"])[:100]
        return
    for choice in event.get("choices") or []:
        delta = choice.get("delta") or {}
        if delta.get("content") or delta.get("reasoning_content") or delta.get("tool_calls"):
            if record.get("first") is None:
                record["first"] = now
            record["chunks"].append(now)
    usage = event.get("usage")
    if isinstance(usage, dict):
        record["prompt_tokens"] = usage.get("prompt_tokens")
        record["completion_tokens"] = usage.get("completion_tokens")


async def one(session, url, headers, body, timeout):
    record = {"ok": False, "start": time.perf_counter(), "first": None, "chunks": [], "done": False}
    try:
        async with session.post(url, json=body, headers=headers, timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
            if resp.status != 200:
                record["error"] = http_error(resp.status, await resp.read())
            elif body["stream"]:
                buffer = b""
                async for chunk in resp.content.iter_any():
                    now = time.perf_counter()
                    buffer += chunk
                    while b"\n\n" in buffer:
                        block, buffer = buffer.split(b"\n\n", 1)
                        for line in block.decode("utf-8", "replace").splitlines():
                            if line.startswith("data:"):
                                read_event(line[5:].strip(), record, now)
                if not record["done"] and not record.get("error"):
                    record["error"] = "stream without [DONE]"
            else:
                answer = await resp.json(content_type=None)
                record["first"] = time.perf_counter()
                usage = answer.get("usage") or {}
                record["prompt_tokens"] = usage.get("prompt_tokens")
                record["completion_tokens"] = usage.get("completion_tokens")
                if not answer.get("choices"):
                    record["error"] = "no choices"
    except (aiohttp.ClientError, asyncio.TimeoutError, ValueError) as exc:
        record["error"] = "%s: %s" % (type(exc).__name__, str(exc)[:100])
    record["end"] = time.perf_counter()
    record["ok"] = not record.get("error") and record.get("completion_tokens") is not None
    if not record["ok"] and not record.get("error"):
        record["error"] = "no usage in the answer"
    return record


def tls_context(ca_file):
    """An https:// router is verified against its CA (the stack's or the operator's), not the system's store; True is
    aiohttp's default (verify against the system's store)."""
    return ssl.create_default_context(cafile=ca_file) if ca_file else True


async def level(args, concurrency, rng, offset):
    url = args.url.rstrip("/") + "/v1/chat/completions"
    headers = {"Content-Type": "application/json"}
    key = args.key
    if key:
        headers["Authorization"] = "Bearer %s" % key
    count = args.requests or max(4 * concurrency, 16)
    bodies = [request_body(args.model, prompt(rng, args.input_len, offset + i), args.output_len, args.stream,
                           args.ignore_eos) for i in range(count)]
    queue = asyncio.Queue()
    for body in bodies:
        queue.put_nowait(body)
    records = []
    connector = aiohttp.TCPConnector(limit=concurrency, ssl=tls_context(args.ca_file))
    async with aiohttp.ClientSession(connector=connector) as session:
        async def worker():
            while not queue.empty():
                body = queue.get_nowait()
                records.append(await one(session, url, headers, body, args.timeout))
        started = time.perf_counter()
        await asyncio.gather(*(worker() for dummy in range(concurrency)))
        duration = time.perf_counter() - started
    return summarize(concurrency, records, duration), count


async def run(args):
    rng = random.Random(args.seed)
    rows = []
    offset = 0
    for concurrency in args.concurrency:
        row, count = await level(args, concurrency, rng, offset)
        offset += count
        rows.append(row)
        print("C=%d: %d ok, %d failed, %.2f req/s, %.1f output tok/s%s" % (
            concurrency, row["requests"], row["failed"], row["requests_per_s"], row["output_tokens_per_s"],
            ("; " + row["errors"][0]) if row["errors"] else ""), file=sys.stderr)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--url", required=True, help="the router, e.g. http://127.0.0.1:30001")
    parser.add_argument("--model", required=True, help="the served model name")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--requests", type=int, default=0, help="requests per level (default: 4 x concurrency, at least 16)")
    parser.add_argument("--input-len", type=int, default=512, help="prompt length in words")
    parser.add_argument("--output-len", type=int, default=256, help="max_tokens of each request")
    parser.add_argument("--stream", dest="stream", action="store_true", default=True)
    parser.add_argument("--no-stream", dest="stream", action="store_false")
    parser.add_argument("--ignore-eos", action="store_true", help="ask for exactly output-len tokens (SGLang's ignore_eos)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds one request may take")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="write the configuration and the levels here")
    parser.add_argument("--csv", help="write one row per level here")
    parser.add_argument("--api-key-file", help="a file holding the router's API key (else PDSERVE_BENCH_API_KEY)")
    parser.add_argument("--ca-file", help="the CA file an https:// router's certificate is verified against")
    args = parser.parse_args(argv)
    args.key = api_key(args.api_key_file)
    if aiohttp is None:
        parser.error("aiohttp is missing: run this with the router's Python (sglang-router brings aiohttp)")
    rows = asyncio.run(run(args))
    config = dict((k, v) for k, v in vars(args).items() if k not in ("json", "csv", "key", "api_key_file", "ca_file"))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"config": config, "levels": rows}, handle, indent=2)
    if args.csv:
        with open(args.csv, "w") as handle:
            handle.write(to_csv(rows))
    print(table(rows))
    for line in error_lines(rows):
        print(line)
    return 1 if any(r["failed"] for r in rows) or not all(r["requests"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
