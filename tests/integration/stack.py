# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Start emulated SGLang servers and the real sglang-router on loopback, for tests and demos.

    pre = Emulator("prefill"); dec = Emulator("decode"); pre.start(); dec.start()
    router = Router(prefill=[(pre.url, pre.bootstrap_port)], decode=[dec.url]).start()
    router.wait_healthy(60)

Every process gets its own session (process group) and log file; ``stop()`` ends that group.
Both command lines come from the collection's own serving model (serving_cmdline), so the tests run
what the units run; tests add or drop flags on top of them.
"""
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The collection as scripts/setup.sh links it (pytest's pythonpath has it too).
sys.path.insert(0, os.path.join(REPO, ".cache", "collections"))

from ansible_collections.pdserve.sglang.plugins.module_utils.serving.cmdline import (  # noqa: E402
    argv as cmdline_argv,
    router_args,
    worker_lines,
    worker_set,
    server_args,
)

EMULATOR = os.path.join(REPO, "tests", "emulator", "sglang_emulator.py")
# The role's launcher: the router's keys from credential files (as systemd's LoadCredential= hands them), not argv.
LAUNCHER = os.path.join(REPO, "roles", "sglang_router", "files", "pdserve_router_launch.py")
MODEL = "deepseek-v4-flash"
MODEL_PATH = "deepseek-ai/DeepSeek-V4-Flash"
PYTHON = sys.executable
# Nothing may leave the machine: the router would fetch a tokenizer for the model path.
OFFLINE_ENV = {"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "1"}

# The router implementation the stack starts (sglang_router_implementation): PDSERVE_ROUTER_IMPLEMENTATION=smg runs a
# test module behind smg instead of sglang-router; Router(implementation=...) picks one for a single router.
ROUTER_IMPLEMENTATION = os.environ.get("PDSERVE_ROUTER_IMPLEMENTATION", "sglang-router")
ROUTER_PACKAGES = {"sglang-router": "sglang_router", "smg": "smg"}

_given_ports = set()


def free_port():
    """A free TCP port on 127.0.0.1 (not handed out before by this process)."""
    for dummy_attempt in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port not in _given_ports:
            _given_ports.add(port)
            return port
    raise RuntimeError("no free port found")


def merge_args(defaults, overrides=(), drop=()):
    """Command-line merge: ``overrides`` replace same-named flags of ``defaults`` (or are
    appended); flags named in ``drop`` are removed. A flag's values are the tokens up to the
    next ``--flag``."""
    def groups(argv):
        out = []
        for token in argv:
            token = str(token)
            if token.startswith("--"):
                out.append([token])
            elif out:
                out[-1].append(token)
            else:
                raise ValueError("argument %r does not follow a --flag" % token)
        return out

    merged = groups(defaults)
    for group in groups(overrides):
        for i, existing in enumerate(merged):
            if existing[0] == group[0]:
                merged[i] = group
                break
        else:
            merged.append(group)
    drop = set(drop)
    return [token for group in merged if group[0] not in drop for token in group]


def http_get(url, timeout=2.0, headers=None, context=None):
    """(status, body text); status 0 when the connection fails (``context``: the SSL context of an https:// URL)."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=timeout,
                                    context=context) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")
    except (OSError, ValueError):
        return 0, ""


