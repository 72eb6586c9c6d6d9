"""The PD bootstrap: a real HTTP server on the prefill's --disaggregation-bootstrap-port.

SGLang's prefill runs an HTTP bootstrap server (``/route``, ``/health``) that decode servers
contact with the ``bootstrap_host``/``bootstrap_port``/``bootstrap_room`` the router injected.
Here the prefill records each request's state under its room, and the decode server fetches that
state (``GET /emulator/room/<room>``) before it generates: a broken handshake cannot pass.
"""
import json
import threading
import time
import urllib.error
import urllib.request
from collections import OrderedDict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

MAX_ROOMS = 4096


class RoomStore:
    """Room -> request state, with a 'fetched by decode' flag (thread-safe)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._rooms = OrderedDict()

    def put(self, room, state):
        with self._lock:
            self._rooms[str(room)] = {"state": state, "fetched": False, "t": time.time()}
            while len(self._rooms) > MAX_ROOMS:
                self._rooms.popitem(last=False)

    def take(self, room):
        with self._lock:
            entry = self._rooms.get(str(room))
            if entry is None:
                return None
            entry["fetched"] = True
            return entry["state"]

    def fetched(self, room):
        with self._lock:
            entry = self._rooms.get(str(room))
            return bool(entry and entry["fetched"])

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
                    state = store.take(room)
                    if state is None:
                        self._send(404, {"error": "room %s not registered" % room})
                    else:
                        self._send(200, {"room": room, "state": state})
                else:
                    self._send(404, {"error": "not found"})

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True,
                                       name="bootstrap")

    def start(self):
        self.thread.start()

    def stop(self):
        self.server.shutdown()


class BootstrapError(Exception):
    pass


def fetch_room(host, port, room, timeout):
    """Fetch a room's state from the prefill bootstrap server, retrying until ``timeout``.

    Raises BootstrapError when the room cannot be fetched in time (connection refused, wrong
    port, prefill down, room never registered).
    """
    if ":" in host and not host.startswith("["):
        host = "[%s]" % host
    url = "http://%s:%s/emulator/room/%s" % (host, port, room)
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
            last = "HTTP %s from bootstrap server" % exc.code
        except (OSError, ValueError) as exc:
            last = str(getattr(exc, "reason", exc))
        time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
