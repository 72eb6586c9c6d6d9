"""A server's start as SGLang 0.5.23 runs it: phases, compile caches, log lines, start-up gauges.

What the wheel does (paths inside sglang 0.5.23):
- ``Engine._launch_subprocesses`` loads the weights (``Load weight begin/end``; DeepGEMM's pre-compile runs inside
  ``load_model``, so its time counts as ``load_weight``), allocates the KV pool (``Memory pool end``), captures CUDA
  graphs, then logs ``Engine startup timings (s): ...`` (``entrypoints/engine.py``) and sets the gauges
  ``sglang:startup_time_seconds{phase}`` and ``sglang:startup_cuda_graph_time_seconds{phase}``. Only then does
  the HTTP port open; the warmup request follows with ``/health`` at 503 until ``fired up``.
- ``Setting startup metric: ...`` and ``sglang:startup_latency_breakdown_seconds_max`` exist
  (``observability/startup_func_log_and_timer.py``) but nothing in 0.5.23 calls them: neither appears.
- Caches: ``SGLANG_CACHE_DIR`` (default ``~/.cache/sglang``); ``SGLANG_DG_CACHE_DIR`` (default
  ``$SGLANG_CACHE_DIR/deep_gemm``); ``SGLANG_JIT_CACHE_DIR`` (default literally ``~/.cache/sglang/jit``, it does not
  follow ``SGLANG_CACHE_DIR``: ``kernels/jit/utils/compile/cache.py``).
- DeepGEMM pre-compile (``SGLANG_JIT_DEEPGEMM_PRECOMPILE``, default on) takes a per-kernel-group ``flock`` in
  ``$SGLANG_DG_CACHE_DIR/locks`` (``layers/deep_gemm_wrapper/compile_utils.py``); without it (or for groups
  another process is not compiling) two processes compile into one directory at once, and DeepGEMM treats the
  other's ``tmp`` directory (EEXIST) as fatal (sglang#27604). SGLang's own JIT cache publishes by rename and
  survives a race.
"""
import fcntl
import hashlib
import logging
import os
import sys
import time
import uuid
import zlib

log = logging.getLogger("sglang_emulator")

# DeepSeek-V3/V4-like GEMM groups (kernel type, N, K, num_groups); column-parallel N is split by TP.
_SHAPES = (("GEMM_NT_F8F8BF16", 24576, 1536, 1, True), ("GEMM_NT_F8F8BF16", 7168, 16384, 1, False),
           ("GROUPED_GEMM_NT_F8F8BF16_CONTIG", 4096, 7168, 256, True),
           ("GROUPED_GEMM_NT_F8F8BF16_MASKED", 7168, 2048, 256, False))
JIT_MODULE = "fast_hadamard_transform"  # the DSA indexer's JIT kernel
# The emulated host: one architecture (DeepGEMM runs on sm_90 and sm_100).
ARCH = "sm_90a"
GRAPH_PHASES = ("prefill", "decode", "target_verify", "draft_prefill", "draft_decode", "draft_extend")
ENGINE_PHASES = ("load_weight", "kv_cache_allocation", "scheduler_e2e", "tokenizer_e2e")


class StartupError(Exception):
    """A start that dies: the message is what SGLang's log would end with."""


def _float(env, name, default=0.0):
    value = env.get(name)
    return default if value in (None, "") else float(value)


def _enabled(env, name, default):
    value = (env.get(name) or "").lower()
    if value in ("1", "true", "yes", "y"):
        return True
    if value in ("0", "false", "no", "n"):
        return False
    return default


class Caches:
    """The cache directories a process with ``env`` uses, resolved as 0.5.23 resolves them."""

    def __init__(self, env):
        self.home = env.get("HOME") or os.path.expanduser("~")
        base = env["SGLANG_CACHE_DIR"] if "SGLANG_CACHE_DIR" in env else "~/.cache/sglang"
        self.base = self._expand(base)
        dg = env.get("SGLANG_DG_CACHE_DIR")
        self.deep_gemm = self._expand(dg) if dg is not None else os.path.join(self.base, "deep_gemm")
        # `or`: an empty SGLANG_JIT_CACHE_DIR is unset; never $SGLANG_CACHE_DIR/jit.
        self.jit = self._expand(env.get("SGLANG_JIT_CACHE_DIR") or "~/.cache/sglang/jit")

    def _expand(self, path):
        if path == "~" or path.startswith("~/"):
            return self.home + path[1:]
        return path


