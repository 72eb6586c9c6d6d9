# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Bounded chat load through an OpenAI-compatible PD router, with a record of every request.

Clients send streaming and non-streaming ``/v1/chat/completions`` requests (asyncio + aiohttp,
one task per client, no thread per request) until the duration or the request count is used
up. Each request is recorded: start and end (epoch seconds, so events on other hosts of the
same clock line up), HTTP status, whether a stream ended with ``data: [DONE]``, and the failure
class. Optionally the router's ``GET /workers`` is polled meanwhile, so the report can say
when the router marked a worker down and up again. ``duration`` bounds the run; a test that
knows when it has seen enough ends it early with ``stop_file``.

A request fails when (class in brackets):
  - no answer: connection refused or reset before the status line [connect], the client's own
    timeout [timeout];
  - the status is not 200 [http_<status>];
  - a 200 stream ends without ``data: [DONE]`` [stream_cut], carries an ``error`` event
    [stream_error], or brings no content [empty];
  - a 200 non-streaming answer is not JSON or has no content, reasoning or tool call [empty].

Standard library and aiohttp only (aiohttp comes with sglang-router), so the file can be copied
to a router host and run with the router's Python. Used by the tests and the molecule scenarios:

    python tests/load/pd_load.py --url http://127.0.0.1:30001 --model deepseek-v4-flash \\
        --duration 30 --concurrency 8 --watch-workers --json /tmp/load.json

    import pd_load
    result = asyncio.run(pd_load.run_load(pd_load.LoadConfig(url=..., model=...)))
    print(pd_load.format_report(result["summary"]))
