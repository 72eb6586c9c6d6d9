"""The PD bootstrap: a real HTTP server on the prefill's --disaggregation-bootstrap-port.

SGLang's prefill runs an HTTP bootstrap server (``/route``, ``/health``) that decode servers
contact with the ``bootstrap_host``/``bootstrap_port``/``bootstrap_room`` the router injected.
Here the prefill records each request's state under its room; the decode server fetches that state
(``GET /emulator/room/<room>``: the bootstrap), "receives the KV cache" and reports the transfer's result
(``POST /emulator/room/<room>/result``), so both sides see a bootstrap or transfer failure, as both
SGLang schedulers count one. A broken handshake cannot pass silently.

Every hop goes over the network between the prefill's and the decode's hosts, as SGLang's do: the
decode's ``/route`` fetch, its room polls and result report, and its heartbeat (``PrefillTable``), so a
firewall drop between the two hosts breaks them the way it breaks SGLang's handshake and KV transfer.
"""
import json
import logging
import re
import threading
import time
import urllib.error
import urllib.request
from collections import OrderedDict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

MAX_ROOMS = 4096
# SGLang's decode fetches /route without a timeout (the kernel's connect timeout bounds it, about 2 min under a
# drop); the emulator bounds it like SGLang's per-rank bootstrap-info fetch (timeout=5).
ROUTE_TIMEOUT = 5.0

log = logging.getLogger("sglang.srt.disaggregation")


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
    """``expected``: the prefill ranks (tp x pp over all nodes) that must register (``PUT /route``) before ``GET
    /route`` answers 200; ``local``: the engine ranks of this node (rank 0's), registered at once."""

    def __init__(self, host, port, info, expected=1, local=(0,)):
        self.rooms = RoomStore()
        self.info = info
        self.expected = expected
        self.registered = {}  # engine_rank -> registration body
        for rank in local:
            self.registered[int(rank)] = {"engine_rank": int(rank), "rank_ip": host}
        store, info_ref, server_ref = self.rooms, info, self

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
                    count = len(server_ref.registered)
                    if count < server_ref.expected:
                        # SGLang's bootstrap server until every prefill rank (every node) registered.
                        self._send(503, "Prefill server not fully registered yet (%d workers registered)" % count)
                        return
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

            def do_PUT(self):  # noqa: N802 (http.server API)
                """A prefill rank registers (SGLang's register_to_bootstrap): {role, rank_ip, rank_port, engine_rank}."""
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length).decode() or "{}")
                    rank = int(body["engine_rank"])
                except (ValueError, KeyError, TypeError):
                    self._send(400, {"error": "bad registration"})
                    return
                if urlparse(self.path).path != "/route":
                    self._send(404, {"error": "not found"})
                    return
                server_ref.registered[rank] = body
                log.info("Prefill rank %d registered from %s (%d of %d)", rank, body.get("rank_ip"),
                         len(server_ref.registered), server_ref.expected)
                self._send(200, "OK")

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


def fetch_route(host, port, timeout=ROUTE_TIMEOUT):
    """The prefill's parallel info from its bootstrap server (``GET /route``), as SGLang's decode fetches it
    the first time it meets a bootstrap address. Raises BootstrapError(kind="bootstrap") when it cannot."""
    url = "%s/route?engine_rank=-1&target_dp_group=-1" % _base_url(host, port)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return json.loads(resp.read().decode())
    except (OSError, ValueError) as exc:
        raise BootstrapError("Could not fetch prefill parallel info from bootstrap_addr: %s:%s (%s)"
                             % (host, port, getattr(exc, "reason", exc)), "bootstrap") from None


def fetch_room(host, port, room, timeout, lost=None):
    """Wait for a room's state from the prefill bootstrap server: the decode's KVPoll.WaitingForInput.

    Polls until the state comes, the prefill reports the room failed (410), ``lost()`` names a reason (the
    heartbeat lost the prefill: SGLang's "Losing connection with prefill instance"), or ``timeout`` (SGLang's
    SGLANG_DISAGGREGATION_WAITING_TIMEOUT) runs out. Those last two are transfer failures, as in SGLang's
    decode transfer queue.
    """
    url = "%s/emulator/room/%s" % (_base_url(host, port), room)
    start = time.monotonic()
    deadline = start + timeout
    last = "no attempt"
    while True:
        reason = lost() if lost is not None else None
        if reason:
            raise BootstrapError("Decode transfer failed for request bootstrap_room=%s with exception %s"
                                 % (room, reason), "transfer")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BootstrapError("Decode transfer failed for request bootstrap_room=%s with exception Request %s "
                                 "timed out after %.1fs in KVPoll.WaitingForInput (last: %s)"
                                 % (room, room, time.monotonic() - start, last), "transfer")
        try:
            with urllib.request.urlopen(url, timeout=max(0.2, min(remaining, 1.0))) as resp:
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


class PrefillTable:
    """The decode's view of the prefill bootstrap servers it met (SGLang's prefill info table and heartbeat).

    An address enters on its first good ``/route``. A thread asks each known address for ``/health`` every
    ``interval`` seconds (timeout 3 s, as SGLang's connect 2 s + read 3 s); after ``max_failures`` failures in a
    row the prefill counts as lost: the address leaves the table (the next request fetches ``/route`` again)
    and every room waiting on it fails with SGLang's reason.
    """

    def __init__(self, interval, max_failures):
        self.interval, self.max_failures = interval, max_failures
        self._lock = threading.Lock()
        self._known = {}      # "host:port" -> /route info
        self._failures = {}   # "host:port" -> heartbeat failures in a row
        self._rooms = {}      # "host:port" -> {room: lost reason or None}
        self._thread = None

    def known(self, addr):
        with self._lock:
            return addr in self._known

    def learn(self, addr, info):
        with self._lock:
            self._known[addr] = info
            self._failures.setdefault(addr, 0)
        self._start()

    def track(self, addr, room):
        with self._lock:
            self._rooms.setdefault(addr, {})[str(room)] = None

    def untrack(self, addr, room):
        with self._lock:
            self._rooms.get(addr, {}).pop(str(room), None)

    def lost(self, addr, room):
        with self._lock:
            return self._rooms.get(addr, {}).get(str(room))

    def beat(self, addr, healthy):
        """One heartbeat result; returns the rooms failed when it made the prefill lost."""
        with self._lock:
            if addr not in self._known:
                return []
            if healthy:
                self._failures[addr] = 0
                return []
            self._failures[addr] = self._failures.get(addr, 0) + 1
            if self._failures[addr] < self.max_failures:
                return []
            del self._known[addr]
            reason = "Losing connection with prefill instance (bootstrap_addr: %s)" % addr
            rooms = self._rooms.get(addr, {})
            for room in rooms:
                rooms[room] = reason
            return list(rooms)

    def _start(self):
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, daemon=True, name="heartbeat")
        self._thread.start()

    def _run(self):
        while True:
            time.sleep(self.interval)
            with self._lock:
                addrs = list(self._known)
            for addr in addrs:
                try:
                    with urllib.request.urlopen("http://%s/health" % addr, timeout=3.0) as resp:
                        healthy = resp.status == 200
                except (OSError, ValueError):
                    healthy = False
                failed = self.beat(addr, healthy)
                if failed or not healthy:
                    log.error("Heartbeat to prefill bootstrap %s failed%s", addr,
                              ("; Losing connection with prefill instance (bootstrap_addr: %s), affected %d requests"
                               % (addr, len(failed))) if failed else "")


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