def kernel_groups(args):
    """The DeepGEMM kernel groups a command line needs: they follow the model and the TP split."""
    shift = 128 * (zlib.crc32((args.model_path or "").encode()) % 8)
    groups = []
    for kind, n, k, num_groups, split in _SHAPES:
        n = max(128, (n + shift) // (args.tp_size if split else 1))
        groups.append((kind, n, k, num_groups))
    return groups


def _key(*parts):
    return hashlib.sha256("\0".join(str(p) for p in parts).encode()).hexdigest()[:16]


class Compiler:
    """Fills (or finds) the DeepGEMM and JIT caches for one command line."""

    def __init__(self, args, env, compile_time, precompile_stage=False):
        self.args = args
        self.caches = Caches(env)
        self.precompile = _enabled(env, "SGLANG_JIT_DEEPGEMM_PRECOMPILE", True)
        self.precompile_stage = precompile_stage  # python -m sglang.compile_deep_gemm
        self.groups = kernel_groups(args)
        # A fully cold start compiles every group and the JIT module: the time is shared between them.
        self.share = compile_time / (len(self.groups) + 1)
        self.compiled = []
        self.seconds = 0.0

    def group_dir(self, group):
        # DeepGEMM's keys embed absolute include paths (vllm-project/vllm#48190): a new venv misses. The emulator
        # takes that worse case: the venv (sys.prefix) is part of the key.
        kind, n, k, num_groups = group
        return os.path.join(self.caches.deep_gemm, "cache",
                            "kernel.%s.%s" % (kind.lower(), _key(kind, n, k, num_groups, ARCH, sys.prefix)))

    def cached(self):
        """(groups cached, groups needed, JIT module cached)."""
        hits = sum(os.path.isfile(os.path.join(self.group_dir(g), "kernel.cubin")) for g in self.groups)
        return hits, len(self.groups), os.path.isdir(self.jit_leaf())

    def jit_leaf(self):
        build = _key(JIT_MODULE, ARCH, sys.prefix)
        return os.path.join(self.caches.jit, ARCH, JIT_MODULE, "build-" + build, "deps-" + build)

    def run(self):
        """Compile what is missing; returns the seconds spent. Raises StartupError as SGLang would die."""
        tic = time.monotonic()
        try:
            self._jit_module()
            if not self.precompile_stage and self.precompile:
                log.warning(
                    "Entering DeepGEMM JIT Pre-Compile session. It may take a long time (typically 10-20 mins) "
                    "if you have not run `sglang.compile_deep_gemm`. It is recommended to run "
                    "`sglang.compile_deep_gemm` with same args as `sglang.launch_server` for pre-compilation to "
                    "reduce the overhead if you have not run it before. For example: `python3 -m "
                    "sglang.compile_deep_gemm --model deepseek-ai/DeepSeek-V3 --tp 8 --trust-remote-code`")
            for group in self.groups:
                self._group(group, locked=self.precompile or self.precompile_stage)
        except OSError as exc:
            raise StartupError("%s: %s" % (type(exc).__name__, exc)) from exc
        self.seconds = time.monotonic() - tic
        return self.seconds

    def _jit_module(self):
        leaf = self.jit_leaf()
        if os.path.isdir(leaf):
            return
        staging = os.path.join(os.path.dirname(leaf), ".staging-%s" % uuid.uuid4().hex)
        os.makedirs(staging)
        time.sleep(self.share)
        with open(os.path.join(staging, JIT_MODULE + ".so"), "w", encoding="ascii") as handle:
            handle.write("emulated\n")
        try:
            os.rename(staging, leaf)  # atomic; losing the race means another process built it
            self.compiled.append(JIT_MODULE)
        except OSError:
            for name in os.listdir(staging):
                os.unlink(os.path.join(staging, name))
            os.rmdir(staging)

    def _group(self, group, locked):
        kind, n, k, num_groups = group
        log.info("Try DeepGEMM JIT Compiling for <%s> N=%s, K=%s, num_groups=%s with all Ms.%s",
                 kind, n, k, num_groups,
                 "" if self.precompile_stage else " It only takes a little time (typically 1 sec) if you have "
                 "run `python3 -m sglang.compile_deep_gemm`. ")
        if not locked:
            self._compile(group)
            return
        locks = os.path.join(self.caches.deep_gemm, "locks")
        os.makedirs(locks, exist_ok=True)
        with open(os.path.join(locks, "%s_n%s_k%s_g%s.lock" % group), "w", encoding="ascii") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                self._compile(group)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _compile(self, group):
        final = self.group_dir(group)
        if os.path.isfile(os.path.join(final, "kernel.cubin")):
            return
        os.makedirs(self.caches.deep_gemm, exist_ok=True)
        tmp = os.path.join(self.caches.deep_gemm, "tmp")
        os.mkdir(tmp)  # DeepGEMM's: another process compiling here at the same time -> FileExistsError
        try:
            time.sleep(self.share)
            with open(os.path.join(tmp, "kernel.cubin"), "w", encoding="ascii") as handle:
                handle.write("emulated %s\n" % (group,))
            os.makedirs(os.path.dirname(final), exist_ok=True)
            os.makedirs(final, exist_ok=True)
            os.replace(os.path.join(tmp, "kernel.cubin"), os.path.join(final, "kernel.cubin"))
            self.compiled.append(group)
        finally:
            try:
                os.rmdir(tmp)
            except OSError:
                pass

    def summary(self):
        """The emulator's own line about the caches (SGLang says nothing like it: judge warmth by the directory)."""
        hits, needed, jit = self.cached()
        return ("SGLang emulator: compile caches %s: compiled %d of %d DeepGEMM kernel groups and %d JIT module "
                "in %.2f s (deep_gemm=%s, jit=%s, all cached now: %s)"
                % ("cold" if self.compiled else "warm", sum(1 for c in self.compiled if c != JIT_MODULE), needed,
                   int(JIT_MODULE in self.compiled), self.seconds, self.caches.deep_gemm, self.caches.jit,
                   hits == needed and jit))


class Startup:
    """The phases before the port opens: weights (with the DeepGEMM pre-compile), KV pool, CUDA graphs."""

    def __init__(self, args, env, started, sleep=time.sleep, clock=time.monotonic):
        self.args = args
        self.env = env
        self.started = started  # monotonic time of the process start
        self.load_delay = _float(env, "SGLANG_EMULATOR_LOAD_DELAY")
        self.compile_time = _float(env, "SGLANG_EMULATOR_COMPILE_TIME")
        self.graph_time = 0.0 if args.disable_cuda_graph else _float(env, "SGLANG_EMULATOR_CUDA_GRAPH_TIME")
        self.sleep = sleep
        self.clock = clock
        self.compiler = Compiler(args, env, self.compile_time)
        self.timings = None

    def weights_ready_at(self):
        """Weights are loaded SGLANG_EMULATOR_LOAD_DELAY after the process started (imports included)."""
        return self.started + self.load_delay

    def run(self):
        engine_tic = self.clock()
        log.info("Load weight begin. avail mem=79.11 GB")
        self.sleep(max(0.0, self.weights_ready_at() - self.clock()))
        self.compiler.run()  # inside load_model in 0.5.23: its time is load_weight's
        load_weight = self.clock() - engine_tic
        log.info("Load weight end. elapsed=%.2f s, type=DeepseekV4ForCausalLM, avail mem=41.17 GB, "
                 "mem usage=37.94 GB.", load_weight)
        log.info(self.compiler.summary())
        tic = self.clock()
        log.info("Memory pool end. avail mem=7.62 GB")
        kv = self.clock() - tic
        graphs = dict.fromkeys(GRAPH_PHASES, 0.0)
        if not self.args.disable_cuda_graph:
            role = "decode" if self.args.disaggregation_mode != "prefill" else "prefill"
            log.info("Capture target %s CUDA graph begin. avail mem=7.60 GB", role)
            tic = self.clock()
            self.sleep(self.graph_time)
            graphs[role] = self.clock() - tic
            log.info("Capture target %s CUDA graph end. elapsed=%.2f s, mem usage=0.61 GB, avail mem=6.99 GB.",
                     role, graphs[role])
        end = self.clock()
        self.timings = {"load_weight": load_weight, "kv_cache_allocation": kv,
                        "scheduler_e2e": end - engine_tic, "tokenizer_e2e": end - engine_tic,
                        "cuda_graph": graphs}
        log.info("Engine startup timings (s): load_weight=%.2f, kv_cache_allocation=%.2f, scheduler_e2e=%.2f, "
                 "cuda_graph={%s}, tokenizer_e2e=%.2f", load_weight, kv, self.timings["scheduler_e2e"],
                 ", ".join("%s=%.2f" % item for item in graphs.items()), self.timings["tokenizer_e2e"])
        return self.timings
