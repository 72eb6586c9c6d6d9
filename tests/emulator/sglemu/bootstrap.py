"""The PD bootstrap: a real HTTP server on the prefill's --disaggregation-bootstrap-port.

SGLang's prefill runs an HTTP bootstrap server (``/route``, ``/health``) that decode servers
contact with the ``bootstrap_host``/``bootstrap_port``/``bootstrap_room`` the router injected.
Here the prefill records each request's state under its room; the decode server fetches that state
(``GET /emulator/room/<room>``: the bootstrap), "receives the KV cache" and reports the transfer's result
(``POST /emulator/room/<room>/result``), so both sides see a bootstrap or transfer failure, as both
SGLang schedulers count one. A broken handshake cannot pass silently.
"""
import json
import re
import threading
import time
import urllib.error
import urllib.request
from collections import OrderedDict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

MAX_ROOMS = 4096


class RoomStore:
    """Room -> request state and its phase (thread-safe).

    Phases: ``pending`` (registered by the prefill), ``fetched`` (bootstrapped by a decode server),
    ``done`` (KV received) or ``failed`` with the failure kind (``bootstrap`` or ``transfer``). A failure
    reported before the prefill registered the room is kept, so the prefill sees it when it arrives.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._rooms = OrderedDict()

    def _entry(self, room):
        entry = self._rooms.get(str(room))
        if entry is None:
            entry = self._rooms[str(room)] = {"state": None, "phase": "pending", "kind": None,
                                              "t": time.time()}
            while len(self._rooms) > MAX_ROOMS:
                self._rooms.popitem(last=False)
        return entry

    def put(self, room, state, fail_transfer=False):
        """Register a room; ``fail_transfer`` makes its transfer fail once the decode reports it."""
        with self._lock:
            entry = self._entry(room)
            entry["state"], entry["fail_transfer"] = state, fail_transfer

    def take(self, room):
        """(state, failure kind): the state for a decode server, marking the room fetched."""
        with self._lock:
            entry = self._rooms.get(str(room))
            if entry is None or entry["state"] is None and entry["phase"] != "failed":
                return None, None
            if entry["phase"] == "failed":
                return None, entry["kind"]
            entry["phase"] = "fetched"
            return entry["state"], None

    def finish(self, room, ok, kind="transfer"):
        """Record a decode server's result; returns the failure kind when the room already failed."""
        with self._lock:
            entry = self._entry(room)
            if entry["phase"] == "failed":
                return entry["kind"]
            if ok and entry.get("fail_transfer"):
                entry["phase"], entry["kind"] = "failed", "transfer"
                return "transfer"
            if ok:
                entry["phase"] = "done"
                return None
            entry["phase"], entry["kind"] = "failed", kind
            return None

    def fail(self, room, kind):
        with self._lock:
            entry = self._entry(room)
            if entry["phase"] != "failed":
                entry["phase"], entry["kind"] = "failed", kind

    def phase(self, room):
        """(phase, failure kind) of a room; ("gone", None) when unknown."""
        with self._lock:
            entry = self._rooms.get(str(room))
            return (entry["phase"], entry["kind"]) if entry else ("gone", None)

    def drop(self, room):
        with self._lock:
            self._rooms.pop(str(room), None)


class BootstrapServer:
    def __init__(self, host, port, info):
        self.rooms = RoomStore()
        self.info = info
        store, info_ref = self.rooms, info

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep the emulator's log quiet
                pass

            def _send(self, status, payload):
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):  # noqa: N802 (http.server API)
                url = urlparse(self.path)
                if url.path == "/health":
                    self._send(200, "OK")
                elif url.path == "/route":
                    query = parse_qs(url.query)
                    payload = dict(info_ref)
                    payload["engine_rank"] = query.get("engine_rank", ["-1"])[0]
                    self._send(200, payload)
                elif url.path.startswith("/emulator/room/"):
                    room = url.path[len("/emulator/room/"):]
                    state, failed = store.take(room)
                    if failed:
                        self._send(410, {"error": "room %s failed" % room, "kind": failed})
                    elif state is None:
                        self._send(404, {"error": "room %s not registered" % room})
                    else:
                        self._send(200, {"room": room, "state": state})
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self):  # noqa: N802 (http.server API)
                url = urlparse(self.path)
                match = re.match(r"^/emulator/room/([^/]+)/result$", url.path)
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length).decode() or "{}")
                except ValueError:
                    body = {}
                if not match:
                    self._send(404, {"error": "not found"})
                    return
                failed = store.finish(match.group(1), bool(body.get("ok")), body.get("kind") or "transfer")
                if failed:
                    self._send(410, {"error": "room %s failed" % match.group(1), "kind": failed})
                else:
                    self._send(200, {"room": match.group(1)})

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True,
                                       name="bootstrap")

    def start(self):
        self.thread.start()

    def stop(self):
        self.server.shutdown()


class BootstrapError(Exception):
    """A failed PD handshake; ``kind`` is ``bootstrap`` or ``transfer`` (the counter it goes to)."""

    def __init__(self, message, kind="bootstrap"):
        super(BootstrapError, self).__init__(message)
        self.kind = kind


def _base_url(host, port):
    if ":" in host and not host.startswith("["):
        host = "[%s]" % host
    return "http://%s:%s" % (host, port)


def fetch_room(host, port, room, timeout):
    """Fetch a room's state from the prefill bootstrap server, retrying until ``timeout``.

    Raises BootstrapError when the room cannot be fetched in time (connection refused, wrong
    port, prefill down, room never registered).
    """
    url = "%s/emulator/room/%s" % (_base_url(host, port), room)
    deadline = time.monotonic() + timeout
    last = "no attempt"
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BootstrapError("KV bootstrap from %s:%s for room %s failed after %.1fs: %s"
                                 % (host, port, room, timeout, last))
        try:
            with urllib.request.urlopen(url, timeout=max(0.2, min(remaining, 2.0))) as resp:
                return json.loads(resp.read().decode())["state"]
        except urllib.error.HTTPError as exc:
            if exc.code == 410:
                kind = _kind(exc)
                raise BootstrapError("KV bootstrap from %s:%s for room %s failed: the prefill reports a %s failure"
                                     % (host, port, room, kind), kind) from None
            last = "HTTP %s from bootstrap server" % exc.code
        except (OSError, ValueError) as exc:
            last = str(getattr(exc, "reason", exc))
        time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))


def _kind(http_error):
    """The failure kind a 410 answer names (its body can be read once)."""
    try:
        return json.loads(http_error.read().decode()).get("kind") or "bootstrap"
    except (OSError, ValueError, AttributeError):
        return "bootstrap"


def report_result(host, port, room, ok, kind="transfer", timeout=5.0):
    """Tell the prefill's bootstrap server how the transfer of ``room`` ended.

    Raises BootstrapError(kind="transfer") when the prefill already failed the room or cannot be told.
    """
    url = "%s/emulator/room/%s/result" % (_base_url(host, port), room)
    data = json.dumps({"ok": bool(ok), "kind": kind}).encode()
    request = urllib.request.Request(url, data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            resp.read()
    except urllib.error.HTTPError as exc:
        if exc.code == 410:
            kind = _kind(exc)
            raise BootstrapError("KV transfer for room %s failed: the prefill reports a %s failure"
                                 % (room, kind), kind) from None
        raise BootstrapError("KV transfer for room %s: HTTP %s from %s" % (room, exc.code, url),
                             "transfer") from None
    except (OSError, ValueError) as exc:
        raise BootstrapError("KV transfer for room %s: %s unreachable (%s)"
                             % (room, url, getattr(exc, "reason", exc)), "transfer") from None
