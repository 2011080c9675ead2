"""HTTP servers on 127.0.0.1 that answer fixed routes (status, body): what vLLM, vllm-router and its PD slots
answer to the probes of `orchestrator status`."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class _Handler(BaseHTTPRequestHandler):
    routes: dict[str, tuple[int, str]] = {}

    def do_GET(self) -> None:
        status, body = self.routes.get(self.path, (404, ""))
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


Routes = dict[str, tuple[int, str]]


@pytest.fixture
def serve() -> Iterator[Callable[[Routes], str]]:
    """serve(routes) -> base URL; servers stop at the end."""
    servers: list[ThreadingHTTPServer] = []

    def start(routes: Routes) -> str:
        handler = type("H", (_Handler,), {"routes": routes})
        srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}"

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()