class _Process:
    name = "process"

    def __init__(self, env=None):
        self.env = dict(env or {})
        self.proc = None
        self.log_path = None
        self._log = None

    def command(self):
        raise NotImplementedError

    def start(self):
        if self.proc is not None:
            raise RuntimeError("%s already started" % self.name)
        env = dict(os.environ)
        env.update(OFFLINE_ENV)
        env.update(self.env)
        fd, self.log_path = tempfile.mkstemp(prefix="pdserve-%s-" % self.name, suffix=".log")
        self._log = os.fdopen(fd, "wb")
        self.proc = subprocess.Popen(self.command(), stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env, cwd=REPO,
                                     start_new_session=True)
        return self

    def stop(self, timeout=10):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(timeout)
        if self._log is not None:
            self._log.close()
            self._log = None

    def log_tail(self, lines=40):
        if not self.log_path or not os.path.exists(self.log_path):
            return ""
        with open(self.log_path, "rb") as handle:
            text = handle.read().decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-lines:])

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def _ready_now(self):
        raise NotImplementedError

    def wait_healthy(self, timeout=60.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError("%s exited with %s before it was healthy:\n%s"
                                   % (self.name, self.proc.returncode, self.log_tail()))
            if self._ready_now():
                return self
            time.sleep(0.1)
        raise TimeoutError("%s not healthy after %ss:\n%s"
                           % (self.name, timeout, self.log_tail()))

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class Emulator(_Process):
    """An emulated ``sglang.launch_server`` in mode prefill, decode or null."""

    def __init__(self, mode, port=None, bootstrap_port=None, args=(), env=None, drop=()):
        super().__init__(env)
        self.mode = mode
        self.name = "emulator-%s" % mode
        self.port = port or free_port()
        self.bootstrap_port = bootstrap_port or (free_port() if mode == "prefill" else None)
        self.host = "127.0.0.1"
        instance = {"mode": mode, "host": self.host, "port": self.port, "tp_size": 1,
                    "bootstrap_port": self.bootstrap_port, "dist_init_port": None, "extra_args": []}
        model = {"model_path": MODEL_PATH, "served_model_name": MODEL, "transfer_backend": "nixl",
                 "reasoning_parser": "deepseek-v4", "tool_call_parser": "deepseekv4",
                 "extra_args": ["--log-level", "warning"]}
        defaults = cmdline_argv(server_args(instance, model))
        self.args = merge_args(defaults, args, drop)
        # SGLang's PD timeouts default to 300 s; the tests' stacks use 10 s, as a deployment sets them (the
        # sglang_server role's sglang_server_disaggregation_*_timeout), unless the test chooses them.
        for name in ("SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT", "SGLANG_DISAGGREGATION_WAITING_TIMEOUT"):
            self.env.setdefault(name, "10")
        # Compile caches of its own, as the role gives every instance (never the tester's ~/.cache/sglang),
        # unless the test chooses them.
        self.cache_dir = None
        if not {"HOME", "SGLANG_CACHE_DIR", "SGLANG_JIT_CACHE_DIR"} & set(self.env):
            self.cache_dir = tempfile.mkdtemp(prefix="pdserve-emulator-cache-")
            self.env.update(SGLANG_CACHE_DIR=self.cache_dir,
                            SGLANG_JIT_CACHE_DIR=os.path.join(self.cache_dir, "jit"))

    def stop(self, timeout=10):
        super().stop(timeout)
        if self.cache_dir is not None:
            shutil.rmtree(self.cache_dir, ignore_errors=True)

    @property
    def url(self):
        return "http://%s:%s" % (self.host, self.port)

    def command(self):
        return [PYTHON, EMULATOR] + self.args

    def _ready_now(self):
        return http_get(self.url + "/health", timeout=1.0)[0] == 200


class Router(_Process):
    """The real router in PD mode: sglang-router 0.3.2 or smg 1.13 (``implementation``)."""

    name = "router"

    def __init__(self, prefill, decode, args=(), env=None, port=None, prometheus_port=None,
                 drop=(), api_key=None, control_plane_api_key=None, tls=None, implementation=None):
        super().__init__(env)
        self.implementation = implementation or ROUTER_IMPLEMENTATION
        # Keys (and the TLS certificate and key: ``tls`` = (PEM text, PEM text, CA path)) go the way the unit passes
        # them: files in a credentials directory, read by the launcher.
        self.api_key = api_key
        self.control_plane_api_key = control_plane_api_key
        self.ca_path = tls[2] if tls else None
        self.launcher_args = []
        cert, key = (tls[0], tls[1]) if tls else (None, None)
        if api_key or control_plane_api_key or tls:
            directory = tempfile.mkdtemp(prefix="pdserve-router-credentials-")
            for option, name, value in (("--api-key-credential", "router-api-key", api_key),
                                        ("--control-plane-api-key-credential", "router-control-plane-api-key",
                                         control_plane_api_key),
                                        ("--tls-cert-credential", "router-tls-cert", cert),
                                        ("--tls-key-credential", "router-tls-key", key)):
                if value:
                    with open(os.path.join(directory, name), "w") as handle:
                        handle.write(value)
                    self.launcher_args += [option, name]
            self.env["CREDENTIALS_DIRECTORY"] = directory
        self.prefill = list(prefill)
        self.decode = list(decode)
        self.port = port or free_port()
        self.prometheus_port = prometheus_port or free_port()
        self.host = "127.0.0.1"
        router = {"host": self.host, "port": self.port, "prometheus_host": "127.0.0.1",
                  "prometheus_port": self.prometheus_port}
        workers = {"prefill": [{"url": url, "bootstrap_port": port} for url, port in self.prefill],
                   "decode": [{"url": url} for url in self.decode]}
        # Short intervals so tests see workers come and go within seconds.
        settings = {"health_check_interval_secs": 1, "worker_startup_check_interval": 1,
                    "worker_startup_timeout_secs": 60, "log_level": "warn",
                    "extra_args": ["--shutdown-grace-period-secs", "1"]}
        # Through the launcher (as the unit starts it) the workers come from a worker set file; without it, on the
        # command line the launcher would build.
        if self.launcher_args:
            self.launcher_args = ["--implementation", self.implementation] + self.launcher_args
        if self.launcher_args:
            self.workers_file = os.path.join(self.env["CREDENTIALS_DIRECTORY"], "workers.json")
            self.write_workers(workers)
            self.launcher_args += ["--workers-file", self.workers_file]
            self.args = merge_args(cmdline_argv(router_args(router, settings)), args, drop)
        else:
            self.workers_file = None
            self.args = merge_args(cmdline_argv(router_args(router, settings) + worker_lines(workers)), args, drop)

    def write_workers(self, workers):
        """Write the worker set file the launcher reads at the router's next start."""
        with open(self.workers_file, "w") as handle:
            json.dump(worker_set(workers), handle)

    @property
    def url(self):
        return "%s://%s:%s" % ("https" if self.ca_path else "http", self.host, self.port)

    def _context(self):
        return ssl.create_default_context(cafile=self.ca_path) if self.ca_path else None

    @property
    def metrics_url(self):
        return "http://127.0.0.1:%s/metrics" % self.prometheus_port

    def command(self):
        if self.launcher_args:
            return [PYTHON, LAUNCHER] + self.launcher_args + ["--"] + self.args
        return [PYTHON, "-m", "%s.launch_router" % ROUTER_PACKAGES[self.implementation]] + self.args

    def workers(self):
        key = self.control_plane_api_key or self.api_key
        status, text = http_get(self.url + "/workers", headers={"Authorization": "Bearer " + key} if key else None,
                                context=self._context())
        if status != 200:
            return None
        try:
            return json.loads(text)
        except ValueError:
            return None

    def _ready_now(self):
        """Ready: /readiness answers 200 (the router has healthy prefill and decode workers)."""
        return http_get(self.url + "/readiness", timeout=1.0, context=self._context())[0] == 200


class PDStack:
    """Prefill + decode emulators and (optionally) the router in front of them."""

    model = MODEL

    def __init__(self, prefill_args=(), decode_args=(), prefill_env=None, decode_env=None,
                 router_args=(), router=True, prefill_drop=(), decode_drop=(), router_drop=(),
                 drop=(), router_bootstrap_port=None):
        self.prefill = Emulator("prefill", args=prefill_args, env=prefill_env,
                                drop=tuple(drop) + tuple(prefill_drop))
        self.decode = Emulator("decode", args=decode_args, env=decode_env,
                               drop=tuple(drop) + tuple(decode_drop))
        self.router = None
        if router:
            self.router = Router(
                prefill=[(self.prefill.url, router_bootstrap_port or self.prefill.bootstrap_port)],
                decode=[self.decode.url], args=router_args, drop=router_drop)

    @property
    def router_url(self):
        return self.router.url if self.router else None

    def start(self, timeout=60.0, wait_router=True):
        try:
            self.prefill.start()
            self.decode.start()
            if self.router:
                self.router.start()
            self.prefill.wait_healthy(timeout)
            self.decode.wait_healthy(timeout)
            if self.router and wait_router:
                self.router.wait_healthy(timeout)
        except Exception:
            self.stop()
            raise
        return self

    def stop(self):
        for proc in (self.router, self.decode, self.prefill):
            if proc is not None:
                proc.stop()

    def logs(self):
        parts = []
        for proc in (self.prefill, self.decode, self.router):
            if proc is not None:
                parts.append("---- %s ----\n%s" % (proc.name, proc.log_tail()))
        return "\n".join(parts)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


# ---- small OpenAI client helpers (stdlib only) -------------------------------------------------

def call(url, method="GET", key=None, body=None):
    """(status, body text) of one request with an optional bearer key and JSON body; HTTP errors are answers too."""
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    data = json.dumps(body).encode() if body is not None else None
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers, method=method),
                                    timeout=30) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def post_json(url, body, timeout=30.0, headers=None):
    """POST JSON; returns (status, parsed body or text, response headers)."""
    data = json.dumps(body).encode()
    hdrs = {"Content-Type": "application/json"}
    hdrs.update(headers or {})
    req = urllib.request.Request(url, data=data, headers=hdrs, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, raw, rh = resp.status, resp.read(), dict(resp.headers)
    except urllib.error.HTTPError as exc:
        status, raw, rh = exc.code, exc.read(), dict(exc.headers)
    text = raw.decode("utf-8", "replace")
    try:
        return status, json.loads(text), rh
    except ValueError:
        return status, text, rh


def post_sse(url, body, timeout=30.0):
    """POST a streaming request; returns (status, [event payloads], saw_done).

    Payloads are parsed JSON objects; ``saw_done`` is True when ``data: [DONE]`` ended the
    stream. A non-200 answer returns its body as the only event."""
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        resp = urllib.request.urlopen(req, timeout=timeout)
    except urllib.error.HTTPError as exc:
        text = exc.read().decode("utf-8", "replace")
        try:
            return exc.code, [json.loads(text)], False
        except ValueError:
            return exc.code, [text], False
    events, done = [], False
    with resp:
        for raw in resp:
            line = raw.decode("utf-8").strip()
            if not line.startswith("data:"):
                continue
            payload = line[len("data:"):].strip()
            if payload == "[DONE]":
                done = True
                break
            events.append(json.loads(payload))
        return resp.status, events, done


def assemble_stream(events):
    """Fold chat.completion.chunk deltas into one message:
    {"role", "content", "reasoning_content", "tool_calls": [...], "finish_reason", "errors"}."""
    msg = {"role": None, "content": "", "reasoning_content": "", "tool_calls": [],
           "finish_reason": None, "errors": []}
    calls = {}
    for event in events:
        if not isinstance(event, dict):
            msg["errors"].append(event)
            continue
        if "error" in event:
            msg["errors"].append(event["error"])
            continue
        for choice in event.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("role"):
                msg["role"] = delta["role"]
            msg["content"] += delta.get("content") or ""
            msg["reasoning_content"] += delta.get("reasoning_content") or ""
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(call["index"], {"id": None, "type": None,
                                                        "function": {"name": "",
                                                                     "arguments": ""}})
                if call.get("id"):
                    slot["id"] = call["id"]
                if call.get("type"):
                    slot["type"] = call["type"]
                function = call.get("function") or {}
                slot["function"]["name"] += function.get("name") or ""
                slot["function"]["arguments"] += function.get("arguments") or ""
            if choice.get("finish_reason"):
                msg["finish_reason"] = choice["finish_reason"]
    msg["tool_calls"] = [calls[i] for i in sorted(calls)]
    return msg


def metric_samples(text, name):
    """Samples of one metric in a Prometheus text exposition: [(labels dict, value)]."""
    out = []
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        rest = line[len(name):]
        labels = {}
        if rest.startswith("{"):
            body, dummy_brace, rest = rest[1:].partition("}")
            for key, value in re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', body):
                labels[key] = value
        elif not rest.startswith(" "):
            continue  # a longer metric name with the same prefix
        out.append((labels, float(rest.split()[0])))
    return out
