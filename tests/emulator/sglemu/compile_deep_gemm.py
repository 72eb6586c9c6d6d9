"""``python -m sglang.compile_deep_gemm <launch_server arguments> [--timeout 3600]`` as SGLang 0.5.23 runs it.

The real one starts a server with the instance's arguments (CUDA graphs and torch.compile off), sends one request and
leaves the DeepGEMM kernels in ``$SGLANG_DG_CACHE_DIR``; it needs the instance's port and GPUs. The emulator fills the
same cache (``sglemu.startup``) without serving. Where it differs: a port already in use fails at once (the real tool's
server dies on it and the tool may talk to whatever holds the port), and it does not sleep 10 s after success.
"""
import argparse
import logging
import os
import socket
import time

from . import cli
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
    print("\nDeepGEMM Kernels compilation finished successfully.", flush=True)
    return 0
