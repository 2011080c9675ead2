"""Prefill/decode disaggregation with vllm-ascend's MooncakeConnectorV1: what the API does with
``kv_transfer_params`` (P-first, as vllm-ascend's examples/disaggregated_prefill_v1/
load_balance_proxy_server_example.py@v0.23.0 and vllm-router's ``--vllm-pd-disaggregation`` send it).

* Prefill (``kv_role`` kv_producer): a request with ``kv_transfer_params.do_remote_decode`` that ends
  length-capped keeps its prompt blocks (pd_prefill.KVHolder) and its response carries the dict
  ``MooncakeConnectorScheduler.request_finished`` returns (mooncake_connector.py@v0.23.0), see
  :meth:`PD.finished`. Any other request is served as usual (``request_finished`` returns ``False, None``).
* Decode (any other role): a request with ``do_remote_prefill`` pulls the blocks first (pd_decode.Puller);
  without ``kv_transfer_params`` it is computed locally, as ``get_num_new_matched_tokens`` returns
  ``(0, False)`` for it. A failed pull follows vLLM's ``kv_transfer_config.kv_load_failure_policy``
  (vllm/config/kv_transfer.py@v0.23.0, default "fail"): the scheduler fails the request
  (vllm/v1/core/sched/scheduler.py ``_handle_invalid_blocks``: FINISHED_ERROR) and the API answers 500
  ``Internal server error`` (``GenerationError``; a stream sends that error event, then ``[DONE]``:
  vllm/entrypoints/openai/engine/serving.py ``_raise_if_error``); "recompute" logs "Recovered from KV load
  failure" and computes locally. Either way the answer text of a served request is the fake's non-PD answer,
  except after a "stale" read (the blocks had been freed), which answers from garbage KV (other text).
* Metrics: vLLM's ``vllm:prompt_tokens_by_source_total{source="external_kv_transfer"}`` counts pulled prompt
  tokens (metrics.py); the simulator's own gauge ``ascend_sim_kv_held_blocks`` counts blocks a prefill
  engine keeps for decodes (vLLM has no such metric for this connector).

Environment: ``VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT`` (seconds, default 480 as vllm/envs.py@v0.23.0),
``VLLM_HOST_IP`` (the handshake address; else ``--host`` unless a wildcard, else 127.0.0.1),
``FAKE_VLLM_KV_SOCKET_TIMEOUT_S`` (the decode's socket timeout per try, default 1.0 as the connector's).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import vlog
from .cli import ServeConfig
from .faults import FaultSource
from .kvconfig import CONNECTOR_FILE, KVConfig, KVConfigError
from .metrics import Metrics
from .pd_decode import Puller
from .pd_prefill import KVHolder, Listener

SRC = "mooncake_connector.py"
SCHED = "scheduler.py:2403"
SERVING = "serving.py:195"
DEFAULT_ABORT_TIMEOUT = 480


class KVLoadError(Exception):
    """A decode request whose KV pull failed under kv_load_failure_policy "fail"."""


@dataclass(frozen=True)
class Engine:
    rank: int
    engine_id: str
    process: str
    side_channel_port: int


def side_channel_host(env: dict[str, str], host: str | None) -> str:
    if env.get("VLLM_HOST_IP"):
        return env["VLLM_HOST_IP"]
    return host if host and host not in ("0.0.0.0", "::", "") else "127.0.0.1"


class PD:
    """The KV connector of one API server: its DP engines' ids and ports, held KV (prefill) or pullers."""

    def __init__(
        self,
        kv: KVConfig,
        engines: list[Engine],
        host: str,
        tp: int,
        block_size: int,
        num_blocks: int,
        env: dict[str, str],
        faults: FaultSource,
        on_held: Callable[[int, int], None],
        stop: threading.Event,
    ) -> None:
        self.kv, self.engines, self.host, self.tp = kv, {e.rank: e for e in engines}, host, tp
        self.block_size, self.faults, self.stop = block_size, faults, stop
        timeout = float(env.get("VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT") or DEFAULT_ABORT_TIMEOUT)
        sock_timeout = float(env.get("FAKE_VLLM_KV_SOCKET_TIMEOUT_S") or 1.0)
        self.holders: dict[int, KVHolder] = {}
        self.pullers: dict[int, Puller] = {}
        self.listeners: list[Listener] = []
        for e in engines:
            vlog.info(f"{SRC}:1637", f"Initializing Mooncake Scheduler {e.engine_id}", process=e.process)
            if kv.producer:
                ports = [e.side_channel_port + i for i in range(tp)]
                holder = KVHolder(
                    e.process,
                    ports,
                    num_blocks,
                    block_size,
                    timeout,
                    faults,
                    functools.partial(on_held, e.rank),
                )
                self.holders[e.rank] = holder
                meta: dict[str, Any] = {
                    "engine_id": e.engine_id,
                    "local_ip": host,
                    "block_size": block_size,
                    "num_blocks": num_blocks,
                }
                for i, port in enumerate(ports):
                    self.listeners.append(
                        Listener(
                            host, port, i, holder, {**meta, "te_rpc_port": port, "handshake_port": port}, stop
                        )
                    )
            else:
                self.pullers[e.rank] = Puller(
                    e.engine_id, host, kv.prefill_tp or tp, sock_timeout, faults, e.process
                )

    def start(self) -> None:
        """Bind the producers' handshake ports; KVConfigError (RuntimeError) when one is taken."""
        for listener in self.listeners:
            try:
                listener.start()
            except OSError as exc:
                vlog.error(
                    f"{SRC}:312",
                    "Mooncake KVCacheSendingThread encountered exception. Thread: tp_rank="
                    f"{listener.tp_rank}, pp_rank=0, listening_path=tcp://{self.host}:{listener.port}. "
                    f"Error: Address already in use ({exc.strerror})",
                )
                raise KVConfigError(
                    "RuntimeError", "KV Cache sending/receiving thread failed to start.", CONNECTOR_FILE
                ) from exc
        if self.holders:
            threading.Thread(target=self._reap, name="kv-reaper", daemon=True).start()

    def close(self) -> None:
        for listener in self.listeners:
            listener.close()

    def _reap(self) -> None:
        while not self.stop.wait(0.1):
            for holder in self.holders.values():
                holder.reap()

    def held_blocks(self) -> dict[int, int]:
        return {rank: h.held_blocks() for rank, h in self.holders.items()}

    # --- requests ---------------------------------------------------------------------------------------
    def before(self, engine: int, request_id: str, api_id: str, params: Any, prompt_tokens: int) -> str:
        """Decode side, before the request is scheduled (``request_id``: the engine's, ``api_id``: the API
        server's): "local", "pulled" or "stale"; KVLoadError when the pull failed and the policy is "fail"."""
        puller = self.pullers.get(engine)
        if puller is None or not isinstance(params, dict) or not self.kv.pulls:
            return "local"
        outcome = puller.pull(request_id, params)
        if outcome != "failed":
            return outcome
        process = self.engines[engine].process
        if self.kv.load_failure_policy == "recompute":
            vlog.warning(
                SCHED,
                "Recovered from KV load failure: 1 request(s) rescheduled "
                f"({prompt_tokens} tokens affected).",
                process=process,
            )
            return "local"
        vlog.error(
            SCHED,
            "Failing 1 request(s) due to KV load failure (failure_policy=fail, "
            f"{prompt_tokens} tokens affected). Request IDs: {{'{request_id}'}}",
            process=process,
        )
        vlog.error(SERVING, f"Request {api_id} failed with an internal error during generation")
        raise KVLoadError(request_id)

    def finished(
        self,
        engine: int,
        request_id: str,
        params: Any,
        finish: str | None,
        prompt_tokens: int,
        last_token_id: int,
    ) -> dict[str, Any] | None:
        """Prefill side, ``request_finished``: the response's ``kv_transfer_params`` (None: not kept)."""
        holder = self.holders.get(engine)
        if holder is None or not self.kv.pulls or not isinstance(params, dict):
            return None
        vlog.debug(
            f"{SRC}:1893",
            f"MooncakeConnector request_finished, request_status="
            f"{'FINISHED_LENGTH_CAPPED' if finish == 'length' else 'FINISHED_STOPPED'}, "
            f"kv_transfer_params={params}",
            process=self.engines[engine].process,
        )
        if not params.get("do_remote_decode") or finish != "length":
            return None
        blocks = holder.hold(request_id, prompt_tokens)
        e = self.engines[engine]
        base = e.side_channel_port - self.kv.kv_port
        mapping = {
            str(base + i): {
                "host": self.host,
                "engine_id": e.engine_id,
                "handshake_port": e.side_channel_port + i,
            }
            for i in range(self.tp)
        }
        return {
            "do_remote_prefill": True,
            "do_remote_decode": False,
            "remote_block_ids": [blocks],
            "remote_engine_id": e.engine_id,
            "remote_request_id": request_id,
            "remote_host": self.host,
            "remote_port": e.side_channel_port,
            "remote_pcp_size": 1,
            "remote_dcp_size": 1,
            "remote_ptp_size": self.tp,
            "last_token_id": last_token_id,
            "remote_multi_nodes_meta_mapping": mapping,
            "num_prompt_blocks": len(blocks),
            "remote_block_size": self.block_size,
        }