"""
import argparse
import asyncio
import dataclasses
import json
import os
import random
import ssl
import sys
import time

try:
    import aiohttp
except ImportError:  # the pure functions below work without it (unit tests, analysis)
    aiohttp = None

FAILURE_PAUSE = 0.1  # a client pauses after a failure, so refused connections do not spin


@dataclasses.dataclass
class LoadConfig:
    """What to send. ``duration`` and ``requests`` bound the run (whichever ends first; 0 = no
    bound of that kind, at least one must be set)."""
    url: str
    model: str
    duration: float = 30.0
    requests: int = 0
    concurrency: int = 8
    stream_ratio: float = 0.5
    max_tokens: int = 64
    thinking: bool = True
    timeout: float = 120.0
    api_key: str = ""
    admin_key: str = ""      # the router's control-plane key: GET /workers answers 401 to the client key
    watch_workers: bool = False
    watch_interval: float = 0.2
    seed: int = 0
    stop_file: str = ""      # the load ends early once this file exists (a test's "stop now")
    ca_file: str = ""        # an https:// router is verified against this CA (sglang_router_tls)
    # Retry a request whose connection was refused or found no route, for up to this many seconds from its start (0: no
    # retry). Nothing was sent, so a retry is safe: what OpenAI's clients do, and what clients of several routers behind
    # one address must do while the address moves.
    connect_retry: float = 0.0


@dataclasses.dataclass
class Record:
    index: int
    client: int
    stream: bool
    start: float
    end: float = 0.0
    status: int = 0          # 0: no HTTP answer
    done: bool = False       # the stream ended with data: [DONE] (non-streaming: always False)
    failure: str = ""        # "" when the request succeeded, else its class
    detail: str = ""
    connect_retries: int = 0  # connections refused before the last attempt (connect_retry)
    attempt: float = 0.0     # when the last attempt started
    answered: float = 0.0    # when the answer's status line came (0: none came)

    @property
    def ok(self):
        return not self.failure


def _prompt(rng, index):
    # A random prefix per prompt: cache_aware routing spreads them over the workers (identical
    # prompts would all go to one decode server).
    a, b = rng.randint(10, 99), rng.randint(10, 99)
    return "[load %d %08x] What is %d*%d? Number only." % (index, rng.getrandbits(32), a, b)


def request_body(config, prompt, stream):
    body = {"model": config.model, "messages": [{"role": "user", "content": prompt}],
            "max_tokens": config.max_tokens, "stream": stream}
    if config.thinking:
        body["chat_template_kwargs"] = {"thinking": True}
    return body


def message_has_content(payload):
    """True when a chat.completion answer carries content, reasoning or a tool call."""
    try:
        message = payload["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        return False
    return bool(message.get("content") or message.get("reasoning_content") or message.get("tool_calls"))


def classify_stream(lines):
    """(done, failure, detail) for the ``data:`` payloads of a 200 stream, in order."""
    done, content, error = False, False, None
    for payload in lines:
        if payload == "[DONE]":
            done = True
            break
        try:
            event = json.loads(payload)
        except ValueError:
            error = error or "event is not JSON: %s" % payload[:200]
            continue
        if isinstance(event, dict) and event.get("error"):
            error = error or json.dumps(event["error"])[:300]
            continue
        for choice in (event.get("choices") if isinstance(event, dict) else None) or []:
            delta = choice.get("delta") or {}
            if delta.get("content") or delta.get("reasoning_content") or delta.get("tool_calls"):
                content = True
    if error:
        return done, "stream_error", error
    if not done:
        return done, "stream_cut", "stream ended without data: [DONE]"
    if not content:
        return done, "empty", "stream brought no content"
    return done, "", ""


async def _send(session, config, record, body, headers):
    """Send one request and fill in ``record`` (never raises for request failures); a refused connection is tried
    again within ``connect_retry`` seconds of the start."""
    while True:
        record.attempt = time.time()
        refused = await _attempt(session, config, record, body, headers)
        if not refused or record.attempt + FAILURE_PAUSE > record.start + config.connect_retry:
            break
        record.connect_retries += 1
        record.failure = record.detail = ""
        await asyncio.sleep(FAILURE_PAUSE)
    record.end = time.time()


async def _attempt(session, config, record, body, headers):
    """One attempt; True when the connection was refused (nothing was sent)."""
    try:
        async with session.post(config.url.rstrip("/") + "/v1/chat/completions", json=body,
                                headers=headers) as resp:
            record.answered = time.time()
            record.status = resp.status
            if resp.status != 200:
                text = await resp.text(errors="replace")
                record.failure, record.detail = "http_%d" % resp.status, text[:300]
            elif record.stream:
                lines = []
                try:
                    async for raw in resp.content:
                        line = raw.decode("utf-8", "replace").strip()
                        if line.startswith("data:"):
                            lines.append(line[len("data:"):].strip())
                            if lines[-1] == "[DONE]":
                                break
                except (aiohttp.ClientError, asyncio.IncompleteReadError) as exc:
                    lines.append("")  # whatever came, the stream did not end properly
                    record.detail = "%s: %s" % (type(exc).__name__, exc)
                done, failure, detail = classify_stream([x for x in lines if x])
                record.done = done
                if failure:
                    record.failure = failure
                    record.detail = record.detail or detail
            else:
                text = await resp.text(errors="replace")
                try:
                    payload = json.loads(text)
                except ValueError:
                    payload = None
                if not message_has_content(payload):
                    record.failure, record.detail = "empty", text[:300]
    except asyncio.TimeoutError:
        record.failure, record.detail = "timeout", "no complete answer within %.0f s" % config.timeout
    except aiohttp.ClientConnectorError as exc:
        record.failure, record.detail = "connect", "%s: %s" % (type(exc).__name__, exc)
        return True
    except aiohttp.ClientError as exc:
        if record.status:
            record.failure = "stream_cut" if record.stream else "body_cut"
        else:
            record.failure = "connect"
        record.detail = "%s: %s" % (type(exc).__name__, exc)
    return False


async def _client(client, config, state, session, headers):
    rng = random.Random((config.seed or time.time_ns()) * 1000 + client)
    stream = client % 2 == 1 if config.stream_ratio == 0.5 else None
    while True:
        now = time.time()
        if config.duration and now >= state["deadline"]:
            return
        if config.requests and state["sent"] >= config.requests:
            return
        if config.stop_file and os.path.exists(config.stop_file):
            return
        index = state["sent"]
        state["sent"] += 1
        if stream is None:
            this_stream = rng.random() < config.stream_ratio
        else:
            this_stream, stream = stream, not stream  # alternate, half of the clients start streaming
        record = Record(index=index, client=client, stream=this_stream, start=now)
        state["records"].append(record)
        await _send(session, config, record, request_body(config, _prompt(rng, index), this_stream), headers)
        if record.failure:
            await asyncio.sleep(FAILURE_PAUSE)


async def _watch(config, state, session, headers):
    """Poll GET /workers; record every change of a worker's presence or health."""
    last = {}
    url = config.url.rstrip("/") + "/workers"
    while not state["stopped"]:
        now = time.time()
        try:
            async with session.get(url, headers=headers, timeout=aiohttp.ClientTimeout(total=2)) as resp:
                payload = await resp.json(content_type=None) if resp.status == 200 else None
        except (aiohttp.ClientError, asyncio.TimeoutError, ValueError):
            payload = None
        if payload is not None:
            seen = {}
            for worker in payload.get("workers") or []:
                seen[worker.get("url")] = (worker.get("worker_type"), bool(worker.get("is_healthy")))
            for worker_url in sorted(set(seen) | set(last)):
                now_state = seen.get(worker_url, (last.get(worker_url, (None, None))[0], None))
                if last.get(worker_url) != now_state:
                    state["events"].append({"t": now, "url": worker_url, "worker_type": now_state[0],
                                            "healthy": now_state[1]})
            last = seen
        await asyncio.sleep(config.watch_interval)


