"""The HTTP API of an SGLang server (FastAPI + uvicorn, like SGLang's http_server.py)."""
import asyncio
import json
import logging
import os
import random
import threading
import time
import uuid

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from . import bootstrap, model, parsers
from .metrics import Metrics

log = logging.getLogger("sglang_emulator")
VERSION = "0.5.23"
# Model-behaviour knobs: set on the prefill they travel with the request state to the decode
# server (the decode server's own settings win).
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


class Server:
    """One emulated SGLang server process."""

    def __init__(self, args, env=None):
        self.args = args
        self.env = dict(os.environ if env is None else env)
        self.mode = args.disaggregation_mode
        self.fake_transfer = args.disaggregation_transfer_backend == "fake"
        self.started = time.monotonic()
        self.load_delay = env_float(self.env, "SGLANG_EMULATOR_LOAD_DELAY", 0.0)
        self.never_ready = self.env.get("SGLANG_EMULATOR_NEVER_READY") == "1"
        self.hang = self.env.get("SGLANG_EMULATOR_HANG") == "1"
        self.fail_5xx = self.env.get("SGLANG_EMULATOR_FAIL_5XX") == "1"
        self.bootstrap_timeout = env_float(self.env, "SGLANG_EMULATOR_BOOTSTRAP_TIMEOUT", 10.0)
        self.token_delay = env_float(self.env, "SGLANG_EMULATOR_TOKEN_DELAY", 0.002)
        self.health_timeout = env_float(self.env, "SGLANG_HEALTH_CHECK_TIMEOUT", 20.0)
        # 0.5.23: /health generates one token unless this is false (default true).
        self.health_generates = env_bool(self.env, "SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION",
                                         True)
        self.log_requests = self.env.get("SGLANG_EMULATOR_LOG_REQUESTS") == "1"
        self.knobs = {k: self.env[k] for k in MODEL_KNOBS if self.env.get(k)}
        engine = {"prefill": "prefill", "decode": "decode"}.get(self.mode, "unified")
        self.metrics = Metrics(args.served_model_name, engine)
        self.bootstrap = None
        self._ready_logged = False
        self._generated_tokens = 0
        self._window_start = time.monotonic()

    # ---- lifecycle -------------------------------------------------------------------------
    def start_background(self):
        if self.mode == "prefill":
            info = {"prefill_attn_tp_size": self.args.tp_size, "prefill_dp_size": 1,
                    "prefill_pp_size": 1, "page_size": self.args.page_size or 1,
                    "transfer_backend": self.args.disaggregation_transfer_backend,
                    "emulated": True}
            self.bootstrap = bootstrap.BootstrapServer(
                self.args.host, self.args.disaggregation_bootstrap_port, info)
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
        if self.never_ready:
            return False
        ok = time.monotonic() - self.started >= self.load_delay
        if ok and not self._ready_logged:
            self._ready_logged = True
            log.info("The server is fired up and ready to roll!")
        return ok

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

    # ---- PD transfer -----------------------------------------------------------------------
    async def prefill_transfer(self, room, state):
        """Prefill: register the room, then wait until a decode server fetched it."""
        self.bootstrap.rooms.put(room, state)
        self.metrics.gauge_add("sglang:num_prefill_bootstrap_queue_reqs", 1)
        deadline = time.monotonic() + self.bootstrap_timeout
        try:
            while not self.bootstrap.rooms.fetched(room):
                if time.monotonic() >= deadline:
                    self.bootstrap.rooms.drop(room)
                    self.metrics.fail("sglang:num_bootstrap_failed_reqs")
                    raise bootstrap.BootstrapError(
                        "KV transfer failed for request rid=%s bootstrap_room=%s: no decode "
                        "server fetched it within %.1fs" % (uuid.uuid4().hex, room,
                                                            self.bootstrap_timeout))
                await asyncio.sleep(0.01)
        finally:
            self.metrics.gauge_add("sglang:num_prefill_bootstrap_queue_reqs", -1)

    async def decode_transfer(self, body):
        """Decode: fetch the request state from the prefill's bootstrap server."""
        host = _first(body.get("bootstrap_host"))
        port = _first(body.get("bootstrap_port")) or self.args.disaggregation_bootstrap_port
        room = _first(body.get("bootstrap_room"))
        self.metrics.gauge_add("sglang:num_decode_transfer_queue_reqs", 1)
        t0 = time.monotonic()
        try:
            if not host:
                raise bootstrap.BootstrapError(
                    "Decode transfer failed for bootstrap_room=%s: no bootstrap_host" % room)
            state = await asyncio.to_thread(bootstrap.fetch_room, host, port, room,
                                            self.bootstrap_timeout)
        except bootstrap.BootstrapError as exc:
            self.metrics.fail("sglang:num_bootstrap_failed_reqs")
            log.error("Decode transfer failed: %s", exc)
            raise
        finally:
            self.metrics.gauge_add("sglang:num_decode_transfer_queue_reqs", -1)
        self.metrics.observe("sglang:kv_transfer_latency_ms", (time.monotonic() - t0) * 1000.0)
        return state

    async def resolve_state(self, body, local_state):
        """The state the model generates from: on decode servers, the prefill's.

        The request counts in sglang:num_running_reqs while this runs (the KV transfer wait)."""
        self.metrics.gauge_add("sglang:num_running_reqs", 1)
        try:
            return await self._resolve_state(body, local_state)
        finally:
            self.metrics.gauge_add("sglang:num_running_reqs", -1)

    async def _resolve_state(self, body, local_state):
        if self.mode == "prefill" and not self.fake_transfer:
            await self.prefill_transfer(_first(body["bootstrap_room"]), local_state)
            return local_state
        if self.mode == "decode" and not self.fake_transfer:
            state = await self.decode_transfer(body)
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

    def record(self, prompt_tokens, completion_tokens, t_start, t_first, streaming):
        now = time.monotonic()
        self.metrics.count("sglang:num_requests", 1, streaming)
        self.metrics.count("sglang:prompt_tokens", prompt_tokens, streaming)
        self.metrics.count("sglang:generation_tokens", completion_tokens, streaming)
        self._generated_tokens += completion_tokens
        self.metrics.observe("sglang:time_to_first_token_seconds", max(0.0, t_first - t_start),
                             streaming)
        self.metrics.observe("sglang:e2e_request_latency_seconds", now - t_start, streaming)
        if completion_tokens > 1:
            self.metrics.observe("sglang:inter_token_latency_seconds",
                                 max(0.0, now - t_first) / (completion_tokens - 1))
        elapsed = max(1e-3, now - self._window_start)
        self.metrics.gauge("sglang:gen_throughput", self._generated_tokens / elapsed)
        self.metrics.gauge("sglang:token_usage",
                           min(1.0, (prompt_tokens + completion_tokens) / 65536.0))
        self.metrics.gauge("sglang:cache_hit_rate", random.uniform(0.0, 0.05))


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
        t_start = time.monotonic()
        try:
            state = await server.resolve_state(body, server.chat_state(body))
        except bootstrap.BootstrapError as exc:
            return error_response(str(exc), 500)
        t_first = time.monotonic()
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        raw, finish, n_out = server.model_output(state, limit)
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
        server.record(prompt_tokens, n_out, t_start, t_first, False)
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

        t_start = time.monotonic()
        try:
            state = await server.resolve_state(body, server.chat_state(body))
        except bootstrap.BootstrapError as exc:
            # the stream has already been answered 200: SGLang sends the error as an event
            yield sse({"error": error_body(str(exc), 500)})
            yield "data: [DONE]\n\n"
            return
        t_first = time.monotonic()
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        raw, finish, n_out = server.model_output(state, limit)
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
        server.record(prompt_tokens, n_out, t_start, t_first, True)
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
        t_start = time.monotonic()
        try:
            state = await server.resolve_state(body, server.generate_state(body))
        except bootstrap.BootstrapError as exc:
            return error_response(str(exc), 500)
        t_first = time.monotonic()
        limit = (body.get("sampling_params") or {}).get("max_new_tokens")
        raw, finish, n_out = server.model_output(state, limit)
        prompt_tokens = state.get("prompt_tokens", 1)
        rid = uuid.uuid4().hex
        finish_reason = ({"type": "stop", "matched": 1} if finish == "stop"
                         else {"type": "length", "length": n_out})
        streaming = bool(body.get("stream"))

        def result(text, final):
            return {"text": text, "output_ids": list(range(n_out)) if final else [],
                    "meta_info": {"id": rid, "finish_reason": finish_reason if final else None,
                                  "prompt_tokens": prompt_tokens, "completion_tokens": n_out,
                                  "cached_tokens": 0, "weight_version": "default",
                                  "e2e_latency": time.monotonic() - t_start}}

        if streaming:
            async def events():
                text = ""
                pieces = model.split_tokens(raw)
                for i, piece in enumerate(pieces):
                    await asyncio.sleep(server.token_delay)
                    text += piece
                    yield sse(result(text, i == len(pieces) - 1))
                server.record(prompt_tokens, n_out, t_start, t_first, True)
                yield "data: [DONE]\n\n"
            return StreamingResponse(events(), media_type="text/event-stream")
        await asyncio.sleep(server.token_delay * n_out)
        server.record(prompt_tokens, n_out, t_start, t_first, False)
        return result(raw, True)

    return app
