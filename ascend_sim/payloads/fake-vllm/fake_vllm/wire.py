"""JSON lines over TCP: the simulator's stand-in for vLLM's ZMQ handshake and Ray's gRPC (``dp``, ``ray*``).

One JSON object per line; :meth:`JsonConn.recv` returns the objects that arrived within a timeout and
raises ``ConnectionError`` on EOF. ``send`` may be called from several threads; ``recv`` from one.
Messages that arrive while :meth:`JsonConn.request` waits for its reply are kept for the next ``recv``: a
GCS pushes a node's bundles right behind ``registered`` when a placement group was waiting for that node.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from typing import Any


class JsonConn:
    """A TCP connection carrying JSON lines."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buf = b""
        self._held: list[dict[str, Any]] = []  # arrived during request(), not its reply
        self._lock = threading.Lock()

    @classmethod
    def connect(cls, host: str, port: int, timeout: float = 2.0) -> JsonConn:
        return cls(socket.create_connection((host, port), timeout=timeout))

    def send(self, msg: dict[str, Any]) -> None:
        with self._lock:
            self.sock.sendall((json.dumps(msg) + "\n").encode())

    def recv(self, timeout: float) -> list[dict[str, Any]]:
        """Messages that arrived within ``timeout`` (maybe none); ConnectionError on EOF."""
        if self._held:
            held, self._held = self._held, []
            return held
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except TimeoutError:
            return []
        if not data:
            raise ConnectionError("connection closed by peer")
        self._buf += data
        out = []
        while b"\n" in self._buf:
            line, self._buf = self._buf.split(b"\n", 1)
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if isinstance(msg, dict):
                out.append(msg)
        return out

    def request(self, msg: dict[str, Any], reply_type: str, timeout: float = 10.0) -> dict[str, Any]:
        """Send ``msg`` and wait for the first reply of ``reply_type``; others wait for the next ``recv``."""
        self.send(msg)
        held, self._held = self._held, []
        waited = 0.0
        try:
            while waited < timeout:
                got = self.recv(0.5)
                for i, reply in enumerate(got):
                    if reply.get("type") == reply_type:
                        held.extend(got[i + 1 :])
                        return reply
                    held.append(reply)
                waited += 0.5
        finally:
            self._held = held + self._held
        raise ConnectionError(f"no '{reply_type}' reply within {timeout:g} s")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
