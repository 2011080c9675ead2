"""Completion and chat-completion bodies: vLLM's JSON (non-streamed) and SSE chunks (``stream: true``).

Shapes follow public captures of vLLM's server (e.g. vllm-project/vllm issues #19305, #13087): compact
JSON, ``cmpl-`` / ``chatcmpl-`` ids, ``stop_reason``, ``kv_transfer_params``; streams send ``data: {...}``
events over chunked transfer encoding and end with ``data: [DONE]``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from io import BufferedIOBase
from typing import Any, Protocol

from .engine import Token

OnToken = Callable[[Token, "str | None", "str | None"], None]


class Handler(Protocol):
    """What a Generation needs of the HTTP handler (api.Handler provides it)."""

    wfile: BufferedIOBase

    def run_one(
        self, prompt: str, prompt_tokens: int, choice: int, gen: Generation, on_token: OnToken
    ) -> None: ...

    def _send(self, status: int, body: bytes, ctype: str | None = ...) -> None: ...

    def send_response(self, code: int, message: str | None = ...) -> None: ...

    def send_header(self, keyword: str, value: str) -> None: ...

    def end_headers(self) -> None: ...


def dump_json(obj: Any) -> bytes:
    """Compact JSON as FastAPI's JSONResponse writes it."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "completion_tokens": completion_tokens,
        "prompt_tokens_details": None,
    }


def completion_logprobs(tokens: list[Token], want: int, offset: int = 0) -> dict[str, Any]:
    offsets = []
    for tok in tokens:
        offsets.append(offset)
        offset += len(tok.text)
    return {
        "text_offset": offsets,
        "token_logprobs": [t.logprob for t in tokens],
        "tokens": [t.text for t in tokens],
        "top_logprobs": [dict(t.top[: max(want, 1)]) for t in tokens],
    }


def chat_logprob(tok: Token, want: int) -> dict[str, Any]:
    top = [{"token": w, "logprob": lp, "bytes": list(w.encode())} for w, lp in tok.top[:want]]
    return {"token": tok.text, "logprob": tok.logprob, "bytes": list(tok.text.encode()), "top_logprobs": top}


