"""Prefill side of the Mooncake PD protocol: the KV blocks a prefill engine keeps for the decode, and the
handshake listeners the decode pulls them through.

Real behaviour (vllm_ascend/distributed/kv_transfer/kv_p2p/mooncake_connector.py@v0.23.0):
``MooncakeConnectorScheduler.request_finished`` keeps ("Delaying free of N blocks for request R") the prompt
blocks of a request that asked for ``do_remote_decode`` and ended length-capped (``max_tokens=1``); each
worker's ``KVCacheSendingThread`` listens on ``tcp://<ip>:<side_channel_port + device index>`` (ZMQ ROUTER)
and answers GET_META_MSG with its ``MooncakeAgentMetadata`` and DONE_RECVING_MSG with ``ACK``; the decode
reads the blocks with Mooncake's TransferEngine (one-sided RDMA) and the blocks are freed when every worker
got DONE_RECVING_MSG, or by ``KVCacheTaskTracker._retrieve_expired_requests`` after
``VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT`` seconds (vllm/envs.py@v0.23.0: default 480), logged as an ERROR. A
DONE for a request no longer held logs "MooncakeConnector finish req not in reqs to process".

The simulator carries the same exchange as JSON lines over one TCP connection per handshake port
(``wire.JsonConn``; the RDMA read becomes a ``read`` message on that connection)::

    decode -> prefill  {"type": "get_meta", "engine_id": "<decode's>"}
    prefill -> decode  {"type": "meta", "engine_id": "...", "te_rpc_port": P, "handshake_port": P,
                        "local_ip": "127.0.0.2", "block_size": 128, "num_blocks": N}
    decode -> prefill  {"type": "read", "request_id": "...", "block_ids": [[1, 2]]}
    prefill -> decode  {"type": "data", "ret": 0, "blocks": 2, "stale": false}   (ret -1: transfer failed)
    decode -> prefill  {"type": "done", "request_id": "..."}
    prefill -> decode  {"type": "ack"}

``stale`` is true when the blocks are no longer held (freed by the timeout): a real RDMA read does not know,
it reads whatever the blocks hold now, so the decode answers from stale KV (other text). Faults (faults.py):
``kv_transfer_failure`` (``read`` answers ret -1), ``kv_never_freed`` (nothing is freed: the held-block count
only grows), ``wrong_engine_id`` (``meta`` reports the puller's engine id).
"""

from __future__ import annotations

import contextlib
import math
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import vlog
from .faults import FaultSource
from .wire import JsonConn

SRC = "mooncake_connector.py"


@dataclass
class _Held:
    blocks: list[int]
    since: float  # time.time(), as request_finished records it
    ports_left: set[int] = field(default_factory=set)


