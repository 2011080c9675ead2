"""Backend stubs for the PD router contract tests: a prefill or decode `vllm serve` as far as vllm-router
talks to it (GET /health, /v1/models, /metrics; POST /v1/completions, /v1/chat/completions and their /render).

Every request is recorded (method, path, headers, JSON body). A prefill stub answers a completion with
`kv_transfer_params` shaped like vllm-ascend's MooncakeConnector.request_finished() returns them
(vllm-project/vllm-ascend vllm_ascend/distributed/kv_transfer/kv_p2p/mooncake_connector.py @v0.23.0:
do_remote_prefill True, do_remote_decode False, remote_block_ids, remote_engine_id, remote_host,
remote_port, remote_request_id); a decode stub refuses (400) a completion that does not carry them back.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Role = Literal["prefill", "decode"]
COMPLETION_PATHS = ("/v1/completions", "/v1/chat/completions")


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: dict[str, Any]


def prefill_kv_params(engine_id: str, port: int) -> dict[str, Any]:
    """What a vllm-ascend prefill instance puts into its response (request_finished())."""
    return {
        "do_remote_prefill": True,
        "do_remote_decode": False,
        "remote_block_ids": [3, 4, 5],
        "remote_engine_id": engine_id,
        "remote_request_id": f"cmpl-{engine_id}-0",
        "remote_host": "127.0.0.1",
        "remote_port": port,
    }


@dataclass
class Backend:
    role: Role
    host: str
    port: int = 0
    engine_id: str = "0"
    seen: list[Seen] = field(default_factory=list)
    metrics: str = ""  # the body of GET /metrics (404 when empty)
    send_kv: bool = True  # a prefill stub answers with kv_transfer_params
    hold_s: float = 0.0  # completions wait this long before answering (an in-flight request)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _conns: set[socket.socket] = field(default_factory=set)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> Backend:
        self._server = _Server((self.host, self.port), _handler(self))
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop answering: the port is closed (connection refused), as a crashed `vllm serve`."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._lock:  # kept-alive connections too: the router pools them
            conns, self._conns = set(self._conns), set()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def track(self, conn: socket.socket, alive: bool) -> None:
        with self._lock:
            if alive:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)

    def record(self, seen: Seen) -> None:
        with self._lock:
            self.seen.append(seen)

    def completions(self) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.method == "POST" and s.path in COMPLETION_PATHS]

    def health_checks(self) -> int:
        with self._lock:
            return sum(1 for s in self.seen if s.path == "/health")


class _Server(ThreadingHTTPServer):
    allow_reuse_address = True  # a stopped stub starts again on its port (a restarted `vllm serve`)

    def handle_error(self, request: object, client_address: object) -> None:
        return  # connections the router resets while a stub stops are expected


def _handler(backend: Backend) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def setup(self) -> None:
            super().setup()
            backend.track(self.request, True)

        def finish(self) -> None:
            backend.track(self.request, False)
            super().finish()

        def _json(self, code: int, obj: object) -> None:
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _record(self, body: dict[str, Any]) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            backend.record(Seen(self.command, self.path, headers, body))

        def do_GET(self) -> None:
            self._record({})
            if self.path == "/health":
                self._json(200, {})
            elif self.path == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": "stub-model", "object": "model"}]})
            elif self.path == "/metrics" and backend.metrics:
                data = backend.metrics.encode()
                self.send_response(200)
                self.send_header("content-type", "text/plain; version=0.0.4")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            else:
                self._json(404, {"error": "not found"})

        def do_POST(self) -> None:
            size = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(size) or b"{}")
            self._record(body)
            if self.path.endswith("/render"):
                self._json(200, {"prompt_token_ids": [1, 2, 3]})
                return
            if self.path not in COMPLETION_PATHS:
                self._json(404, {"error": "not found"})
                return
            if backend.hold_s:
                time.sleep(backend.hold_s)
            chat = self.path == "/v1/chat/completions"
            if backend.role == "prefill":
                reply = _completion(chat, "P", f"prefill-{backend.engine_id}")
                if backend.send_kv:
                    reply["kv_transfer_params"] = prefill_kv_params(backend.engine_id, 36000)
                self._json(200, reply)
                return
            kv = body.get("kv_transfer_params") or {}
            if not kv.get("do_remote_prefill") or not kv.get("remote_block_ids"):
                self._json(400, {"error": "decode stub: no kv_transfer_params from a prefill"})
                return
            text = f"decoded by {backend.url}"
            if body.get("stream"):
                self._stream(chat, text)
            else:
                self._json(200, _completion(chat, text, "decode"))

        def _stream(self, chat: bool, text: str) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for word in [*text.split(" "), None]:
                data = "[DONE]" if word is None else json.dumps(_chunk(chat, word + " "))
                event = f"data: {data}\n\n".encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.write(b"0\r\n\r\n")

    return Handler


def _completion(chat: bool, text: str, rid: str) -> dict[str, Any]:
    if chat:
        message = {"role": "assistant", "content": text}
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": "stop"}
        return {"id": rid, "object": "chat.completion", "model": "stub-model", "choices": [choice]}
    choice = {"index": 0, "text": text, "finish_reason": "stop"}
    return {"id": rid, "object": "text_completion", "model": "stub-model", "choices": [choice]}


def _chunk(chat: bool, text: str) -> dict[str, Any]:
    if chat:
        return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}}]}
    return {"object": "text_completion", "choices": [{"index": 0, "text": text}]}