class Generation:
    """One request: runs its choices through ``handler.run_one`` and writes the response."""

    def __init__(
        self,
        handler: Handler,
        *,
        chat: bool,
        model: str,
        want: int | None,
        max_tokens: int,
        stop: list[str],
        params: str,
        stream: bool,
        include_usage: bool,
    ) -> None:
        self.handler, self.chat, self.model, self.want = handler, chat, model, want
        self.max_tokens, self.stop, self.params = max_tokens, stop, params
        self.stream, self.include_usage = stream, include_usage
        self.id = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
        self.created = int(time.time())
        self.object = "chat.completion" if chat else "text_completion"
        # PD disaggregation (pd.py): the engine-internal request id, the DP engine a decode pulled into,
        # where the prompt KV came from, and the kv_transfer_params of the request / of the response
        self.request_id = self.id
        self.engine: int | None = None
        self.external = False
        self.stale = False
        self.kv_params: Any = None
        self.kv_result: dict[str, Any] | None = None

    def _head(self, obj: str) -> dict[str, Any]:
        return {"id": self.id, "object": obj, "created": self.created, "model": self.model}

    def run(self, jobs: list[tuple[str, int, int]]) -> None:
        prompt_tokens = sum(t for _p, t, c in jobs if c == 0)
        if self.stream:
            self._run_stream(jobs, prompt_tokens)
            return
        choices = []
        completion_tokens = 0
        for index, (prompt, n_tokens, choice) in enumerate(jobs):
            toks: list[Token] = []
            end: list[str | None] = [None, None]

            def collect(
                tok: Token,
                finish: str | None,
                stop_reason: str | None,
                toks: list[Token] = toks,
                end: list[str | None] = end,
            ) -> None:
                toks.append(tok)
                if finish:
                    end[:] = [finish, stop_reason]

            self.handler.run_one(prompt, n_tokens, choice, self, collect)
            completion_tokens += len(toks)
            choices.append(self._choice(index, toks, end[0], end[1]))
        body = {
            **self._head(self.object),
            "choices": choices,
            "service_tier": None,
            "system_fingerprint": None,
            "usage": _usage(prompt_tokens, completion_tokens),
        }
        if self.chat:
            body["prompt_logprobs"] = None
        body["kv_transfer_params"] = self.kv_result
        self.handler._send(200, dump_json(body))

    def fail_stream(self, message: dict[str, Any]) -> None:
        """A stream whose generation failed (vLLM's GenerationError): 200, the error event, ``[DONE]``."""
        self._start_stream()
        self._event(json.dumps(message))
        self._event("[DONE]")
        self._write(b"")

    def _choice(
        self, index: int, toks: list[Token], finish: str | None, stop_reason: str | None
    ) -> dict[str, Any]:
        text = "".join(t.text for t in toks)
        if self.chat:
            message: dict[str, Any] = {
                "role": "assistant",
                "content": text,
                "refusal": None,
                "annotations": None,
                "audio": None,
                "function_call": None,
                "tool_calls": [],
                "reasoning_content": None,
            }
            logprobs = None if self.want is None else {"content": [chat_logprob(t, self.want) for t in toks]}
            return {
                "index": index,
                "message": message,
                "logprobs": logprobs,
                "finish_reason": finish,
                "stop_reason": stop_reason,
            }
        logprobs = None if self.want is None else completion_logprobs(toks, self.want)
        return {
            "index": index,
            "text": text,
            "logprobs": logprobs,
            "finish_reason": finish,
            "stop_reason": stop_reason,
            "prompt_logprobs": None,
        }

    # --- streaming --------------------------------------------------------------------------------------
    def _write(self, data: bytes) -> None:
        self.handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.handler.wfile.flush()

    def _event(self, payload: dict[str, Any] | str) -> None:
        text = payload if isinstance(payload, str) else dump_json(payload).decode()
        self._write(f"data: {text}\n\n".encode())

    def _start_stream(self) -> None:
        h = self.handler
        h.send_response(200)
        h.send_header("content-type", "text/event-stream; charset=utf-8")
        h.send_header("transfer-encoding", "chunked")
        h.end_headers()

    def _run_stream(self, jobs: list[tuple[str, int, int]], prompt_tokens: int) -> None:
        h = self.handler
        self._start_stream()
        obj = "chat.completion.chunk" if self.chat else "text_completion"
        completion_tokens = 0
        for index, (prompt, n_tokens, choice) in enumerate(jobs):
            if self.chat:
                role = {
                    "index": index,
                    "delta": {"role": "assistant", "content": ""},
                    "logprobs": None,
                    "finish_reason": None,
                }
                self._event({**self._head(obj), "choices": [role], "prompt_token_ids": None})
            offset = [0]

            def send(
                tok: Token,
                finish: str | None,
                stop_reason: str | None,
                index: int = index,
                offset: list[int] = offset,
            ) -> None:
                nonlocal completion_tokens
                completion_tokens += 1
                if self.chat:
                    lp = None if self.want is None else {"content": [chat_logprob(tok, self.want)]}
                    ch: dict[str, Any] = {
                        "index": index,
                        "delta": {"content": tok.text},
                        "logprobs": lp,
                        "finish_reason": finish,
                    }
                    if finish:
                        ch["stop_reason"] = stop_reason
                    ch["token_ids"] = None
                    self._event({**self._head(obj), "choices": [ch]})
                    return
                lp = None if self.want is None else completion_logprobs([tok], self.want, offset[0])
                offset[0] += len(tok.text)
                ch = {
                    "index": index,
                    "text": tok.text,
                    "logprobs": lp,
                    "finish_reason": finish,
                    "stop_reason": stop_reason,
                }
                self._event({**self._head(obj), "choices": [ch], "usage": None})

            h.run_one(prompt, n_tokens, choice, self, send)
        if self.include_usage:
            self._event({**self._head(obj), "choices": [], "usage": _usage(prompt_tokens, completion_tokens)})
        self._event("[DONE]")
        self._write(b"")