class KVHolder:
    """The blocks one prefill engine (DP rank) keeps until the decode is done pulling them."""

    def __init__(
        self,
        process: str,
        ports: list[int],
        num_blocks: int,
        block_size: int,
        timeout_s: float,
        faults: FaultSource,
        on_change: Callable[[int], None],
    ) -> None:
        self.process, self.ports, self.block_size = process, ports, block_size
        self.timeout_s, self.faults, self.on_change = timeout_s, faults, on_change
        self._free = list(range(max(num_blocks - 1, 1), 0, -1))  # block 0 is vLLM's null block
        self._held: dict[str, _Held] = {}
        self._lock = threading.Lock()

    def held_blocks(self) -> int:
        with self._lock:
            return sum(len(h.blocks) for h in self._held.values())

    def hold(self, request_id: str, prompt_tokens: int) -> list[int]:
        """``request_finished``: keep the prompt blocks; returns their ids (one KV cache group)."""
        count = max(math.ceil(prompt_tokens / self.block_size), 0)
        with self._lock:
            blocks = [self._free.pop() for _ in range(min(count, len(self._free)))]
            if blocks:
                self._held[request_id] = _Held(blocks, time.time(), set(self.ports))
        if blocks:
            vlog.info(
                f"{SRC}:1910",
                f"Delaying free of {len(blocks)} blocks for request {request_id}",
                process=self.process,
            )
            self.on_change(len(blocks))
        return blocks

    def lookup(self, request_id: str, block_ids: list[int]) -> bool:
        """Whether ``block_ids`` still hold this request's KV."""
        with self._lock:
            held = self._held.get(request_id)
            return held is not None and held.blocks == block_ids

    def _release(self, request_id: str) -> None:
        with self._lock:
            held = self._held.pop(request_id, None)
            if held is not None:
                self._free.extend(reversed(held.blocks))
        if held is not None:
            self.on_change(-len(held.blocks))

    def _leak(self, request_id: str, why: str) -> None:
        vlog.warning(
            "fake_vllm",
            f"fault kv_never_freed: not freeing the blocks of request {request_id} ({why}); "
            f"held blocks: {self.held_blocks()}",
            process=self.process,
        )

    def done(self, request_id: str, port: int) -> None:
        """DONE_RECVING_MSG on ``port`` (``KVCacheTaskTracker.update_done_task_count``)."""
        with self._lock:
            held = self._held.get(request_id)
            if held is not None:
                held.ports_left.discard(port)
                last = not held.ports_left
        if held is None:
            vlog.warning(
                f"{SRC}:194",
                "MooncakeConnector finish req not in reqs to process. "
                f"request_id={request_id}. "
                "Possible cause: Request was already completed or not properly tracked. "
                "Check: Verify request lifecycle and tracking logic.",
                process=self.process,
            )
        elif last:
            if self.faults.current.kv_never_freed:
                self._leak(request_id, "the decode is done pulling")
            else:
                self._release(request_id)

    def reap(self) -> None:
        """Free requests held longer than the abort timeout (``_retrieve_expired_requests``)."""
        now = time.time()
        with self._lock:
            expired = [r for r, h in self._held.items() if now - h.since > self.timeout_s]
        timeout = int(self.timeout_s) if self.timeout_s == int(self.timeout_s) else self.timeout_s
        for request_id in expired:
            if self.faults.current.kv_never_freed:
                with self._lock:
                    if request_id in self._held:
                        self._held[request_id].since = float("inf")  # reported once
                self._leak(request_id, f"VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT={timeout} s passed")
                continue
            for _port in self.ports:  # each worker's task tracker logs it
                vlog.error(
                    f"{SRC}:233",
                    f"Force freed expired request: {request_id}. "
                    f"Reason: Request exceeded timeout threshold ({timeout} seconds). "
                    "Action: Resources have been forcibly released to prevent memory leak.",
                    process=self.process,
                )
            self._release(request_id)


class Listener:
    """One worker's handshake port (``KVCacheSendingThread``)."""

    def __init__(
        self,
        host: str,
        port: int,
        tp_rank: int,
        holder: KVHolder,
        meta: dict[str, Any],
        stop: threading.Event,
    ) -> None:
        self.host, self.port, self.tp_rank = host, port, tp_rank
        self.holder, self.meta, self.stop = holder, meta, stop
        self.sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)

    def start(self) -> None:
        """Bind (OSError when taken, as ZMQ's 'Address already in use') and serve in the background."""
        self.sock.bind((self.host, self.port))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        vlog.info(
            f"{SRC}:301",
            f"KVCacheSendingThread started listening on path: tcp://{self.host}:{self.port}. "
            f"Thread: tp_rank={self.tp_rank}, pp_rank=0, pcp_rank=0",
            process=self.holder.process,
        )
        threading.Thread(target=self._accept, name=f"kv-listen-{self.port}", daemon=True).start()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                sock, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(JsonConn(sock),), daemon=True).start()

    def _serve(self, conn: JsonConn) -> None:
        try:
            while not self.stop.is_set():
                for msg in conn.recv(0.5):
                    conn.send(self._answer(msg))
        except (ConnectionError, OSError):
            pass
        finally:
            conn.close()

    def _answer(self, msg: dict[str, Any]) -> dict[str, Any]:
        faults = self.holder.faults.current
        kind = msg.get("type")
        if kind == "get_meta":
            meta = dict(self.meta)
            if faults.wrong_engine_id and msg.get("engine_id"):
                meta["engine_id"] = str(msg["engine_id"])
            return {"type": "meta", **meta}
        request_id = str(msg.get("request_id", ""))
        if kind == "read":
            if faults.kv_transfer_failure:
                return {"type": "data", "ret": -1}
            group = (msg.get("block_ids") or [[]])[0]
            fresh = self.holder.lookup(request_id, [int(b) for b in group])
            return {"type": "data", "ret": 0, "blocks": len(group), "stale": not fresh}
        if kind == "done":
            process = self.holder.process
            vlog.debug(f"{SRC}:363", f"Got DONE_RECVING_MSG for request {request_id}", process=process)
            self.holder.done(request_id, self.port)
            return {"type": "ack"}
        vlog.error(
            f"{SRC}:388",
            "Connection listener received unexpected message type. Expected: GET_META_MSG or "
            f"DONE_RECVING_MSG. Actual: {kind}. Full message: {msg}. Check: Verify message protocol "
            "implementation.",
            process=self.holder.process,
        )
        return {"type": "error"}
