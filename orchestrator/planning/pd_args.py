"""The `vllm serve` argv and container environment of one DP rank of a prefill/decode pool.

Follows vllm-project/vllm-ascend docs/source/tutorials/features/pd_disaggregation_mooncake_multi_node.md
@v0.23.0 ("Prefiller/Decoder Deployment", Non-layerwise and Layerwise tabs: the same command lines but the
connector) and examples/external_online_dp/run_dp_template.sh @v0.23.0 (one `vllm serve` per DP rank with
--data-parallel-rank). The engine arguments and the environment the aggregated path writes
(planning/serve_args.py) are reused: one source for --max-model-len, --quantization, HCCL_*, the device mask.
"""

from __future__ import annotations

import json
from typing import Any

from orchestrator.catalog import ChipFacts
from orchestrator.planning import serve_args
from orchestrator.planning.pd_model import PdRole
from orchestrator.spec.disaggregation import Disaggregation, PdPool
from orchestrator.spec.serving import Hccl, Serving

ABORT_TIMEOUT_ENV = "VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT"
"""Seconds a prefill instance keeps KV that no decode instance pulled (vllm_ascend/envs.py @v0.23.0; read by
mooncake_connector.py @v0.23.0 on the producer side)."""

KV_ROLE: dict[PdRole, str] = {"prefill": "kv_producer", "decode": "kv_consumer"}


def pool_serving(serving: Serving, pool: PdPool) -> Serving:
    """serving with the pool's overrides (None: serving's value), for engine_args and capacity."""
    update: dict[str, Any] = {}
    for name in ("max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization", "enforce_eager"):
        value = getattr(pool, name)
        if value is not None:
            update[name] = value
    if pool.hccl_buffsize_mb is not None:
        update["hccl"] = pool_hccl(serving.hccl, pool)
    return serving.model_copy(update=update)


def pool_hccl(hccl: Hccl, pool: PdPool) -> Hccl:
    if pool.hccl_buffsize_mb is None:
        return hccl
    return hccl.model_copy(update={"buffsize_mb": pool.hccl_buffsize_mb})


def kv_transfer_config(pd: Disaggregation, role: PdRole, kv_port: int, engine_id: str) -> dict[str, Any]:
    """--kv-transfer-config of an instance: the tutorial's JSON (kv_port a string, as there and in upstream
    CI tests/e2e/weekly/multi_node/external_dp/config/DeepSeek_V3.1T_MTP1_PD.yaml @v0.23.0) with the planned
    engine_id. kv_connector_extra_config.prefill/decode.{dp_size,tp_size} are required by the connector
    (mooncake_connector.py @v0.23.0, _get_prefill_decode_size); prefill pp_size only when > 1."""
    prefill: dict[str, Any] = {"dp_size": pd.prefill.parallelism.dp, "tp_size": pd.prefill.parallelism.tp}
    if pd.prefill.parallelism.pp > 1:
        prefill["pp_size"] = pd.prefill.parallelism.pp
    decode = {"dp_size": pd.decode.parallelism.dp, "tp_size": pd.decode.parallelism.tp}
    return {
        "kv_connector": pd.connector,
        "kv_role": KV_ROLE[role],
        "kv_port": str(kv_port),
        "engine_id": engine_id,
        "kv_connector_extra_config": {"prefill": prefill, "decode": decode},
    }


def pool_json_args(pool: PdPool) -> list[str]:
    """--speculative-config, --additional-config, --compilation-config of the pool (when set), keys sorted:
    the argv does not depend on the order the spec writes them in."""
    args: list[str] = []
    if pool.speculative_config is not None:
        args += ["--speculative-config", json.dumps(pool.speculative_config, sort_keys=True)]
    if pool.additional_config:
        args += ["--additional-config", json.dumps(pool.additional_config, sort_keys=True)]
    if pool.compilation_config is not None:
        args += ["--compilation-config", json.dumps(pool.compilation_config, sort_keys=True)]
    return args


def rank_dp_args(*, dp: int, dp_rank: int, dp_address: str, rpc_port: int) -> list[str]:
    """External DP (launch_online_dp.py): each rank its own API server with its global --data-parallel-rank;
    --data-parallel-size comes with the engine arguments. Nothing for a one-rank instance."""
    if dp <= 1:
        return []
    return [
        "--data-parallel-rank", str(dp_rank),
        "--data-parallel-address", dp_address,
        "--data-parallel-rpc-port", str(rpc_port),
    ]  # fmt: skip


def rank_env(
    *,
    role: PdRole,
    pd: Disaggregation,
    pool: PdPool,
    serving: Serving,
    devices: tuple[int, ...],
    world_size: int,
    chip: ChipFacts,
    if_ip: str,
    socket_ifname: str | None,
    servers: int,
) -> list[tuple[str, str]]:
    """The aggregated path's environment (device mask, HCCL_*, serving.env) with the pool's HCCL_BUFFSIZE and
    env, and on prefill ranks VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT."""
    env = serve_args.member_env(
        devices=devices,
        world_size=world_size,
        hccl=pool_hccl(serving.hccl, pool),
        chip=chip,
        if_ip=if_ip,
        socket_ifname=socket_ifname,
        ray=False,
        extra={k: v for k, v in {**serving.env, **pool.env}.items() if k != ABORT_TIMEOUT_ENV},
        servers=servers,
    )
    if role == "prefill":
        env.append((ABORT_TIMEOUT_ENV, str(pd.abort_request_timeout_s)))
    return env
