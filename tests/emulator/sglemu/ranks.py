"""One instance over several nodes (``--nnodes N --node-rank R --dist-init-addr H:P``), as SGLang 0.5.23 runs it.

From ``shared/research/multinode-tp.md`` (read from the 0.5.23 wheel and torch):

- Rank 0's TP0 scheduler hosts torch's TCPStore on the dist-init port (every interface) and
  ``init_process_group`` waits for every rank, local and remote, for ``--dist-timeout`` seconds (None: torch's
  10 minutes). Only then are weights loaded and the HTTP port bound. Past the timeout:
  ``DistStoreError: Timed out ... waiting for clients. k/N clients joined``, the scheduler SIGQUITs its parent and
  the whole process tree dies (exit non-zero).
- A rank > 0 connects to the dist-init address, retrying under the same timeout (``DistNetworkError`` past it), loads,
  then serves only a dummy health server on ``--host:--port`` (``/health``, ``/health_generate``, ``/ping`` 200,
  ``/metrics`` with ``--enable-metrics``; everything else 404). It ignores SIGTERM, waiting for rank 0's
  ``ShutdownReq`` broadcast, after which it exits 0. A rank whose peer's socket resets dies at the next broadcast.
- Prefill: the bootstrap server is rank 0's; every prefill rank registers there (``PUT /route``, 5 tries over about
  15 s, a failure only logged) and ``GET /route`` answers 503 until all have.

What the emulator models: one TCP connection per node to rank 0's dist-init port (a line ``JOIN <rank>`` in, a line
``SHUTDOWN`` out), standing for the gloo/NCCL groups; not the random gloo/NCCL ports, RDMA, or weights.
"""
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

log = logging.getLogger("sglang_emulator")

# torch's default for the NCCL WORLD group when --dist-timeout is not given (seconds).
DEFAULT_DIST_TIMEOUT = 600
# SGLang's register_to_bootstrap: 5 tries about 3 s apart.
REGISTER_TRIES = 5
REGISTER_PAUSE = 3.0
DUMMY_PATHS = ("/health", "/health_generate", "/ping")


def listen_like_tcpstore(port):
    """A listening socket bound the way torch's TCPStore server binds (pytorch/pytorch#173909): the wildcard,
    never the host it was given. torch/csrc/distributed/c10d/TCPStoreLibUvBackend.cpp
    (LibUVStoreDaemon::init, tryListen): first "::" dual-stack (uv_tcp_bind without UV_TCP_IPV6ONLY, so IPv4 too),
    then "0.0.0.0"; libuv sets SO_REUSEADDR. A port another socket listens on fails both: the last error is raised."""
    error = None
    for family, host in ((socket.AF_INET6, "::"), (socket.AF_INET, "0.0.0.0")):
        try:
            sock = socket.socket(family, socket.SOCK_STREAM)
        except OSError as exc:
            error = exc
            continue
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            sock.bind((host, port))
            sock.listen(16)
            return sock
        except OSError as exc:
            sock.close()
            error = exc
    raise error


def dist_timeout(args):
    return args.dist_timeout if args.dist_timeout else DEFAULT_DIST_TIMEOUT


