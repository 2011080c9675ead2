"""Multi-node data parallelism: the head's RPC listener and the ``--headless`` ranks that join it.

JSON lines over TCP on ``--data-parallel-address:--data-parallel-rpc-port`` (the head binds it before
loading, like vLLM's handshake socket, so headless ranks may connect early)::

    headless -> head  {"type": "hello", "start_rank": 2, "local_size": 2, "dp_size": 4, "tp": 4, "pp": 1,
                       "model_hash": "<sha256 of the weights>", "host": "a2-02", "pid": 7}
    head -> headless  {"type": "welcome", "ranks": [2, 3]}  or  {"type": "reject", "reason": "..."}
    both ways         {"type": "ping"} every FAKE_VLLM_DP_HEARTBEAT_S (default 2) seconds

The head answers a hello once its own weights are loaded. It rejects a rank range outside
``[0, dp_size)``, overlapping its own or another connected rank's, a different DP size / TP / PP, or other
weights (model hash). It is ready when every DP rank it does not run itself is held by a connected headless;
when a headless goes away (EOF, or 5 heartbeats of silence) its ranks are missing again. A headless retries
the connection with backoff for FAKE_VLLM_DP_CONNECT_TIMEOUT_S (default 600) seconds; after losing an
established head it reconnects for FAKE_VLLM_DP_LOST_TIMEOUT_S (default 60) seconds, then exits 1.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

from . import vlog
from .wire import JsonConn as _Conn

_SRC_HEAD = "utils.py:807"
_SRC_HEADLESS = "serve.py:203"


class Head:
    """The head's side: accepts headless ranks, knows which DP ranks are served."""

    def __init__(
        self,
        address: str,
        port: int,
        dp_size: int,
        local_ranks: range,
        tp: int,
        pp: int,
        heartbeat: float,
        stop: threading.Event,
    ) -> None:
        self.address, self.port = address, port
        self.dp_size, self.local_ranks, self.tp, self.pp = dp_size, local_ranks, tp, pp
        self.heartbeat = heartbeat
        self.stop = stop
        self.model_hash: str | None = None
        self._loaded = threading.Event()
        self._lock = threading.Lock()
        self._remote: dict[int, str] = {}
        self._sock: socket.socket | None = None

    def start(self) -> None:
        family = socket.AF_INET6 if ":" in self.address else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.address, self.port))
        sock.listen(16)
        sock.settimeout(0.5)
        self._sock = sock
        threading.Thread(target=self._accept_loop, name="dp-accept", daemon=True).start()
        remote = self.dp_size - len(self.local_ranks)
        vlog.info(
            _SRC_HEAD,
            f"Waiting for {len(self.local_ranks)} local, {remote} remote core engine proc(s) "
            f"to start (handshake address tcp://{self.address}:{self.port}).",
        )

    def set_model_hash(self, model_hash: str) -> None:
        self.model_hash = model_hash
        self._loaded.set()

    def missing_ranks(self) -> list[int]:
        with self._lock:
            return [r for r in range(self.dp_size) if r not in self.local_ranks and r not in self._remote]

    def ready(self) -> bool:
        return not self.missing_ranks()

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()

    def _accept_loop(self) -> None:
        if self._sock is None:  # listen() opens it before this thread starts
            return
        while not self.stop.is_set():
            try:
                client, peer = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            name = f"{peer[0]}:{peer[1]}"
            threading.Thread(target=self._serve, args=(_Conn(client), name), daemon=True).start()

    def _check(self, hello: dict[str, Any]) -> tuple[list[int], str | None]:
        try:
            start, size = int(hello["start_rank"]), int(hello["local_size"])
            dp, tp, pp = int(hello["dp_size"]), int(hello["tp"]), int(hello["pp"])
        except (KeyError, TypeError, ValueError):
            return [], f"malformed hello {hello!r}"
        ranks = list(range(start, start + size))
        if (dp, tp, pp) != (self.dp_size, self.tp, self.pp):
            return ranks, (
                f"parallel config differs: head has data_parallel_size={self.dp_size} tp={self.tp} "
                f"pp={self.pp}, headless has data_parallel_size={dp} tp={tp} pp={pp}"
            )
        if hello.get("model_hash") != self.model_hash:
            return ranks, (
                f"model weights differ: head sha256 {self.model_hash}, DP ranks {ranks} have sha256 "
                f"{hello.get('model_hash')}"
            )
        if size < 1 or start < 0 or start + size > self.dp_size:
            return ranks, f"DP ranks {ranks} are outside data_parallel_size {self.dp_size}"
        with self._lock:
            taken = [r for r in ranks if r in self.local_ranks or r in self._remote]
            if taken:
                return ranks, f"DP ranks {taken} are already served (head runs {list(self.local_ranks)})"
            for r in ranks:
                self._remote[r] = "pending"
        return ranks, None

    def _serve(self, conn: _Conn, peer: str) -> None:
        ranks: list[int] = []
        try:
            hello: dict[str, Any] | None = None
            deadline = time.monotonic() + 30
            while hello is None and time.monotonic() < deadline and not self.stop.is_set():
                msgs = [m for m in conn.recv(1.0) if m.get("type") == "hello"]
                hello = msgs[0] if msgs else None
            if hello is None:
                return
            while not self._loaded.wait(0.5):
                if self.stop.is_set():
                    return
            ranks, reason = self._check(hello)
            if reason is not None:
                vlog.error(_SRC_HEAD, f"Rejected engine handshake from {peer}: {reason}")
                conn.send({"type": "reject", "reason": reason})
                ranks = []
                return
            with self._lock:
                for r in ranks:
                    self._remote[r] = peer
            conn.send({"type": "welcome", "ranks": ranks})
            for r in ranks:
                vlog.info(_SRC_HEAD, f"Core engine process {r} ready (remote, {hello.get('host', peer)}).")
            if self.ready():
                vlog.info(_SRC_HEAD, f"All {self.dp_size} data parallel engines are ready.")
            _heartbeat(conn, self.heartbeat, self.stop)
            if not self.stop.is_set():
                vlog.warning(
                    _SRC_HEAD,
                    f"Lost remote core engine process(es) {ranks} at {peer}; "
                    "the server is not healthy until they reconnect.",
                )
        except (OSError, ConnectionError):
            pass
        finally:
            with self._lock:
                for r in ranks:
                    self._remote.pop(r, None)
            conn.close()


