# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""tests/load/pd_load.py against an in-process aiohttp server that answers the way a PD router
does when things go right and when they go wrong (cut streams, 502, refused connections)."""
import asyncio
import json
import os
import socket
import sys

import pytest
from aiohttp import web

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "load"))

import pd_load  # noqa: E402  pylint: disable=wrong-import-position


def chunk(delta):
    return "data: %s\n\n" % json.dumps({"object": "chat.completion.chunk",
                                        "choices": [{"index": 0, "delta": delta}]})


COMPLETION = {"object": "chat.completion",
              "choices": [{"index": 0, "message": {"role": "assistant", "content": "391"}}]}


class App:
    """The aiohttp application and what it saw (``bodies``, ``polls`` of /workers, ``auth`` headers by path)."""

    def __init__(self):
        self.bodies = []
        self.polls = 0
        self.auth = {}
        self.web = web.Application()


def make_app(mode, workers=None):
    """mode: ok | cut | no_done | error_event | http_502 | empty | slow."""
    app = App()

    async def chat(request):
        app.auth.setdefault("chat", set()).add(request.headers.get("Authorization", ""))
        body = await request.json()
        app.bodies.append(body)
        if mode == "http_502":
            return web.json_response({"error": {"type": "Bad Gateway", "code": "decode_server_error",
                                                "message": "Decode server error"}}, status=502)
        if mode == "slow":
            await asyncio.sleep(5)
        if not body.get("stream"):
            if mode == "empty":
                return web.json_response({"choices": [{"message": {"content": ""}}]})
            return web.json_response(COMPLETION)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(chunk({"role": "assistant", "content": ""}).encode())
        if mode == "error_event":
            await resp.write(b'data: {"error": {"message": "KV bootstrap failed"}}\n\n')
        elif mode != "empty":
            await resp.write(chunk({"content": "391"}).encode())
        if mode == "cut":
            request.transport.close()  # the decode died: the chunked body never ends
            return resp
        if mode != "no_done":
            await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def list_workers(request):
        app.auth.setdefault("workers", set()).add(request.headers.get("Authorization", ""))
        app.polls += 1
        states = workers or []
        current = states[min(app.polls - 1, len(states) - 1)] if states else []
        return web.json_response({"workers": current})

    app.web.router.add_post("/v1/chat/completions", chat)
    app.web.router.add_get("/workers", list_workers)
    return app


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def serve_and_load(app, **config):
    runner = web.AppRunner(app.web, handle_signals=False)
    await runner.setup()
    port = free_port()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    try:
        defaults = {"url": "http://127.0.0.1:%d" % port, "model": "m", "duration": 0, "requests": 8,
                    "concurrency": 2, "timeout": 5, "seed": 7}
        defaults.update(config)
        return await pd_load.run_load(pd_load.LoadConfig(**defaults))
    finally:
        await runner.cleanup()


def run(mode, workers=None, **config):
    app = make_app(mode, workers)
    return asyncio.run(serve_and_load(app, **config)), app


def test_good_answers_are_recorded_as_ok():
    result, app = run("ok", requests=10, concurrency=2)
    records, summary = result["records"], result["summary"]
    assert len(records) == 10 and summary["ok"] == 10 and summary["failed"] == 0
    assert summary["by_kind"]["plain"]["sent"] == 5 and summary["by_kind"]["stream"]["sent"] == 5
    assert all(r["done"] for r in records if r["stream"])
    assert not any(r["done"] for r in records if not r["stream"])
    assert all(r["status"] == 200 and r["end"] >= r["start"] > 0 for r in records)
    assert summary["failed_window"] is None
    # what was sent: thinking on, a distinct prompt each time, the model and the token bound
    body = app.bodies[0]
    assert body["model"] == "m" and body["max_tokens"] == 64
    assert body["chat_template_kwargs"] == {"thinking": True}
    prompts = [b["messages"][0]["content"] for b in app.bodies]
    assert len(set(prompts)) == len(prompts)


@pytest.mark.parametrize("mode, stream_class, plain_class", [
    ("cut", "stream_cut", None),
    ("no_done", "stream_cut", None),
    ("error_event", "stream_error", None),
    ("http_502", "http_502", "http_502"),
    ("empty", "empty", "empty"),
])
def test_failures_are_classified(mode, stream_class, plain_class):
    result, _app = run(mode, requests=4)
    by_kind = result["summary"]["by_kind"]
    assert by_kind["stream"]["failures"] == {stream_class: 2}
    assert by_kind["plain"]["failures"] == ({plain_class: 2} if plain_class else {})
    failed = [r for r in result["records"] if r["failure"]]
    window = result["summary"]["failed_window"]
    assert window["first_start"] == min(r["start"] for r in failed)
    assert window["last_end"] == max(r["end"] for r in failed)
    if mode == "error_event":
        assert all(r["done"] for r in failed)  # [DONE] came, the error event still fails it


def test_refused_connection_and_timeout():
    port = free_port()  # nothing listens there
    config = pd_load.LoadConfig(url="http://127.0.0.1:%d" % port, model="m", duration=0, requests=3,
                                concurrency=1, timeout=2)
    result = asyncio.run(pd_load.run_load(config))
    assert result["summary"]["failures"] == {"connect": 3}
    assert all(r["status"] == 0 for r in result["records"])
    result, _app = run("slow", requests=2, concurrency=2, timeout=0.5)
    assert result["summary"]["failures"] == {"timeout": 2}


def test_refused_connection_is_retried_within_connect_retry():
    """A router that starts listening 0.6 s into the load (the address moved): requests sent before wait and succeed;
    without connect_retry they fail; a stream cut after the answer began is never retried."""
    port = free_port()

    async def late_router():
        runner = web.AppRunner(make_app("ok").web, handle_signals=False)
        await runner.setup()
        await asyncio.sleep(0.6)
        await web.TCPSite(runner, "127.0.0.1", port).start()
        return runner

    async def load(retry):
        config = pd_load.LoadConfig(url="http://127.0.0.1:%d" % port, model="m", duration=0, requests=4,
                                    concurrency=2, timeout=5, connect_retry=retry)
        runner, result = await asyncio.gather(late_router(), pd_load.run_load(config))
        await runner.cleanup()
        return result

    result = asyncio.run(load(5.0))
    assert result["summary"]["failed"] == 0
    first = min(result["records"], key=lambda r: r["start"])
    assert first["connect_retries"] >= 3 and first["attempt"] - first["start"] >= 0.5
    assert first["answered"] >= first["attempt"]
    result = asyncio.run(load(0.0))
    assert result["summary"]["failures"].get("connect", 0) >= 1
    result, _app = run("cut", requests=2, concurrency=1, connect_retry=5.0)
    cut = [r for r in result["records"] if r["stream"]][0]
    assert cut["failure"] == "stream_cut" and cut["connect_retries"] == 0


def test_duration_bounds_the_load():
    result, _app = run("ok", duration=0.5, requests=0, concurrency=2)
    records = result["records"]
    assert len(records) > 4
    assert max(r["start"] for r in records) < result["started"] + 0.5


def test_stop_file_ends_the_load_early(tmp_path):
    stop = tmp_path / "stop"

    async def load_then_stop():
        app = make_app("ok")
        runner = web.AppRunner(app.web, handle_signals=False)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        try:
            config = pd_load.LoadConfig(url="http://127.0.0.1:%d" % port, model="m", duration=30,
                                        concurrency=2, stop_file=str(stop))
            task = asyncio.create_task(pd_load.run_load(config))
            await asyncio.sleep(0.5)
            stop.write_text("")
            return await asyncio.wait_for(task, 5)
        finally:
            await runner.cleanup()

    result = asyncio.run(load_then_stop())
    assert result["summary"]["requests"] > 2
    assert result["finished"] - result["started"] < 5


def test_watcher_records_when_a_worker_goes_down_and_comes_back():
    healthy = [{"url": "http://d1", "worker_type": "decode", "is_healthy": True}]
    sick = [{"url": "http://d1", "worker_type": "decode", "is_healthy": False}]
    states = [healthy, healthy, sick, sick, [], healthy]
    result, _app = run("ok", workers=states, duration=1.5, requests=0, concurrency=1,
                       watch_workers=True, watch_interval=0.05)
    events = [(e["url"], e["worker_type"], e["healthy"]) for e in result["events"]]
    assert events == [("http://d1", "decode", True), ("http://d1", "decode", False),
                      ("http://d1", "decode", None), ("http://d1", "decode", True)]
    spans = result["summary"]["health_windows"]["http://d1"]
    assert len(spans) == 1 and spans[0]["up"] > spans[0]["down"]


def test_health_windows_and_report():
    events = [{"t": 10.0, "url": "u", "healthy": True}, {"t": 12.0, "url": "u", "healthy": False},
              {"t": 13.0, "url": "u", "healthy": None}, {"t": 20.0, "url": "u", "healthy": True},
              {"t": 30.0, "url": "u", "healthy": False}, {"t": 5.0, "url": "v", "healthy": True}]
    assert pd_load.health_windows(events) == {"u": [{"down": 12.0, "up": 20.0}, {"down": 30.0, "up": None}]}
    records = [
        {"stream": True, "start": 11.0, "end": 12.5, "failure": "stream_cut"},
        {"stream": False, "start": 11.5, "end": 13.0, "failure": ""},
        {"stream": True, "start": 14.0, "end": 15.0, "failure": ""},
    ]
    summary = pd_load.summarize(records, events)
    assert summary["failures"] == {"stream_cut": 1}
    lines = pd_load.format_report(summary, origin=10.0)
    assert lines[0] == "requests 3 (non-streaming 1, streaming 2): ok 2, failed 1"
    assert "  streaming failures: stream_cut 1" in lines
    assert "failed requests started 1.00 .. 1.00 s, ended 2.50 .. 2.50 s" in lines
    assert "router: u down at 2.00 s, healthy again at 10.00 s" in lines
    assert "router: u down at 20.00 s, healthy again at never" in lines


def test_classify_stream():
    assert pd_load.classify_stream(['{"choices": [{"delta": {"content": "x"}}]}', "[DONE]"]) == (True, "", "")
    assert pd_load.classify_stream(['{"choices": [{"delta": {"content": ""}}]}', "[DONE]"])[1] == "empty"
    assert pd_load.classify_stream(["not json", "[DONE]"])[1] == "stream_error"
    assert pd_load.classify_stream(['{"choices": [{"delta": {"reasoning_content": "x"}}]}'])[1] == "stream_cut"


def test_command_line_writes_json_and_judges(tmp_path, capsys):
    async def main_in_loop(argv):
        app = make_app("http_502")
        runner = web.AppRunner(app.web, handle_signals=False)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        try:
            # main() runs its own event loop: run it in a thread
            return await asyncio.to_thread(pd_load.main, ["--url", "http://127.0.0.1:%d" % port] + argv)
        finally:
            await runner.cleanup()

    out = tmp_path / "load.json"
    argv = ["--model", "m", "--duration", "0", "--requests", "2", "--concurrency", "1", "--json", str(out)]
    assert asyncio.run(main_in_loop(argv)) == 0  # report only by default
    assert asyncio.run(main_in_loop(argv + ["--max-failures", "1"])) == 1
    assert asyncio.run(main_in_loop(argv + ["--min-ok", "1"])) == 1  # nothing succeeded
    data = json.loads(out.read_text())
    assert set(data) == {"config", "started", "finished", "records", "events", "summary"}
    assert data["summary"]["failures"] == {"http_502": 2}
    assert "requests 2 (non-streaming 1, streaming 1): ok 0, failed 2" in capsys.readouterr().out


def test_keys_come_from_files_and_never_reach_the_record(tmp_path):
    """The client key for requests, the control-plane key for GET /workers (it answers 401 to the client key)."""
    client, admin = tmp_path / "client", tmp_path / "admin"
    client.write_text("client-secret\n")
    admin.write_text("admin-secret")
    args = pd_load.parse_args(["--url", "http://x", "--model", "m", "--api-key-file", str(client),
                               "--admin-key-file", str(admin)])
    assert pd_load._read_key(args.api_key_file) == "client-secret"
    assert pd_load._read_key(args.admin_key_file) == "admin-secret" and pd_load._read_key("") == ""
    result, app = run("ok", workers=[[]], requests=4, watch_workers=True, api_key="client-secret",
                      admin_key="admin-secret")
    assert app.auth["chat"] == {"Bearer client-secret"} and app.auth["workers"] == {"Bearer admin-secret"}
    text = json.dumps(result)
    assert "client-secret" not in text and "admin-secret" not in text
    assert result["config"]["api_key"] == "***" and result["config"]["admin_key"] == "***"


def test_an_https_router_is_verified_against_the_ca_file(tmp_path):
    """sglang_router_tls: the load verifies the router's certificate against --ca-file; without it, nothing passes."""
    import ssl  # pylint: disable=import-outside-toplevel
    from tls_support import TestCA  # pylint: disable=import-error,import-outside-toplevel
    ca = TestCA(tmp_path, "stack CA")
    cert, key = ca.issue(tmp_path, "router", ["127.0.0.1"])
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)

    async def serve(**config):
        app = make_app("ok")
        runner = web.AppRunner(app.web, handle_signals=False)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port, ssl_context=context).start()
        try:
            return await pd_load.run_load(pd_load.LoadConfig(url="https://127.0.0.1:%d" % port, model="m", duration=0,
                                                             requests=4, concurrency=2, timeout=5, **config))
        finally:
            await runner.cleanup()

    assert asyncio.run(serve(ca_file=ca.path))["summary"]["ok"] == 4
    refused = asyncio.run(serve())["summary"]
    assert refused["ok"] == 0 and refused["failed"] == 4
    assert pd_load.parse_args(["--url", "https://x", "--model", "m", "--ca-file", ca.path]).ca_file == ca.path
