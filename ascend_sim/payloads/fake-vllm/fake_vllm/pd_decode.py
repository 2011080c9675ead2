"""Decode side of the Mooncake PD protocol: pull a request's KV blocks from the prefill instance named in its
``kv_transfer_params`` (the JSON-lines exchange is described in pd_prefill.py).

Real behaviour (vllm_ascend/distributed/kv_transfer/kv_p2p/mooncake_connector.py@v0.23.0):
``get_num_new_matched_tokens`` loads the whole prompt from remote when ``do_remote_prefill`` is set;
``update_state_after_alloc`` pulls only when ``remote_block_ids`` is non-empty, and with a key of
remote_engine_id / remote_host / remote_port / remote_request_id missing it logs "Got invalid
KVTransferParams" and computes locally. ``KVCacheRecvingThread`` asks the worker port ``remote_port + remote
TP rank`` for its metadata (``_get_remote_metadata``: "Conflict engine id X with local engine id Y." when
the remote engine id is the local one), reads the blocks ("KV cache transfer for request R took T ms. ..."),
and always sends DONE_RECVING_MSG to every remote worker port so the prefill frees the blocks. Its REQ
sockets time out after 1 s (``self.timeout = 1.0``) and ``ensure_zmq_send`` / ``ensure_zmq_recv`` try 3
times. Any exception is logged with ``logger.exception("Failed to transfer KV cache for request %s: %s",
...)`` and marks the request's blocks invalid; what happens then is the scheduler's
``kv_load_failure_policy`` (pd.py).
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable
from typing import Any

from . import vlog
from .faults import FaultSource
from .wire import JsonConn

SRC = "mooncake_connector.py"
RETRIES = 3  # ensure_zmq_send / ensure_zmq_recv max_retries
EAGAIN = "Resource temporarily unavailable"  # zmq.Again's text when SNDTIMEO / RCVTIMEO expire
NEEDED = ("remote_engine_id", "remote_host", "remote_port", "remote_request_id")


class Puller:
    """One decode engine's ``KVCacheRecvingThread`` (TP rank 0)."""

    def __init__(
        self,
        engine_id: str,
        local_ip: str,
        prefill_tp: int,
        timeout_s: float,
        faults: FaultSource,
        process: str,
    ) -> None:
        self.engine_id, self.local_ip, self.prefill_tp = engine_id, local_ip, prefill_tp
        self.timeout_s, self.faults, self.process = timeout_s, faults, process

    def _log(self, level: Callable[..., None], line: int, message: str) -> None:
        level(f"{SRC}:{line}", message, process=self.process)

    # --- sockets, as ensure_zmq_send / ensure_zmq_recv fail ---------------------------------------------
    def _connect(self, host: str, port: int) -> JsonConn:
        for attempt in range(1, RETRIES + 1):
            start = time.monotonic()
            try:
                return JsonConn.connect(host, port, timeout=self.timeout_s)
            except OSError:
                time.sleep(max(self.timeout_s - (time.monotonic() - start), 0.0))  # the REQ send times out
            if attempt < RETRIES:
                left = RETRIES - attempt
                self._log(vlog.warning, 3725, f"Send failed. error={EAGAIN}, attempts_left={left}. ")
                time.sleep(0.1)
        self._log(vlog.error, 3728, f"Send failed after all retries. error={EAGAIN}. ")
        raise RuntimeError(f"Failed to send data to tcp://{host}:{port} after {RETRIES} retries: {EAGAIN}")

    def _exchange(self, conn: JsonConn, path: str, msg: dict[str, Any], reply: str) -> dict[str, Any]:
        conn.send(msg)
        for attempt in range(1, RETRIES + 1):
            try:
                for got in conn.recv(self.timeout_s):
                    if got.get("type") == reply:
                        return got
            except OSError:  # the peer went away: a REQ socket only sees its receive time out
                time.sleep(self.timeout_s)
            if attempt < RETRIES:
                left = RETRIES - attempt
                self._log(vlog.warning, 3744, f"Receive failed. error={EAGAIN}, attempts_left={left}. ")
                time.sleep(0.1)
        self._log(vlog.error, 3747, f"Receive failed after all retries. source={path}, error={EAGAIN}. ")
        raise RuntimeError(f"Failed to receive data after {RETRIES} retries: {EAGAIN}")

    # --- the pull -----------------------------------------------------------------------------------------
    def pull(self, request_id: str, params: dict[str, Any]) -> str:
        """Pull the blocks of ``params`` for local request ``request_id``: "local" (nothing to pull: compute
        locally), "pulled", "stale" (read blocks the prefill no longer held) or "failed"."""
        vlog.debug(
            f"{SRC}:1803",
            "MooncakeConnector get_num_new_matched_tokens: num_computed_tokens=0, "
            f"kv_transfer_params={params}",
            process=self.process,
        )
        if not params.get("do_remote_prefill") or not params.get("remote_block_ids"):
            return "local"
        if not all(key in params for key in NEEDED):
            self._log(vlog.warning, 1847, f"Got invalid KVTransferParams. params={params}. ")
            return "local"
        host, base = str(params["remote_host"]), int(params["remote_port"])
        remote_id = str(params["remote_request_id"])
        ptp = int(params.get("remote_ptp_size") or self.prefill_tp)
        port = base + zlib.crc32(remote_id.encode()) % ptp  # the remote TP rank this decode rank reads
        outcome = "failed"
        try:
            outcome = self._transfer(host, port, remote_id, params["remote_block_ids"])
        except Exception as exc:  # logger.exception in _handle_request
            self._log(vlog.error, 726, f"Failed to transfer KV cache for request {remote_id}: {exc}")
            vlog.exception_tail(
                f"/vllm-workspace/vllm-ascend/vllm_ascend/distributed/kv_transfer/kv_p2p/{SRC}",
                "_handle_request",
                type(exc).__name__,
                str(exc),
            )
        finally:
            for done_port in range(base, base + ptp):  # every remote worker frees its share
                self._done(host, done_port, remote_id)
        return outcome

    def _transfer(self, host: str, port: int, remote_id: str, block_ids: Any) -> str:
        path = f"tcp://{host}:{port}"
        start = time.perf_counter()
        conn = self._connect(host, port)
        try:
            meta = self._exchange(conn, path, {"type": "get_meta", "engine_id": self.engine_id}, "meta")
            remote_engine = str(meta.get("engine_id"))
            if remote_engine == self.engine_id:
                local = self.engine_id
                raise AssertionError(f"Conflict engine id {remote_engine} with local engine id {local}.")
            ret = -1
            data: dict[str, Any] = {}
            if not self.faults.current.kv_transfer_failure:
                data = self._exchange(
                    conn, path, {"type": "read", "request_id": remote_id, "block_ids": block_ids}, "data"
                )
                ret = int(data.get("ret", -1))
            if ret < 0:
                self._log(
                    vlog.error,
                    964,
                    f"Mooncake transfer failed for request. remote_request_id={remote_id}, ret={ret}. ",
                )
                raise RuntimeError(f"Mooncake transfer failed, ret: {ret}")
        finally:
            conn.close()
        took = (time.perf_counter() - start) * 1000
        self._log(
            vlog.info,
            973,
            f"KV cache transfer for request {remote_id} took {took:.2f} ms. local_ip {self.local_ip} "
            f"local_device_id 0 remote_session_id {host}:{meta.get('te_rpc_port')}",
        )
        return "stale" if data.get("stale") else "pulled"

    def _done(self, host: str, port: int, remote_id: str) -> None:
        vlog.debug(
            f"{SRC}:1410",
            f"Sending done recving signal for request {remote_id} to {host}:{port}",
            process=self.process,
        )
        try:
            conn = self._connect(host, port)
            try:
                self._exchange(conn, f"tcp://{host}:{port}", {"type": "done", "request_id": remote_id}, "ack")
            finally:
                conn.close()
        except (OSError, RuntimeError) as exc:
            self._log(vlog.warning, 1433, f"Unexpected error occurred in socket. error={exc}. ")
