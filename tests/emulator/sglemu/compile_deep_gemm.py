"""``python -m sglang.compile_deep_gemm <launch_server arguments> [--timeout 3600]`` as SGLang 0.5.23 runs it.

The real one starts a server with the instance's arguments (CUDA graphs and torch.compile off), sends one request and
leaves the DeepGEMM kernels in ``$SGLANG_DG_CACHE_DIR``; it needs the instance's port and GPUs. The emulator fills the
same cache (``sglemu.startup``) without serving. Over several nodes (``--nnodes``) each node runs its own rank's tool
with the same arguments but ``--node-rank``, and they meet as the server's ranks do (``sglemu.ranks``; the tool
"handles multi-node (rank 0 waits for the others)": shared/research/startup-caches.md, Precompiling): rank 0 holds the
dist-init port and waits for every other rank within ``--dist-timeout`` before it compiles (a rank that never comes fails
it, as torch's store times out), a rank > 0 compiles once joined and exits on rank 0's broadcast when rank 0 is done.
Where it differs: a port already in use fails at once (the real tool's server dies on it and the tool may talk to
whatever holds the port), and it does not sleep 10 s after success.
"""
import argparse
import logging
import os
import socket
import time

from . import cli, ranks
from .startup import Compiler, StartupError

log = logging.getLogger("sglang_emulator")


def build_parser():
    parser = argparse.ArgumentParser(prog="sglang.compile_deep_gemm")
    cli.add_arguments(parser)
    parser.set_defaults(**cli.DEFAULTS)
    parser.add_argument("--timeout", type=int, default=3600)
    return parser


def _port_free(host, port):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        # As uvicorn binds (asyncio's reuse_address): connections of the stopped server left in TIME_WAIT do not hold
        # the port, a listener does.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            return exc
    return None


def main(argv=None, env=None):
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(message)s", datefmt="%Y-%m-%d %H:%M:%S")
    env = dict(os.environ if env is None else env)
    print("Disable CUDA Graph and Torch Compile to save time...")
    print("Begin DeepGEMM Kernels compilation...\nIt may take a long time and timeout maybe raised while the "
          "compilation is still in progress.\nJust feel free to restart the command until the compilation is "
          "fully finished.\n", flush=True)
    busy = _port_free(args.host, args.port)
    if busy is not None:
        # uvicorn's wording; compiling needs the instance's port and GPUs: a stopped or drained instance
        log.error("[Errno %s] error while attempting to bind on address ('%s', %s): %s", busy.errno, args.host,
                  args.port, (busy.strerror or str(busy)).lower())
        return 1
    group = _meet(args)
    if group is False:
        return 1
    try:
        return _compile(args, env, group)
    finally:
        if isinstance(group, ranks.Rendezvous):
            group.shutdown()


def _meet(args):
    """Over several nodes: rank 0's Rendezvous once every rank joined, a rank > 0's socket to it once it joined; None on
    one node; False when the ranks did not meet (logged)."""
    if (args.nnodes or 1) <= 1:
        return None
    if not args.dist_init_addr:
        log.error("torch.distributed.DistNetworkError: no --dist-init-addr for node rank %d", args.node_rank or 0)
        return False
    if args.node_rank:
        sock = ranks.connect(args.dist_init_addr, args.node_rank, ranks.dist_timeout(args))
        return sock if sock is not None else False
    _host, port = ranks.split_addr(args.dist_init_addr)
    try:
        listener = ranks.listen_like_tcpstore(port)
    except OSError as exc:
        log.error("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
                  "address. port: %s, %s (--dist-init-addr %s)", port, exc, args.dist_init_addr)
        return False
    group = ranks.Rendezvous(listener, args, exit_fn=os._exit)
    group.start()
    if not group.wait():
        group.shutdown()
        return False
    return group


def _compile(args, env, group):
    compile_time = float(env.get("SGLANG_EMULATOR_COMPILE_TIME") or 0.0)
    compiler = Compiler(args, env, compile_time, precompile_stage=True)
    hits, needed, _jit = compiler.cached()
    if compile_time * (needed - hits) / (needed + 1) > args.timeout:
        time.sleep(args.timeout)
        log.error("TimeoutError: DeepGEMM Kernels compilation timeout.\n\nFeel free and please restart the command.")
        return 1
    try:
        compiler.run()
    except StartupError as exc:
        log.error("Scheduler hit an exception: %s", exc)
        return 1
    print("\nGenerate warm up request for compiling DeepGEMM...\n")
    log.info(compiler.summary())
    if group is not None and not isinstance(group, ranks.Rendezvous):
        # A rank > 0 leaves when rank 0 is done (its broadcast), as the server's ranks do.
        line = b""
        try:
            line = group.makefile("rb").readline()
        except OSError:
            pass
        if line.strip() != b"SHUTDOWN":
            log.error("RuntimeError: [gloo] Connection closed by peer (rank 0). Scheduler hit an exception.")
            return 1
    print("\nDeepGEMM Kernels compilation finished successfully.", flush=True)
    return 0
