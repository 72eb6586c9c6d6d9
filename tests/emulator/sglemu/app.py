"""The HTTP API of an SGLang server (FastAPI + uvicorn, like SGLang's http_server.py)."""
import asyncio
import collections
import json
import logging
import os
import threading
import time
import urllib.request
import uuid

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from . import bootstrap, model, parsers
from .metrics import Metrics

log = logging.getLogger("sglang_emulator")
VERSION = "0.5.23"
# Model-behaviour knobs: set on the prefill they travel with the request state to the decode
# server (the decode server's own settings win).
# Faults the admin endpoint POST /emulator/faults can queue (emulator-only; SGLang has no such endpoint).
FAULT_KINDS = ("kv_transfer", "bootstrap")
MODEL_KNOBS = ("SGLANG_EMULATOR_TOOL_ARGS", "SGLANG_EMULATOR_TOOL_NAME",
               "SGLANG_EMULATOR_TOOL_FORMAT", "SGLANG_EMULATOR_IGNORE_THINKING")


def env_bool(env, name, default):
    """A boolean variable read the way SGLang 0.5.23's ``EnvBool`` reads it (srt/environ.py):
    true/1/yes/y and false/0/no/n in any case; unset -> ``default``; any other value (the empty
    string too) -> a warning and ``default``."""
    value = env.get(name)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in ("true", "1", "yes", "y"):
        return True
    if lowered in ("false", "0", "no", "n"):
        return False
    log.warning('Invalid value for %s: "%s" is not a valid boolean value, using default "%s"',
                name, lowered, default)
    return default