def world(args):
    """(world size, ranks per node): tp x pp over all nodes."""
    size = max(1, (args.tp_size or 1) * (getattr(args, "pp_size", None) or 1))
    return size, max(1, size // max(1, args.nnodes or 1))


def split_addr(addr):
    host, _sep, port = (addr or "").rpartition(":")
    return host.strip("[]"), int(port)


class Rendezvous:
    """Rank 0's side: the TCPStore on the dist-init port, the other nodes' connections, the shutdown broadcast."""

    def __init__(self, listener, args, exit_fn=os._exit):
        self.listener = listener
        self.nnodes = args.nnodes
        self.size, self.per_node = world(args)
        self.timeout = dist_timeout(args)
        self.peers = {}  # node rank -> socket
        self.lock = threading.Lock()
        self.all_in = threading.Event()
        self.stopping = False
        self.exit_fn = exit_fn

    def start(self):
        threading.Thread(target=self._accept, daemon=True, name="tcpstore").start()

    def _accept(self):
        while True:
            try:
                conn, _addr = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        try:
            line = conn.makefile("r", encoding="ascii").readline().split()
            rank = int(line[1]) if len(line) == 2 and line[0] == "JOIN" else None
        except (OSError, ValueError):
            rank = None
        if rank is None or not 0 < rank < self.nnodes:
            conn.close()  # not one of ours (a port probe): torch ignores it too
            return
        with self.lock:
            self.peers[rank] = conn
            joined = len(self.peers)
        log.info("Rendezvous: node rank %d joined (%d of %d other nodes)", rank, joined, self.nnodes - 1)
        if joined >= self.nnodes - 1:
            self.all_in.set()
        # Watch the connection: a node whose socket resets breaks the next broadcast, and this rank dies too.
        try:
            while conn.recv(64):
                pass
        except OSError:
            pass
        if not self.stopping:
            log.error("RuntimeError: [gloo] Connection closed by peer (node rank %d). Scheduler hit an exception.",
                      rank)
            log.error("Received sigquit from a child process. It usually means the child failed.")
            logging.shutdown()
            self.exit_fn(1)

    def wait(self):
        """True when every node joined within --dist-timeout; else logs torch's error and returns False."""
        if self.nnodes <= 1 or self.all_in.wait(self.timeout):
            return True
        with self.lock:
            joined = (self.per_node - 1) + self.per_node * len(self.peers)
        log.error("torch.distributed.DistStoreError: Timed out after %d seconds waiting for clients. %d/%d clients "
                  "joined.", self.timeout + 1, joined, self.size - 1)
        log.error("Received sigquit from a child process. It usually means the child failed.")
        return False

    def shutdown(self):
        """Rank 0's ShutdownReq broadcast on its way down: the other ranks exit."""
        self.stopping = True
        with self.lock:
            peers = list(self.peers.items())
        for rank, conn in peers:
            try:
                conn.sendall(b"SHUTDOWN\n")
                conn.close()
            except OSError:
                pass
            log.info("Sent ShutdownReq to node rank %d", rank)
        try:
            self.listener.close()
        except OSError:
            pass


def connect(addr, rank, timeout, clock=time.monotonic, sleep=time.sleep):
    """A rank > 0's side of the rendezvous: connect to rank 0's dist-init address, retrying until ``timeout``."""
    host, port = split_addr(addr)
    deadline = clock() + timeout
    while True:
        try:
            sock = socket.create_connection((host, port), timeout=5)
            sock.settimeout(None)
            sock.sendall(b"JOIN %d\n" % rank)
            return sock
        except OSError as exc:
            if clock() >= deadline:
                log.error("torch.distributed.DistNetworkError: The client socket has timed out after %ds while "
                          "trying to connect to (%s, %d). (%s)", timeout, host, port, exc)
                log.error("Received sigquit from a child process. It usually means the child failed.")
                return None
            sleep(0.1)


def register_prefill_ranks(addr, bootstrap_port, node_rank, per_node, env, tries=REGISTER_TRIES,
                           pause=REGISTER_PAUSE):
    """Every prefill rank of this node: ``PUT /route`` at <dist-init host>:<bootstrap port>; a failure is logged."""
    host, _port = split_addr(addr)
    url = "http://%s:%s/route" % ("[%s]" % host if ":" in host else host, bootstrap_port)
    rank_ip = env.get("SGLANG_HOST_IP") or env.get("HOST_IP") or "127.0.0.1"
    for local in range(per_node):
        engine_rank = node_rank * per_node + local
        body = json.dumps({"role": "Prefill", "rank_ip": rank_ip, "rank_port": 0,
                           "engine_rank": engine_rank}).encode()
        for attempt in range(tries):
            try:
                request = urllib.request.Request(url, data=body, method="PUT",
                                                 headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(request, timeout=5):
                    break
            except OSError as exc:
                if attempt == tries - 1:
                    log.error("Failed to register to bootstrap server %s (engine_rank %d): %s", url, engine_rank, exc)
                else:
                    time.sleep(pause)


def dummy_health_server(host, port, metrics):
    """SGLang's launch_dummy_health_check_server: /health, /health_generate, /ping 200 (+/metrics), else 404."""
    paths = DUMMY_PATHS + (("/metrics",) if metrics else ())

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_args):
            pass

        def _answer(self):
            path = self.path.split("?", 1)[0]
            status = 200 if self.command == "GET" and path in paths else 404
            body = b"" if status == 200 else b'{"detail":"Not Found"}'
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = _answer  # noqa: N815 (http.server API)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True, name="dummy-health").start()
    return server


def run_rank(args, env, started):
    """A rank > 0 process from start to exit; returns its exit status."""
    from .startup import Startup, StartupError

    rank = args.node_rank

    def on_sigterm(_signum, _frame):
        log.info("Received SIGTERM on node rank %d: ignored, waiting for the rank-0 ShutdownReq broadcast", rank)

    signal.signal(signal.SIGTERM, on_sigterm)
    if not args.dist_init_addr:
        # SGLang does not reject it: this node then rendezvouses alone at its default and waits out the timeout.
        log.error("torch.distributed.DistNetworkError: no --dist-init-addr for node rank %d", rank)
        time.sleep(dist_timeout(args))
        return 1
    sock = connect(args.dist_init_addr, rank, dist_timeout(args))
    if sock is None:
        return 1
    log.info("SGLang emulator: node rank %d of %d joined the rendezvous at %s", rank, args.nnodes,
             args.dist_init_addr)
    try:
        Startup(args, env, started).run()
    except StartupError as exc:
        log.error("Scheduler hit an exception: %s", exc)
        return 1
    _size, per_node = world(args)
    if args.disaggregation_mode == "prefill":
        threading.Thread(target=register_prefill_ranks, daemon=True,
                         args=(args.dist_init_addr, args.disaggregation_bootstrap_port, rank, per_node, env)).start()
    try:
        dummy_health_server(args.host, args.port, args.enable_metrics)
    except OSError as exc:
        log.error("Failed to start the dummy health check server on %s:%s: %s", args.host, args.port, exc)
        return 1
    log.info("Dummy health check server started on %s:%s (node rank %d)", args.host, args.port, rank)
    reader = sock.makefile("rb")
    try:
        line = reader.readline()
    except OSError:
        line = b""
    if line.strip() == b"SHUTDOWN":
        log.info("Received ShutdownReq from rank 0: node rank %d exits", rank)
        return 0
    log.error("RuntimeError: [gloo] Connection closed by peer (rank 0). Scheduler hit an exception.")
    log.error("Received sigquit from a child process. It usually means the child failed.")
    return 1


def flush_and_exit(status):
    logging.shutdown()
    sys.stdout.flush()
    os._exit(status)