def engines_of(kv: KVConfig, ranks: list[int], dp: int, external: bool, tp: int, pp: int) -> list[Engine]:
    """The DP engines an API server runs: engine id with vLLM's ``_dp<local rank>`` suffix, process label."""
    out = []
    for index, rank in enumerate(ranks):
        local = 0 if external else index
        process = f"EngineCore_DP{rank}" if dp > 1 or rank > 0 else "EngineCore"
        out.append(
            Engine(rank, kv.engine_id_of(dp, rank, local), process, kv.side_channel_port(rank, tp, pp))
        )
    return out


def build(
    kv: KVConfig,
    cfg: ServeConfig,
    env: dict[str, str],
    faults: FaultSource,
    metrics: Metrics,
    ranks: list[int],
    num_blocks: int,
    stop: threading.Event,
) -> PD:
    """The API server's connector: its engines (``engines_of``) on the host of ``side_channel_host``."""
    engines = engines_of(kv, ranks, cfg.dp, cfg.external_dp, cfg.tp, cfg.pp)
    metrics.show_held = kv.producer

    def on_held(rank: int, blocks: int) -> None:
        metrics.hold(rank, blocks, cfg.block_size)

    host = side_channel_host(env, cfg.host)
    return PD(kv, engines, host, cfg.tp, cfg.block_size, num_blocks, env, faults, on_held, stop)