async def run_load(config):
    """Run the load; returns {"config", "records", "events", "summary"} (plain, JSON-safe)."""
    if aiohttp is None:
        raise RuntimeError("pd_load needs aiohttp (it comes with sglang-router)")
    if not (config.duration or config.requests):
        raise ValueError("bound the load: set duration and/or requests")
    headers = {"Authorization": "Bearer " + config.api_key} if config.api_key else {}
    started = time.time()
    state = {"sent": 0, "records": [], "events": [], "stopped": False,
             "deadline": started + config.duration}
    timeout = aiohttp.ClientTimeout(total=config.timeout)
    # One connection per client plus the watcher; no connection reuse across a dead router.
    tls = ssl.create_default_context(cafile=config.ca_file) if config.ca_file else True
    connector = aiohttp.TCPConnector(limit=config.concurrency + 1, force_close=True, ssl=tls)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        admin = {"Authorization": "Bearer " + config.admin_key} if config.admin_key else headers
        watcher = asyncio.create_task(_watch(config, state, session, admin)) if config.watch_workers else None
        await asyncio.gather(*(_client(i, config, state, session, headers) for i in range(config.concurrency)))
        state["stopped"] = True
        if watcher is not None:
            await watcher
    records = [dataclasses.asdict(r) for r in sorted(state["records"], key=lambda r: r.index)]
    return {"config": dict(dataclasses.asdict(config), api_key="***" if config.api_key else "",
                           admin_key="***" if config.admin_key else ""),
            "started": started, "finished": time.time(), "records": records, "events": state["events"],
            "summary": summarize(records, state["events"])}


# ---- analysis (pure functions) ------------------------------------------------------------------

def _percentile(values, fraction):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def health_windows(events):
    """Per worker URL, the intervals in which the router did not count it healthy:
    {url: [{"down": t, "up": t or None}]} (absent from /workers counts as down)."""
    windows = {}
    for event in sorted(events or [], key=lambda e: e["t"]):
        spans = windows.setdefault(event["url"], [])
        healthy = bool(event.get("healthy"))
        if not healthy and (not spans or spans[-1]["up"] is not None):
            spans.append({"down": event["t"], "up": None})
        elif healthy and spans and spans[-1]["up"] is None:
            spans[-1]["up"] = event["t"]
    return {url: spans for url, spans in windows.items() if spans}


def summarize(records, events=None):
    """Counts per kind, failures by class, latencies and the window of the failed requests."""
    def kind(record):
        return "stream" if record["stream"] else "plain"

    failed = [r for r in records if r["failure"]]
    summary = {
        "requests": len(records),
        "ok": len(records) - len(failed),
        "failed": len(failed),
        "by_kind": {},
        "failures": {},
        "failed_window": None,
        "latency_s": {},
        "span_s": None,
        "health_windows": health_windows(events),
    }
    for name in ("plain", "stream"):
        mine = [r for r in records if kind(r) == name]
        bad = [r for r in mine if r["failure"]]
        classes = {}
        for record in bad:
            classes[record["failure"]] = classes.get(record["failure"], 0) + 1
        summary["by_kind"][name] = {"sent": len(mine), "failed": len(bad), "failures": classes}
        for cls, count in classes.items():
            summary["failures"][cls] = summary["failures"].get(cls, 0) + count
    if failed:
        summary["failed_window"] = {
            "first_start": min(r["start"] for r in failed), "last_start": max(r["start"] for r in failed),
            "first_end": min(r["end"] for r in failed), "last_end": max(r["end"] for r in failed),
        }
    ok_latency = [r["end"] - r["start"] for r in records if not r["failure"]]
    if ok_latency:
        summary["latency_s"] = {"p50": _percentile(ok_latency, 0.5), "p99": _percentile(ok_latency, 0.99),
                                "max": max(ok_latency)}
    if records:
        summary["span_s"] = max(r["end"] for r in records) - min(r["start"] for r in records)
    return summary