def process_age():
    """Seconds since this process started (/proc), so a start's imports count as SGLang's do; 0 off Linux."""
    try:
        with open("/proc/self/stat", encoding="ascii") as handle:
            start_ticks = float(handle.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime", encoding="ascii") as handle:
            uptime = float(handle.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


def env_int(env, name, default):
    """An integer variable read the way SGLang 0.5.23's ``EnvInt`` reads it: unset -> ``default``; a value
    that is not an integer -> a warning and ``default``."""
    value = env.get(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        log.warning('Invalid value for %s: "%s" is not a valid integer value, using default "%s"',
                    name, value, default)
        return default


def env_float(env, name, default):
    value = env.get(name)
    if value in (None, ""):
        return default
    return float(value)


def error_body(message, status, err_type=None, param=None):
    if err_type is None:
        err_type = {400: "BadRequestError", 401: "AuthenticationError", 404: "NotFoundError",
                    503: "ServiceUnavailableError"}.get(status, "InternalServerError")
    return {"object": "error", "message": message, "type": err_type, "param": param,
            "code": status}


def error_response(message, status=400, err_type=None, param=None):
    """OpenAI-shaped error as SGLang's create_error_response writes it."""
    return JSONResponse(error_body(message, status, err_type, param), status_code=status)


def sse(payload):
    return "data: %s\n\n" % json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def _first(value):
    if isinstance(value, list):
        return value[0] if value else None
    return value


class Flight:
    """One request on this server, from admission to its last byte."""

    def __init__(self, streaming):
        self.streaming = streaming
        self.t_start = time.monotonic()
        self.tokens = 0
        self.failed = False


class Server:
    """One emulated SGLang server process."""

    def __init__(self, args, env=None):
        self.args = args
        self.env = dict(os.environ if env is None else env)
        self.mode = args.disaggregation_mode
        self.fake_transfer = args.disaggregation_transfer_backend == "fake"
        # A server's time to ready runs from its process start: the emulator's own imports are part of the delay.
        self.started = time.monotonic() - process_age()
        self.never_ready = self.env.get("SGLANG_EMULATOR_NEVER_READY") == "1"
        self.hang = self.env.get("SGLANG_EMULATOR_HANG") == "1"
        self.fail_5xx = self.env.get("SGLANG_EMULATOR_FAIL_5XX") == "1"
        # SGLang's PD timeouts (srt/environ.py), same names and defaults. The prefill fails a request whose
        # decode has not bootstrapped it within BOOTSTRAP_TIMEOUT; the decode fails one whose KV has not come
        # within WAITING_TIMEOUT, or at once when its heartbeat loses the prefill (HEARTBEAT_INTERVAL, at least
        # 2 s, times HEARTBEAT_MAX_FAILURE, at least 1).
        self.bootstrap_timeout = env_int(self.env, "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT", 300)
        self.waiting_timeout = env_int(self.env, "SGLANG_DISAGGREGATION_WAITING_TIMEOUT", 300)
        self.prefills = bootstrap.PrefillTable(
            max(env_float(self.env, "SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL", 5.0), 2.0),
            max(env_int(self.env, "SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE", 2), 1))
        self.token_delay = env_float(self.env, "SGLANG_EMULATOR_TOKEN_DELAY", 0.002)
        self.health_timeout = env_float(self.env, "SGLANG_HEALTH_CHECK_TIMEOUT", 20.0)
        # 0.5.23: /health generates one token unless this is false (default true).
        self.health_generates = env_bool(self.env, "SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION",
                                         True)
        self.log_requests = self.env.get("SGLANG_EMULATOR_LOG_REQUESTS") == "1"
        self.knobs = {k: self.env[k] for k in MODEL_KNOBS if self.env.get(k)}
        engine = {"prefill": "prefill", "decode": "decode"}.get(self.mode, "unified")
        self.metrics = Metrics(args.served_model_name, engine)
        self.max_total_tokens = int(env_float(self.env, "SGLANG_EMULATOR_MAX_TOTAL_TOKENS", 65536))
        self.metrics.set("sglang:max_total_num_tokens", self.max_total_tokens)
        self.metrics.set("sglang:context_len", args.context_length)
        self.metrics.set("sglang:page_size", args.page_size or 1)
        self.pending_faults = {}
        self._fault_lock = threading.Lock()
        self._flights = set()
        self._flights_lock = threading.Lock()
        self._prefix_cache = collections.OrderedDict()
        self._recent = collections.deque(maxlen=32)  # (cached, prompt) tokens of recent requests
        self.bootstrap = None
        self._warm = threading.Event()  # SGLang's ServerStatus.Up: set when the warmup request is done
        self._generated_tokens = 0
        self._window_start = time.monotonic()

    # ---- lifecycle -------------------------------------------------------------------------
    def start_background(self):
        if self.mode == "prefill":
            info = {"prefill_attn_tp_size": self.args.tp_size, "prefill_dp_size": 1,
                    "prefill_pp_size": 1, "page_size": self.args.page_size or 1,
                    "transfer_backend": self.args.disaggregation_transfer_backend,
                    "emulated": True}
            # Over several nodes, every prefill rank registers here (rank 0's local ones at once).
            size = max(1, self.args.tp_size * (getattr(self.args, "pp_size", None) or 1))
            per_node = max(1, size // max(1, getattr(self.args, "nnodes", None) or 1))
            self.bootstrap = bootstrap.BootstrapServer(
                self.args.host, self.args.disaggregation_bootstrap_port, info,
                expected=size, local=range(per_node))
            self.bootstrap.start()
            log.info("Bootstrap server listening on %s:%s", self.args.host,
                     self.args.disaggregation_bootstrap_port)
        crash_after = self.env.get("SGLANG_EMULATOR_CRASH_AFTER")
        if crash_after not in (None, ""):
            def crash():
                log.error("SGLANG_EMULATOR_CRASH_AFTER=%s: exiting with status 1 (emulated crash)",
                          crash_after)
                logging.shutdown()
                os._exit(1)
            timer = threading.Timer(float(crash_after), crash)
            timer.daemon = True
            timer.start()

    def ready(self):
        return self._warm.is_set()

    def engine_up(self, timings):
        """The engine is loaded (sglemu.startup ran): its start-up gauges, before the port opens."""
        self.metrics.set_startup_time(timings)

    def warmup(self, url, sleep=time.sleep):
        """SGLang's _wait_and_warmup, run once the port is bound: wait until /model_info answers, generate
        once, then say so. /health answers 503 until then. SGLANG_EMULATOR_NEVER_READY: the warmup never ends."""
        if not self.args.skip_server_warmup:
            headers = {"Authorization": "Bearer " + self.args.api_key} if self.args.api_key else {}
            while True:
                sleep(0.05)  # SGLang polls once a second; shorter here so tests stay quick
                try:
                    request = urllib.request.Request(url + "/model_info", headers=headers)
                    with urllib.request.urlopen(request, timeout=5) as response:
                        if response.status == 200:
                            break
                except (OSError, ValueError):
                    continue
            model.generate({"kind": "generate", "text": "The capital city of France is"}, self.knobs)
        if self.never_ready:
            return
        self._warm.set()
        log.info("The server is fired up and ready to roll!")

    # ---- request state ---------------------------------------------------------------------
    def chat_state(self, body):
        """What the chat template hands the model (recorded under the room on prefill)."""
        thinking = parsers.thinking_requested(body)
        if self.knobs.get("SGLANG_EMULATOR_IGNORE_THINKING") == "1":
            thinking = False  # a template that does not read the thinking switch
        tools = body.get("tools") if body.get("tool_choice") != "none" else None
        state = {"kind": "chat", "messages": body.get("messages"), "tools": tools,
                 "tool_choice": body.get("tool_choice"), "thinking": thinking,
                 "knobs": dict(self.knobs)}
        state["prompt_tokens"] = model.count_tokens(
            json.dumps([state["messages"], tools, thinking], ensure_ascii=False))
        return state

    def generate_state(self, body):
        text = _first(body.get("text"))
        return {"kind": "generate", "text": text, "knobs": dict(self.knobs),
                "prompt_tokens": model.count_tokens(text or "")}

    def model_env(self, state):
        env = dict(state.get("knobs") or {})
        env.update(self.knobs)
        return env

    # ---- gates -----------------------------------------------------------------------------
    def pd_check(self, body):
        """None, or SGLang's 400 for a PD request that carries no bootstrap room."""
        if self.mode not in ("prefill", "decode") or self.fake_transfer:
            return None
        if _first(body.get("bootstrap_room")) is None:
            return error_response(
                "Invalid request: Disaggregated request received without bootstrap room id. "
                "req.rid='%s'" % uuid.uuid4().hex, 400)
        return None

    async def gate(self):
        """Refusals before any generation: loading, injected faults."""
        if not self.ready():
            return error_response("The server is not ready yet (model loading).", 503)
        if self.hang:
            await asyncio.Event().wait()  # SGLANG_EMULATOR_HANG: never answers
        if self.fail_5xx:
            return error_response("Internal server error (SGLANG_EMULATOR_FAIL_5XX).", 500)
        return None

    # ---- faults (emulator-only admin endpoint) -------------------------------------------
    def inject(self, faults):
        """Queue one-shot faults: {"kv_transfer": n, "bootstrap": n}; returns what is pending."""
        with self._fault_lock:
            for kind, count in faults.items():
                self.pending_faults[kind] = self.pending_faults.get(kind, 0) + int(count)
            return dict(self.pending_faults)

    def take_fault(self, kind):
        with self._fault_lock:
            if self.pending_faults.get(kind, 0) > 0:
                self.pending_faults[kind] -= 1
                log.warning("injected %s failure (emulator fault injection)", kind)
                return True
            return False

    def count_failure(self, kind):
        name = ("sglang:num_transfer_failed_reqs_total" if kind == "transfer"
                else "sglang:num_bootstrap_failed_reqs_total")
        self.metrics.inc(name)

    # ---- PD transfer -----------------------------------------------------------------------
    def kv_megabytes(self, state):
        """Size of the request's KV cache (an MLA-like 70 KiB per prompt token)."""
        return max(1, state.get("prompt_tokens", 1)) * 70.0 / 1024.0

    async def prefill_transfer(self, room, state, flight):
        """Prefill: register the room, wait for a decode server's bootstrap, then for the transfer."""
        rooms = self.bootstrap.rooms
        m = self.metrics
        # An injected transfer failure is decided now: the KV "sent" to this room never arrives.
        rooms.put(room, state, fail_transfer=self.take_fault("kv_transfer"))
        if self.take_fault("bootstrap"):
            rooms.fail(room, "bootstrap")
        m.add("sglang:num_prefill_bootstrap_queue_reqs", 1)
        t_queue = time.monotonic()
        m.observe("sglang:per_stage_req_latency_seconds", t_queue - flight.t_start, stage="prefill_prepare")
        deadline = t_queue + self.bootstrap_timeout
        try:
            phase, kind = await self._wait_phase(room, ("pending",), deadline)
        finally:
            m.add("sglang:num_prefill_bootstrap_queue_reqs", -1)
        if phase == "pending":
            rooms.fail(room, "bootstrap")
            phase, kind = "failed", "bootstrap"
            # SGLang's words (prefill.py, CommonKVSender.poll): the decode never sent its KV indices.
            why = "Request %s timed out after %.1fs in KVPoll.Bootstrapping" % (room, time.monotonic() - t_queue)
        else:
            why = "the decode side reported a %s failure" % kind
        if phase == "failed":
            self._pd_failed(kind, "Prefill bootstrap failed for request rank=0 req.rid='%s' req.bootstrap_room=%s "
                            "with exception %s" % (uuid.uuid4().hex, room, why))
        t_boot = time.monotonic()
        m.observe("sglang:per_stage_req_latency_seconds", t_boot - t_queue, stage="prefill_bootstrap")
        m.observe("sglang:kv_transfer_bootstrap_ms", (t_boot - t_queue) * 1000.0)
        m.observe("sglang:kv_transfer_alloc_ms", 0.5)
        m.observe("sglang:queue_time_seconds", 0.0)
        m.observe("sglang:per_stage_req_latency_seconds", self.token_delay, stage="prefill_forward")
        await asyncio.sleep(self.token_delay)  # the forward pass of the prompt
        m.add("sglang:num_prefill_inflight_queue_reqs", 1)
        t_send = time.monotonic()
        try:
            phase, kind = await self._wait_phase(room, ("pending", "fetched"), t_send + self.bootstrap_timeout)
        finally:
            m.add("sglang:num_prefill_inflight_queue_reqs", -1)
        if phase != "done":
            kind = kind or "transfer"
            rooms.fail(room, kind)
            if phase == "fetched":
                why = "no result from the decode server within %.1fs" % self.bootstrap_timeout
            else:
                why = "%s failure" % kind
            self._pd_failed(kind, "KV transfer failed for request rid=%s bootstrap_room=%s: %s"
                            % (uuid.uuid4().hex, room, why))
        seconds = max(1e-4, time.monotonic() - t_send)
        megabytes = self.kv_megabytes(state)
        m.observe("sglang:kv_transfer_latency_ms", seconds * 1000.0)
        m.observe("sglang:kv_transfer_total_mb", megabytes)
        m.observe("sglang:kv_transfer_speed_gb_s", megabytes / 1024.0 / seconds)
        m.observe("sglang:per_stage_req_latency_seconds", seconds, stage="prefill_transfer_kv_cache")

    async def _wait_phase(self, room, waiting, deadline):
        while True:
            phase, kind = self.bootstrap.rooms.phase(room)
            if phase not in waiting or time.monotonic() >= deadline:
                return phase, kind
            await asyncio.sleep(0.005)

    def _pd_failed(self, kind, message):
        self.count_failure(kind)
        raise bootstrap.BootstrapError(message, kind)

    async def decode_transfer(self, body, flight):
        """Decode: bootstrap (fetch the request state from the prefill), receive the KV, report it."""
        host = _first(body.get("bootstrap_host"))
        port = _first(body.get("bootstrap_port")) or self.args.disaggregation_bootstrap_port
        room = _first(body.get("bootstrap_room"))
        m = self.metrics
        t_queue = time.monotonic()
        m.observe("sglang:per_stage_req_latency_seconds", t_queue - flight.t_start, stage="decode_prepare")
        m.add("sglang:num_decode_prealloc_queue_reqs", 1)
        try:
            if not host:
                raise bootstrap.BootstrapError(
                    "Decode transfer failed for bootstrap_room=%s: no bootstrap_host" % room)
            if self.take_fault("bootstrap"):
                await asyncio.to_thread(self._report, host, port, room, False, "bootstrap")
                raise bootstrap.BootstrapError("KV bootstrap for room %s failed (injected)" % room)
            addr = "%s:%s" % (host, port)
            if not self.prefills.known(addr):
                # The handshake: SGLang's decode fails it (prealloc queue, "Decode handshake failed") when the
                # prefill's bootstrap server does not answer /route.
                info = await asyncio.to_thread(bootstrap.fetch_route, host, port)
                self.prefills.learn(addr, info)
            self.prefills.track(addr, room)
            try:
                state = await asyncio.to_thread(bootstrap.fetch_room, host, port, room, self.waiting_timeout,
                                                lambda: self.prefills.lost(addr, room))
            finally:
                self.prefills.untrack(addr, room)
        except bootstrap.BootstrapError as exc:
            self.count_failure(exc.kind)
            log.error("Decode transfer failed: %s", exc)
            raise
        finally:
            m.add("sglang:num_decode_prealloc_queue_reqs", -1)
        t_boot = time.monotonic()
        m.observe("sglang:per_stage_req_latency_seconds", t_boot - t_queue, stage="decode_bootstrap")
        m.observe("sglang:kv_transfer_bootstrap_ms", (t_boot - t_queue) * 1000.0)
        m.observe("sglang:kv_transfer_alloc_ms", 0.5)
        megabytes = self.kv_megabytes(state)
        flight.tokens = state.get("prompt_tokens", 1)
        m.add("sglang:num_decode_transfer_queue_reqs", 1)
        try:
            # the KV cache arrives at an emulated 20 GB/s (at least 2 ms)
            await asyncio.sleep(max(0.002, megabytes / 1024.0 / 20.0))
            ok = not self.take_fault("kv_transfer")
            await asyncio.to_thread(bootstrap.report_result, host, port, room, ok, "transfer")
            if not ok:
                raise bootstrap.BootstrapError("KV transfer for room %s failed (injected)" % room, "transfer")
        except bootstrap.BootstrapError as exc:
            self.count_failure(exc.kind)
            log.error("Decode transfer failed: %s", exc)
            raise
        finally:
            m.add("sglang:num_decode_transfer_queue_reqs", -1)
        m.observe("sglang:per_stage_req_latency_seconds", time.monotonic() - t_boot, stage="decode_transferred")
        m.observe("sglang:queue_time_seconds", 0.0)
        return state

    @staticmethod
    def _report(host, port, room, ok, kind):
        try:
            bootstrap.report_result(host, port, room, ok, kind)
        except bootstrap.BootstrapError:
            pass  # the prefill learns it anyway, or times out

    # ---- request life (sglang:num_running_reqs, token usage) -------------------------------
    def begin(self, streaming):
        """A request admitted to this server: it counts as running until end() (any outcome)."""
        flight = Flight(streaming)
        with self._flights_lock:
            self._flights.add(flight)
        self.metrics.add("sglang:num_running_reqs", 1)
        self._update_usage()
        return flight

    def end(self, flight, failed=False):
        with self._flights_lock:
            if flight not in self._flights:
                return
            self._flights.discard(flight)
        self.metrics.add("sglang:num_running_reqs", -1)
        if failed:
            self.metrics.inc("sglang:num_aborted_requests_total")
        self._update_usage()

    def _update_usage(self):
        with self._flights_lock:
            used = sum(f.tokens for f in self._flights)
        used = min(used, self.max_total_tokens)
        m = self.metrics
        m.set("sglang:num_used_tokens", used)
        m.set("sglang:kv_used_tokens", used)
        m.set("sglang:kv_available_tokens", self.max_total_tokens - used)
        m.set("sglang:token_usage", used / float(self.max_total_tokens))
        m.set("sglang:full_token_usage", used / float(self.max_total_tokens))
        m.set("sglang:utilization", min(1.0, len(self._flights) / 64.0))

    async def resolve_state(self, body, local_state, flight):
        """The state the model generates from: on decode servers, the prefill's."""
        flight.tokens = local_state.get("prompt_tokens", 1)
        self._update_usage()
        # The transfer runs as its own task, as SGLang's scheduler handles it apart from the HTTP
        # connection: when the router gives up on one side, the other still ends (and counts) its part.
        if self.mode == "prefill" and not self.fake_transfer:
            await asyncio.shield(asyncio.ensure_future(
                self.prefill_transfer(_first(body["bootstrap_room"]), local_state, flight)))
            return local_state
        if self.mode == "decode" and not self.fake_transfer:
            state = await asyncio.shield(asyncio.ensure_future(self.decode_transfer(body, flight)))
            self._update_usage()
            if self.knobs.get("SGLANG_EMULATOR_IGNORE_THINKING") == "1":
                state = dict(state, thinking=False)
            return state
        return local_state

    # ---- generation ------------------------------------------------------------------------
    def model_output(self, state, limit):
        """(raw text, finish_reason, completion tokens) honouring the token limit."""
        raw = model.generate(state, self.model_env(state))
        if self.mode == "prefill":
            limit = 1  # the prefill server computes the first token only
        pieces = model.split_tokens(raw)
        finish = "stop"
        if limit is not None and int(limit) < len(pieces):
            pieces = pieces[: max(0, int(limit))]
            finish = "length"
        return "".join(pieces), finish, len(pieces)

    def parse_chat(self, raw, body):
        """(reasoning, content, tool_calls) as the server's configured parsers return them."""
        reasoning, normal = parsers.split_reasoning(raw, self.args.reasoning_parser, body)
        normal, calls, dummy_parsed = parsers.parse_tool_calls(
            normal, self.args.tool_call_parser, body,
            forward_unknown=bool(self.env.get("SGLANG_FORWARD_UNKNOWN_TOOLS")))
        return reasoning or None, normal, calls

    def cached_tokens(self, state):
        """Prefix-cache hits: a prompt seen before is cached but for its last token (prefill side)."""
        if self.mode == "decode":
            return 0
        key = json.dumps([state.get("messages"), state.get("text"), state.get("tools")],
                         sort_keys=True, ensure_ascii=False)
        hit = key in self._prefix_cache
        self._prefix_cache[key] = True
        self._prefix_cache.move_to_end(key)
        while len(self._prefix_cache) > 1024:
            self._prefix_cache.popitem(last=False)
        return max(0, state.get("prompt_tokens", 1) - 1) if hit else 0

    def record(self, state, completion_tokens, flight, t_first):
        """A finished request: SGLang's tokenizer metrics (observe_one_finished_request)."""
        now = time.monotonic()
        m = self.metrics
        streaming = "true" if flight.streaming else "false"
        prompt_tokens = state.get("prompt_tokens", 1)
        cached = self.cached_tokens(state)
        m.inc("sglang:num_requests_total", 1, is_streaming=streaming)
        m.inc("sglang:prompt_tokens_total", prompt_tokens, is_streaming=streaming)
        m.inc("sglang:generation_tokens_total", completion_tokens, is_streaming=streaming)
        m.inc("sglang:cached_tokens_total", cached, cache_source="device")
        m.observe("sglang:prompt_tokens_histogram", prompt_tokens)
        m.observe("sglang:generation_tokens_histogram", completion_tokens)
        m.observe("sglang:time_to_first_token_seconds", max(0.0, t_first - flight.t_start),
                  is_streaming=streaming)
        m.observe("sglang:e2e_request_latency_seconds", now - flight.t_start, is_streaming=streaming)
        if completion_tokens > 1:
            tpot = max(0.0, now - t_first) / (completion_tokens - 1)
            m.observe("sglang:inter_token_latency_seconds", tpot)
            m.observe("sglang:request_time_per_output_token_seconds", tpot, is_streaming=streaming)
        if self.mode == "decode":
            m.observe("sglang:per_stage_req_latency_seconds", now - t_first, stage="decode_forward")
        self._generated_tokens += completion_tokens
        elapsed = max(1e-3, now - self._window_start)
        m.set("sglang:gen_throughput", self._generated_tokens / elapsed)
        self._recent.append((cached, prompt_tokens))
        cached_sum = sum(item[0] for item in self._recent)
        m.set("sglang:cache_hit_rate", cached_sum / float(sum(item[1] for item in self._recent)))


def create_app(server):
    args = server.args
    app = FastAPI(title="SGLang emulator", version=VERSION)

    if args.api_key:
        @app.middleware("http")
        async def check_api_key(request, call_next):
            path = request.url.path
            if request.method == "OPTIONS" or path.startswith("/health") or path.startswith(
                    "/metrics"):
                return await call_next(request)
            if request.headers.get("Authorization") != "Bearer " + args.api_key:
                return JSONResponse({"error": "Unauthorized"}, status_code=401)
            return await call_next(request)

    if args.enable_metrics:
        app.router.routes.append(server.metrics.route())

    def server_info():
        info = dict(vars(args))
        info.update({
            "tokenizer_path": args.tokenizer_path or args.model_path,
            "version": VERSION,
            "internal_states": [{"last_gen_throughput": 0.0, "load": 0,
                                 "status": "ready" if server.ready() else "loading"}],
            "emulated": True,
        })
        return info

    async def generation_health():
        """200 when a tiny generation works, 503 otherwise (SGLang's health_generate)."""
        if not server.ready() or server.fail_5xx:
            return Response(status_code=503)
        if server.hang:
            await asyncio.sleep(server.health_timeout)
            return Response(status_code=503)
        model.generate({"kind": "generate", "text": "ping"}, server.knobs)
        return Response(status_code=200)

    @app.get("/health")
    async def health():
        if server.health_generates:
            return await generation_health()
        return Response(status_code=200 if server.ready() else 503)

    @app.get("/health_generate")
    async def health_generate():
        return await generation_health()

    @app.get("/server_info")
    @app.get("/get_server_info")
    async def get_server_info():
        return server_info()

    @app.get("/model_info")
    @app.get("/get_model_info")
    async def get_model_info():
        return {
            "model_path": args.model_path,
            "tokenizer_path": args.tokenizer_path or args.model_path,
            "is_generation": True,
            "preferred_sampling_params": None,
            "weight_version": "default",
            "has_image_understanding": False,
            "has_audio_understanding": False,
            "model_type": "deepseek_v4",
            "architectures": ["DeepseekV4ForCausalLM"],
        }

    @app.get("/v1/models")
    async def list_models():
        return {"object": "list", "data": [{
            "id": args.served_model_name, "object": "model", "created": int(time.time()),
            "owned_by": "sglang", "root": args.served_model_name, "parent": None,
            "max_model_len": args.context_length}]}

    async def admit_generation(request):
        """The body of a generation request, or the error SGLang would answer instead."""
        try:
            body = await request.json()
        except ValueError:
            return None, error_response("Invalid JSON body", 400)
        if not isinstance(body, dict):
            return None, error_response("The request body must be a JSON object", 400)
        if server.log_requests:
            log.warning("request %s %s headers=%s body=%s", request.method, request.url.path,
                        dict(request.headers), json.dumps(body, ensure_ascii=False))
        refusal = await server.gate()
        if refusal is not None:
            return None, refusal
        return body, None

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        body, err = await admit_generation(request)
        if err is not None:
            return err
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return error_response("messages: Field required (a non-empty list)", 400,
                                  param="messages")
        refusal = server.pd_check(body)
        if refusal is not None:
            return refusal
        if body.get("stream"):
            return StreamingResponse(stream_chat(body), media_type="text/event-stream")
        flight = server.begin(False)
        failed = True
        try:
            try:
                state = await server.resolve_state(body, server.chat_state(body), flight)
            except bootstrap.BootstrapError as exc:
                return error_response(str(exc), 500)
            t_first = time.monotonic()
            limit = body.get("max_completion_tokens") or body.get("max_tokens")
            raw, finish, n_out = server.model_output(state, limit)
            flight.tokens += n_out
            await asyncio.sleep(server.token_delay * n_out)
            reasoning, content, calls = server.parse_chat(raw, body)
            tool_calls = None
            if calls:
                tool_calls = [{"id": parsers.new_call_id(), "index": i, "type": "function",
                               "function": {"name": c["name"], "arguments": c["arguments"]}}
                              for i, c in enumerate(calls)]
                if finish == "stop":
                    finish = "tool_calls"
            prompt_tokens = state.get("prompt_tokens", 1)
            server.record(state, n_out, flight, t_first)
            failed = False
        finally:
            server.end(flight, failed)
        return {
            "id": uuid.uuid4().hex, "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model") or args.served_model_name,
            "choices": [{"index": 0,
                         "message": {"role": "assistant", "content": content or "",
                                     "reasoning_content": reasoning, "tool_calls": tool_calls},
                         "logprobs": None, "finish_reason": finish,
                         "matched_stop": 1 if finish == "stop" else None}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": n_out,
                      "total_tokens": prompt_tokens + n_out, "prompt_tokens_details": None},
            "metadata": {"weight_version": "default"},
        }

    async def stream_chat(body):
        # The request counts from here: a generator that never starts never ends either.
        flight = server.begin(True)
        failed = True
        try:
            async for event in _stream_chat(body, flight):
                yield event
            failed = flight.failed
        finally:
            server.end(flight, failed)

    async def _stream_chat(body, flight):
        rid = uuid.uuid4().hex
        created = int(time.time())
        name = body.get("model") or args.served_model_name

        def chunk(delta, finish=None):
            return sse({"id": rid, "object": "chat.completion.chunk", "created": created,
                        "model": name,
                        "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                     "finish_reason": finish,
                                     "matched_stop": 1 if finish == "stop" else None}],
                        "usage": None})

        try:
            state = await server.resolve_state(body, server.chat_state(body), flight)
        except bootstrap.BootstrapError as exc:
            # the stream has already been answered 200: SGLang sends the error as an event
            yield sse({"error": error_body(str(exc), 500)})
            yield "data: [DONE]\n\n"
            flight.failed = True
            return
        t_first = time.monotonic()
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        raw, finish, n_out = server.model_output(state, limit)
        flight.tokens += n_out
        reasoning, content, calls = server.parse_chat(raw, body)
        yield chunk({"role": "assistant", "content": ""})
        for piece in model.split_tokens(reasoning or ""):
            if piece:
                await asyncio.sleep(server.token_delay)
                yield chunk({"reasoning_content": piece})
        for piece in model.split_tokens(content or ""):
            if piece:
                await asyncio.sleep(server.token_delay)
                yield chunk({"content": piece})
        for index, call in enumerate(calls):
            await asyncio.sleep(server.token_delay)
            yield chunk({"tool_calls": [{"index": index, "id": parsers.new_call_id(),
                                         "type": "function",
                                         "function": {"name": call["name"], "arguments": ""}}]})
            text = call["arguments"]
            for start in range(0, len(text), 8):
                await asyncio.sleep(server.token_delay)
                yield chunk({"tool_calls": [{"index": index,
                                             "function": {"arguments": text[start:start + 8]}}]})
        if calls and finish == "stop":
            finish = "tool_calls"
        yield chunk({}, finish)
        prompt_tokens = state.get("prompt_tokens", 1)
        if (body.get("stream_options") or {}).get("include_usage"):
            yield sse({"id": rid, "object": "chat.completion.chunk", "created": created,
                       "model": name, "choices": [],
                       "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": n_out,
                                 "total_tokens": prompt_tokens + n_out}})
        server.record(state, n_out, flight, t_first)
        yield "data: [DONE]\n\n"

    @app.post("/generate")
    async def generate(request: Request):
        body, err = await admit_generation(request)
        if err is not None:
            return err
        if not isinstance(_first(body.get("text")), str):
            return error_response("The emulator's /generate needs 'text' (a string); input_ids "
                                  "are not supported", 400, param="text")
        refusal = server.pd_check(body)
        if refusal is not None:
            return refusal
        streaming = bool(body.get("stream"))
        if streaming:
            return StreamingResponse(generate_events(body), media_type="text/event-stream")
        flight = server.begin(False)
        failed = True
        try:
            try:
                state = await server.resolve_state(body, server.generate_state(body), flight)
            except bootstrap.BootstrapError as exc:
                return error_response(str(exc), 500)
            t_first = time.monotonic()
            raw, finish, n_out = generate_output(body, state, flight)
            await asyncio.sleep(server.token_delay * n_out)
            server.record(state, n_out, flight, t_first)
            failed = False
            return generate_result(state, raw, finish, n_out, flight, True, uuid.uuid4().hex)
        finally:
            server.end(flight, failed)

    def generate_output(body, state, flight):
        limit = (body.get("sampling_params") or {}).get("max_new_tokens")
        raw, finish, n_out = server.model_output(state, limit)
        flight.tokens += n_out
        return raw, finish, n_out

    def generate_result(state, text, finish, n_out, flight, final, rid):
        finish_reason = ({"type": "stop", "matched": 1} if finish == "stop"
                         else {"type": "length", "length": n_out})
        return {"text": text, "output_ids": list(range(n_out)) if final else [],
                "meta_info": {"id": rid, "finish_reason": finish_reason if final else None,
                              "prompt_tokens": state.get("prompt_tokens", 1), "completion_tokens": n_out,
                              "cached_tokens": 0, "weight_version": "default",
                              "e2e_latency": time.monotonic() - flight.t_start}}

    async def generate_events(body):
        flight = server.begin(True)
        failed = True
        try:
            try:
                state = await server.resolve_state(body, server.generate_state(body), flight)
            except bootstrap.BootstrapError as exc:
                yield sse({"error": error_body(str(exc), 500)})
                yield "data: [DONE]\n\n"
                return
            t_first = time.monotonic()
            raw, finish, n_out = generate_output(body, state, flight)
            rid = uuid.uuid4().hex
            text = ""
            pieces = model.split_tokens(raw)
            for i, piece in enumerate(pieces):
                await asyncio.sleep(server.token_delay)
                text += piece
                yield sse(generate_result(state, text, finish, n_out, flight, i == len(pieces) - 1, rid))
            server.record(state, n_out, flight, t_first)
            failed = False
            yield "data: [DONE]\n\n"
        finally:
            server.end(flight, failed)

    @app.post("/emulator/faults")
    async def inject_faults(request: Request):
        """Emulator-only: fail the next KV transfer(s) or bootstrap(s) of this server, once each."""
        try:
            body = await request.json()
        except ValueError:
            return error_response("Invalid JSON body", 400)
        if not isinstance(body, dict) or not body or any(
                k not in FAULT_KINDS or not isinstance(v, int) or isinstance(v, bool) or v < 0
                for k, v in body.items()):
            return error_response("expected {\"kv_transfer\": n, \"bootstrap\": n} with n >= 0", 400)
        return {"pending": server.inject(body), "emulated": True}

    @app.get("/emulator/faults")
    async def pending_faults():
        return {"pending": server.inject({}), "emulated": True}

    return app
