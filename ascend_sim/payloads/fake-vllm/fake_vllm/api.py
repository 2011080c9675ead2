"""The OpenAI-compatible HTTP API of the fake server (head only), shaped like vLLM's responses.

Routes: GET /health, GET|POST /ping (200 empty body when ready, else 503), GET /version, GET /metrics,
GET /v1/models, POST /v1/completions, POST /v1/chat/completions (``stream: true`` -> SSE ``data: {...}``
chunks ending with ``data: [DONE]``). With an API key (``--api-key`` or ``VLLM_API_KEY``) every ``/v1`` route
needs ``Authorization: Bearer <key>`` (401 ``{"error": "Unauthorized"}`` otherwise); /health and /metrics do
not, as in vLLM. Errors use vLLM's ``{"error": {"message", "type", "param", "code"}}`` body.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any

from .cli import ServeConfig
from .engine import Generator, Token, count_tokens, params_key, token_id
from .faults import FaultSource
from .jit import Jit, shape
from .metrics import Metrics
from .pd import PD, KVLoadError
from .stream import Generation, dump_json


class ApiError(Exception):
    def __init__(self, status: int, message: str, kind: str = "BadRequestError", param: str | None = None):
        super().__init__(message)
        self.status, self.message, self.kind, self.param = status, message, kind, param


@dataclass
class Service:
    cfg: ServeConfig
    generator: Generator
    metrics: Metrics
    faults: FaultSource
    version: str
    max_model_len: int
    ready: Callable[[], bool]
    token_s: float = 0.002
    access_log: bool = True
    pd: PD | None = None
    jit: Jit = field(default_factory=lambda: Jit(0.0))

    def __post_init__(self) -> None:
        self.created = int(time.time())
        self.slots = threading.BoundedSemaphore(max(1, self.cfg.max_num_seqs * len(self.metrics.engines)))

    def healthy(self) -> bool:
        return self.ready() and not self.faults.current.never_healthy


def _messages_text(messages: Any) -> tuple[str, int]:
    """A canonical prompt key for chat messages and their whitespace token count."""
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "messages must be a non-empty list", param="messages")
    canon, tokens = [], 0
    for m in messages:
        if not isinstance(m, dict):
            raise ApiError(400, "each message must be an object", param="messages")
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        text = content if isinstance(content, str) else ""
        canon.append([str(m.get("role", "user")), text])
        tokens += count_tokens(text)
    return json.dumps(canon, ensure_ascii=False), tokens


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    service: Service  # set by make_handler

    def version_string(self) -> str:
        return "uvicorn"

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        if self.service.access_log:
            phrase = HTTPStatus(int(code)).phrase if str(code).isdigit() else ""
            host, port = self.client_address[:2]
            print(f'INFO:     {host}:{port} - "{self.requestline}" {code} {phrase}', flush=True)

    def log_message(self, format: str, *args: Any) -> None:
        return

    # --- plumbing -------------------------------------------------------------------------------------
    def _send(self, status: int, body: bytes, ctype: str | None = "application/json") -> None:
        self.send_response(status)
        if ctype:
            self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, err: ApiError) -> None:
        body = {"error": {"message": err.message, "type": err.kind, "param": err.param, "code": err.status}}
        self._send(err.status, dump_json(body))

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"null")
        except ValueError as exc:
            raise ApiError(400, f"JSON decode error: {exc}") from None
        if not isinstance(body, dict):
            raise ApiError(400, "the request body must be a JSON object")
        return body

    def _authorized(self) -> bool:
        keys = self.service.cfg.api_keys
        if not keys or not self.path.startswith("/v1"):
            return True
        return self.headers.get("authorization", "") in {f"Bearer {key}" for key in keys}

    def _route(self, routes: dict[str, Callable[[], None]], other: set[str]) -> None:
        path = self.path.split("?", 1)[0]
        if path not in routes or not self._authorized():  # read the body the early answer leaves unread:
            self.rfile.read(int(self.headers.get("content-length") or 0))  # else it starts the next request
        if path not in routes:
            self._send(
                405 if path in other else 404,
                dump_json({"detail": "Method Not Allowed" if path in other else "Not Found"}),
            )
            return
        if not self._authorized():
            self._send(401, dump_json({"error": "Unauthorized"}))
            return
        self.responded = False
        try:
            routes[path]()
        except ApiError as err:
            self._error(err)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # a malformed request must not kill the handler silently
            if self.responded:
                self.close_connection = True
            else:
                self._error(ApiError(500, f"{type(exc).__name__}: {exc}", "InternalServerError"))

    def send_response(self, code: int, message: str | None = None) -> None:
        super().send_response(code, message)
        self.responded = True

    def do_GET(self) -> None:
        routes = {
            "/health": self._health,
            "/ping": self._health,
            "/version": self._version,
            "/metrics": self._metrics,
            "/v1/models": self._models,
        }
        self._route(routes, {"/v1/completions", "/v1/chat/completions"})

    def do_POST(self) -> None:
        routes = {
            "/v1/completions": lambda: self._generate(chat=False),
            "/ping": self._health,
            "/v1/chat/completions": lambda: self._generate(chat=True),
        }
        self._route(routes, {"/health", "/version", "/metrics", "/v1/models"})

    # --- simple routes --------------------------------------------------------------------------------
    def _health(self) -> None:
        self._send(200 if self.service.healthy() else 503, b"", None)

    def _version(self) -> None:
        self._send(200, dump_json({"version": self.service.version}))

    def _metrics(self) -> None:
        self._send(200, self.service.metrics.render().encode(), "text/plain; version=0.0.4; charset=utf-8")

    def _models(self) -> None:
        s = self.service
        perm = {
            "id": f"modelperm-{uuid.uuid4().hex[:16]}",
            "object": "model_permission",
            "created": s.created,
            "allow_create_engine": False,
            "allow_sampling": True,
            "allow_logprobs": True,
            "allow_search_indices": False,
            "allow_view": True,
            "allow_fine_tuning": False,
            "organization": "*",
            "group": None,
            "is_blocking": False,
        }
        data = [
            {
                "id": name,
                "object": "model",
                "created": s.created,
                "owned_by": "vllm",
                "root": s.cfg.model,
                "parent": None,
                "max_model_len": s.max_model_len,
                "permission": [perm],
            }
            for name in s.cfg.served_names
        ]
        self._send(200, dump_json({"object": "list", "data": data}))

    # --- generation -----------------------------------------------------------------------------------
    def _generate(self, chat: bool) -> None:
        s = self.service
        body = self._body()
        model = body.get("model") or s.cfg.served_names[0]
        if model not in s.cfg.served_names:
            raise ApiError(404, f"The model `{model}` does not exist.", "NotFoundError", "model")
        if not s.healthy():
            raise ApiError(503, "The server is not ready to serve requests.", "ServiceUnavailableError")
        if chat:
            prompt, prompt_tokens = _messages_text(body.get("messages"))
            prompts = [(prompt, prompt_tokens)]
            want = body.get("top_logprobs") or 0 if body.get("logprobs") else None
            default_max = s.max_model_len - prompt_tokens
            max_tokens = body.get("max_completion_tokens") or body.get("max_tokens") or default_max
        else:
            raw = body.get("prompt")
            items = raw if isinstance(raw, list) and raw and not isinstance(raw[0], int) else [raw]
            prompts = []
            for item in items:
                text = " ".join(map(str, item)) if isinstance(item, list) else item
                if not isinstance(text, str) or not text.strip():
                    raise ApiError(400, "The decoder prompt cannot be empty", param="prompt")
                prompts.append((text, count_tokens(text)))
            want = body.get("logprobs")
            max_tokens = body.get("max_tokens") or 16
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise ApiError(400, f"max_tokens must be at least 1, got {max_tokens}.", param="max_tokens")
        if want is not None and (not isinstance(want, int) or want > s.cfg.max_logprobs or want < 0):
            raise ApiError(
                400,
                f"Requested sample logprobs of {want}, which is greater than max allowed: "
                f"{s.cfg.max_logprobs}",
                param="logprobs",
            )
        for _text, n_tokens in prompts:
            if n_tokens + max_tokens > s.max_model_len:
                raise ApiError(
                    400,
                    f"This model's maximum context length is {s.max_model_len} tokens. However, "
                    f"you requested {n_tokens + max_tokens} tokens ({n_tokens} in the messages, "
                    f"{max_tokens} in the completion). Please reduce the length of the messages or "
                    "completion.",
                    param="max_tokens",
                )
        stop = body.get("stop") or []
        stop = [stop] if isinstance(stop, str) else [str(x) for x in stop]
        n = body.get("n") or 1
        if not isinstance(n, int) or not 1 <= n <= 16:
            raise ApiError(400, f"n must be an integer between 1 and 16, got {n!r}.", param="n")
        jobs = [(p, t, c) for p, t in prompts for c in range(n)]
        gen = Generation(
            self,
            chat=chat,
            model=model,
            want=want,
            max_tokens=max_tokens,
            stop=stop,
            params=params_key(body),
            stream=bool(body.get("stream")),
            include_usage=bool((body.get("stream_options") or {}).get("include_usage")),
        )
        base = self.headers.get("x-request-id") or uuid.uuid4().hex  # vLLM's _base_request_id
        gen.id = ("chatcmpl-" if chat else "cmpl-") + base
        gen.request_id = gen.id + ("" if chat else "-0") + "-" + uuid.uuid4().hex[:8]  # assign_request_id
        if s.pd is not None and not self._pd_prepare(gen, body.get("kv_transfer_params"), prompts[0][1]):
            return
        gen.run(jobs)

    def _pd_prepare(self, gen: Generation, params: Any, prompt_tokens: int) -> bool:
        """PD (pd.py): keep the request's kv_transfer_params; a decode pulls the prompt KV first. False when
        the pull failed and the answer (an error) is sent."""
        s = self.service
        assert s.pd is not None
        gen.kv_params = params
        if not isinstance(params, dict) or not params.get("do_remote_prefill"):
            return True
        gen.engine = s.metrics.pick_engine()
        try:
            outcome = s.pd.before(gen.engine, gen.request_id, gen.id, params, prompt_tokens)
        except KVLoadError:
            message = "Internal server error"  # GenerationError
            if not gen.stream:
                raise ApiError(500, message, "InternalServerError") from None
            err: dict[str, Any] = {
                "message": message,
                "type": "InternalServerError",
                "param": None,
                "code": 500,
            }
            gen.fail_stream({"error": err})
            return False
        gen.external, gen.stale = outcome in ("pulled", "stale"), outcome == "stale"
        return True

    def run_one(
        self,
        prompt: str,
        prompt_tokens: int,
        choice: int,
        gen: Generation,
        on_token: Callable[[Token, str | None, str | None], None],
    ) -> None:
        """Generate one choice with vLLM-like timing and metrics; calls ``on_token`` per token."""
        s = self.service
        engine = gen.engine if gen.engine is not None else s.metrics.pick_engine()
        start = time.monotonic()
        s.metrics.waiting(engine, +1)
        s.slots.acquire()
        s.metrics.waiting(engine, -1)
        s.metrics.started(engine, prompt, prompt_tokens, external=gen.external)
        faults = s.faults.current
        produced, reason, ttft, last = 0, "abort", None, 0
        try:
            s.jit.compile(shape(gen.chat, prompt_tokens, gen.stream))  # the first request of a shape only
            time.sleep(0.005 + prompt_tokens * 2e-5 + faults.slow_ms / 1000)
            for tok, finish, stop_reason in s.generator.generate(
                prompt,
                gen.params,
                gen.max_tokens,
                wrong=faults.wrong_answers or gen.stale,
                shift=faults.logprob_shift,
                choice=choice,
                stop=gen.stop,
            ):
                if ttft is None:
                    ttft = time.monotonic() - start
                elif s.token_s:
                    time.sleep(s.token_s)
                produced, last = produced + 1, token_id(tok.text)
                s.metrics.token(engine)
                on_token(tok, finish, stop_reason)
                if finish:
                    reason = finish
        finally:
            s.slots.release()
            s.metrics.finished(engine, prompt_tokens + produced, reason, ttft, time.monotonic() - start)
        if s.pd is not None and choice == 0 and gen.kv_result is None:  # request_finished (a prefill)
            gen.kv_result = s.pd.finished(engine, gen.request_id, gen.kv_params, reason, prompt_tokens, last)


def make_handler(service: Service) -> type[Handler]:
    return type("FakeVllmHandler", (Handler,), {"service": service})