def format_report(summary, origin=None):
    """Human-readable lines; times relative to ``origin`` (default: the first failure or 0)."""
    lines = []
    plain, stream = summary["by_kind"]["plain"], summary["by_kind"]["stream"]
    lines.append("requests %d (non-streaming %d, streaming %d): ok %d, failed %d"
                 % (summary["requests"], plain["sent"], stream["sent"], summary["ok"], summary["failed"]))
    for name, part in (("non-streaming", plain), ("streaming", stream)):
        if part["failed"]:
            lines.append("  %s failures: %s" % (name, ", ".join(
                "%s %d" % item for item in sorted(part["failures"].items()))))
    if summary.get("latency_s"):
        lat = summary["latency_s"]
        lines.append("latency of successful requests: p50 %.2f s, p99 %.2f s, max %.2f s"
                     % (lat["p50"], lat["p99"], lat["max"]))
    base = origin if origin is not None else 0.0
    window = summary.get("failed_window")
    if window:
        lines.append("failed requests started %.2f .. %.2f s, ended %.2f .. %.2f s"
                     % (window["first_start"] - base, window["last_start"] - base,
                        window["first_end"] - base, window["last_end"] - base))
    for url, spans in sorted((summary.get("health_windows") or {}).items()):
        for span in spans:
            up = "%.2f s" % (span["up"] - base) if span["up"] is not None else "never"
            lines.append("router: %s down at %.2f s, healthy again at %s" % (url, span["down"] - base, up))
    return lines


# ---- command line -------------------------------------------------------------------------------

def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="router base URL, e.g. http://127.0.0.1:30001")
    parser.add_argument("--model", required=True, help="served model name")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds (0: bounded by --requests only)")
    parser.add_argument("--requests", type=int, default=0, help="stop after this many requests (0: no limit)")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--stream-ratio", type=float, default=0.5,
                        help="share of streaming requests (0.5: every client alternates)")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--no-thinking", action="store_true", help="do not ask for thinking")
    parser.add_argument("--timeout", type=float, default=120.0, help="per request, seconds")
    # Keys come from files (the router's own credential files, read as root): never on a command line.
    parser.add_argument("--api-key-file", default="", help="file holding the router's client API key")
    parser.add_argument("--admin-key-file", default="",
                        help="file holding the router's control-plane key (for --watch-workers' GET /workers)")
    parser.add_argument("--ca-file", default="", help="CA file an https:// router is verified against")
    parser.add_argument("--connect-retry", type=float, default=0.0,
                        help="retry a refused connection for up to this many seconds from the request's start")
    parser.add_argument("--watch-workers", action="store_true", help="poll GET /workers and report health changes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--stop-file", default="", help="end the load early once this file exists")
    parser.add_argument("--json", dest="json_path", default="", help="write config, records, events and summary here")
    parser.add_argument("--max-failures", type=int, default=None,
                        help="exit 1 when more requests than this failed (default: report only)")
    parser.add_argument("--min-ok", type=int, default=0,
                        help="exit 1 when fewer requests than this succeeded (a run that sent nothing proves nothing)")
    return parser.parse_args(argv)


def _read_key(path):
    """A key file's content without the line end; empty for no file."""
    if not path:
        return ""
    with open(path, encoding="utf-8") as handle:
        return handle.read().strip()


def main(argv=None):
    args = parse_args(argv)
    config = LoadConfig(url=args.url, model=args.model, duration=args.duration, requests=args.requests,
                        concurrency=args.concurrency, stream_ratio=args.stream_ratio,
                        max_tokens=args.max_tokens, thinking=not args.no_thinking, timeout=args.timeout,
                        api_key=_read_key(args.api_key_file), admin_key=_read_key(args.admin_key_file),
                        watch_workers=args.watch_workers, seed=args.seed, stop_file=args.stop_file,
                        ca_file=args.ca_file, connect_retry=args.connect_retry)
    result = asyncio.run(run_load(config))
    if args.json_path:
        # Whole or not at all: a reader never sees half a file.
        with open(args.json_path + ".partial", "w", encoding="utf-8") as handle:
            json.dump(result, handle)
        os.replace(args.json_path + ".partial", args.json_path)
    for line in format_report(result["summary"], origin=result["started"]):
        print(line)
    if args.max_failures is not None and result["summary"]["failed"] > args.max_failures:
        return 1
    if result["summary"]["ok"] < args.min_ok:
        print("fewer than %d requests succeeded" % args.min_ok)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
