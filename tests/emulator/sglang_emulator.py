# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""GPU-free stand-in for ``python -m sglang.launch_server`` (see README.md here)."""
import logging
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sglemu import cli  # noqa: E402


def main(argv=None):
    args = cli.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper(), logging.INFO),
        format="[%(asctime)s] %(message)s", datefmt="%Y-%m-%d %H:%M:%S")
    import uvicorn

    from sglemu.app import Server, create_app
    from sglemu.startup import Startup, StartupError

    log = logging.getLogger("sglang_emulator")
    from sglemu import ranks
    if (args.nnodes or 1) > 1 and (args.node_rank or 0) > 0:
        # A rank > 0: schedulers and a dummy health server only (sglemu/ranks.py).
        from sglemu.app import process_age
        ranks.flush_and_exit(ranks.run_rank(args, dict(os.environ), time.monotonic() - process_age()))
    # SGLang's rank 0 serves the torch.distributed rendezvous (c10d's TCPStore) on the port of
    # --dist-init-addr: two servers given the same port on one host fail at startup. Hold that port
    # like it does, on every interface, whatever host the flag names.
    rendezvous = None
    if args.dist_init_addr:
        _host, _sep, port = args.dist_init_addr.rpartition(":")
        try:
            rendezvous = ranks.listen_like_tcpstore(int(port))
        except (OSError, ValueError) as exc:
            log.error("torch.distributed.DistNetworkError: The server socket has failed to listen "
                      "on any local network address. port: %s, %s (--dist-init-addr %s)",
                      port, exc, args.dist_init_addr)
            return 1
    group = None
    if (args.nnodes or 1) > 1 and rendezvous is not None:
        group = ranks.Rendezvous(rendezvous, args)
        group.start()
    server = Server(args)
    app = create_app(server)
    if group is not None:
        # On its way down (uvicorn's shutdown, after SIGTERM) rank 0 broadcasts ShutdownReq: the other ranks exit.
        app.router.on_shutdown.append(group.shutdown)
    try:
        server.start_background()
    except OSError as exc:
        log.error("Failed to start the bootstrap server on port %s: %s",
                  args.disaggregation_bootstrap_port, exc)
        return 1
    logging.getLogger("sglang_emulator").info(
        "SGLang emulator: model=%s served_model_name=%s mode=%s tp=%s port=%s",
        args.model_path, args.served_model_name, args.disaggregation_mode, args.tp_size,
        args.port)
    # init_process_group: rank 0 waits for every other node before it loads anything (--dist-timeout).
    if group is not None and not group.wait():
        return 1
    # Like SGLang, the HTTP port opens only when the engine is up: connections are refused while it loads.
    try:
        timings = Startup(args, server.env, server.started).run()
    except StartupError as exc:
        log.error("Scheduler hit an exception: %s", exc)
        log.error("Received sigquit from a child process. It usually means the child failed.")
        return 1
    server.engine_up(timings)
    warmup = threading.Thread(target=server.warmup, args=(local_url(args.host, args.port),), daemon=True)
    warmup.start()
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning",
                timeout_keep_alive=5, timeout_graceful_shutdown=1, access_log=False)
    return 0


def local_url(host, port):
    """Where the warmup reaches this server: a wildcard address is reached on loopback."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    return "http://%s:%s" % ("[%s]" % host if ":" in host else host, port)


if __name__ == "__main__":
    sys.exit(main())