def _heartbeat(conn: _Conn, heartbeat: float, stop: threading.Event) -> None:
    """Exchange pings until the peer is gone (EOF or 5 silent heartbeats) or ``stop`` is set."""
    last_heard = last_sent = time.monotonic()
    while not stop.is_set():
        now = time.monotonic()
        if now - last_sent >= heartbeat:
            conn.send({"type": "ping"})
            last_sent = now
        try:
            if conn.recv(min(heartbeat, 0.5)):
                last_heard = time.monotonic()
        except (OSError, ConnectionError):
            return
        if time.monotonic() - last_heard > 5 * heartbeat:
            return


class Headless:
    """A ``--headless`` process: joins the head, stays up, exits 1 if the head is gone for good."""

    def __init__(
        self,
        address: str,
        port: int,
        hello: dict[str, Any],
        heartbeat: float,
        connect_timeout: float,
        lost_timeout: float,
        stop: threading.Event,
    ) -> None:
        self.address, self.port, self.hello = address, port, hello
        self.heartbeat, self.connect_timeout, self.lost_timeout = heartbeat, connect_timeout, lost_timeout
        self.stop = stop
        self.joined = threading.Event()
        self.error: str | None = None

    def _connect(self, deadline: float) -> _Conn | None:
        delay = 0.1
        while not self.stop.is_set() and time.monotonic() < deadline:
            try:
                sock = socket.create_connection((self.address, self.port), timeout=2)
                return _Conn(sock)
            except OSError:
                self.stop.wait(min(delay, max(deadline - time.monotonic(), 0)))
                delay = min(delay * 1.5, 5.0)
        return None

    def run(self) -> int:
        """0 after ``stop``; 1 when rejected or when the head stays unreachable."""
        ranks = list(range(self.hello["start_rank"], self.hello["start_rank"] + self.hello["local_size"]))
        vlog.info(
            _SRC_HEADLESS,
            f"Launching {len(ranks)} data parallel engine(s) in headless mode, with head "
            f"node address tcp://{self.address}:{self.port}.",
        )
        deadline = time.monotonic() + self.connect_timeout
        while not self.stop.is_set():
            conn = self._connect(deadline)
            if conn is None:
                if self.stop.is_set():
                    break
                what = "lost the" if self.joined.is_set() else "could not reach the"
                self.error = (
                    f"Headless DP ranks {ranks} {what} data parallel head at {self.address}:{self.port}"
                )
                return 1
            session = False
            try:
                conn.send(self.hello)
                reply = self._await_reply(conn)
                if reply is None:
                    raise ConnectionError("no handshake reply")
                if reply.get("type") == "reject":
                    self.error = f"Data parallel head rejected DP ranks {ranks}: {reply.get('reason')}"
                    return 1
                vlog.info(
                    _SRC_HEADLESS,
                    f"Handshake with head tcp://{self.address}:{self.port} complete; "
                    f"DP ranks {ranks} joined.",
                )
                self.joined.set()
                session = True
                _heartbeat(conn, self.heartbeat, self.stop)
            except (OSError, ConnectionError):
                pass
            finally:
                conn.close()
            if self.stop.is_set():
                break
            if session:  # an established session ended: the head has this long to come back
                vlog.warning(
                    _SRC_HEADLESS,
                    f"Connection to the data parallel head tcp://{self.address}:"
                    f"{self.port} lost; reconnecting for {self.lost_timeout:g} s.",
                )
                deadline = time.monotonic() + self.lost_timeout
            else:
                self.stop.wait(0.2)
        return 0

    def _await_reply(self, conn: _Conn) -> dict[str, Any] | None:
        """The head answers once its weights are loaded: wait as long as the connection is open."""
        while not self.stop.is_set():
            for msg in conn.recv(0.5):
                if msg.get("type") in ("welcome", "reject"):
                    return msg
        return None


NON_MOE_EXTERNAL_DP = (
    "Non-MoE models do not support external data parallel mode. For external load balancing, launch "
    "independent vLLM instances without --data-parallel-* arguments."
)  # vllm/engine/arg_utils.py@v0.23.0 (create_engine_config)


def external_lb_problem(dp_size: int, dp_rank: int | None, dp_local: int | None) -> tuple[str, str] | None:
    """vLLM's checks of ``--data-parallel-rank`` (external DP: one API server per rank), as (type, message):
    vllm/engine/arg_utils.py and vllm/config/parallel.py@v0.23.0."""
    if dp_rank is None:
        return None
    if dp_local not in (1, None):
        return "AssertionError", "data_parallel_size_local must be 1 or None when data_parallel_rank is set"
    if not 0 <= dp_rank < dp_size:
        return "ValueError", f"data_parallel_rank ({dp_rank}) must be in the range [0, {dp_size})"
    return None
