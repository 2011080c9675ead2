"""Prefill/decode disaggregation: one prefill pool and one decode pool, KV moved from prefill to decode by
vllm-ascend's Mooncake connector, a PD gateway in front.

Sources: vllm-project/vllm-ascend docs/source/tutorials/features/pd_disaggregation_mooncake_multi_node.md
@v0.23.0 (4 x Atlas 800T A3, "2P1D": two prefill instances of DP2 x TP8, one decode instance of DP32 x TP1
over two servers; one API server per DP rank, examples/external_online_dp/launch_online_dp.py), the connector
vllm_ascend/distributed/kv_transfer/kv_p2p/mooncake_connector.py @v0.23.0 (kv_port, kv_role,
kv_connector_extra_config).

An instance is one DP group of a pool (its own `--data-parallel-address`, the first server); every DP rank of
it is its own `vllm serve` (API port = pool port + local rank index) and its own gateway worker. Engine ids,
kv roles and the connector's extra config are planned, never typed.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from orchestrator.spec.common import Name, SpecModel
from orchestrator.spec.parallelism import Parallelism

KV_PORT_STEP = 100
"""Instance i of a pool gets kv_port + i * KV_PORT_STEP unless it sets its own (the tutorial's 36000, 36100
for the two prefill instances); an instance binds kv_port .. kv_port + its ranks' devices on each server."""


class PdInstance(SpecModel):
    name: Name
    servers: list[str] = Field(
        min_length=1,
        description="Servers of this instance (one DP group); the first is the DP master "
        "(--data-parallel-address). Its DP ranks are spread evenly over them.",
    )
    devices: list[Annotated[int, Field(ge=0, le=15)]] | None = Field(
        None, description="Device indices used on every server of the instance (default: all)."
    )
    kv_port: int | None = Field(
        None,
        ge=1024,
        le=65535,
        description="Mooncake kv_port of this instance (default: the pool's kv_port + 100 x its index).",
    )
    port: int | None = Field(
        None,
        ge=1,
        le=65535,
        description="API port of this instance's first DP rank on each of its servers (default: the pool's "
        "port); two instances of a pool on one server need their own.",
    )
    dp_rpc_port: int | None = Field(
        None,
        ge=1,
        le=65535,
        description="--data-parallel-rpc-port of this instance (default: the pool's); two DP instances "
        "whose first server is the same need their own.",
    )


class PdPool(SpecModel):
    """One side of the disaggregated group: its instances and what differs from `serving`."""

    parallelism: Parallelism = Field(description="TP, DP (ranks per instance) and EP of every instance.")
    port: int = Field(
        7100, ge=1, le=65535, description="API port of each server's first DP rank; rank i uses port + i."
    )
    kv_port: int = Field(
        36000,
        ge=1024,
        le=65535,
        description="Mooncake kv_port of the pool's first instance; keep it out of AscendDirectTransport's "
        "random range [20000, 20000 + NPUs per server x 1000): >= 28000 on 8-NPU, >= 36000 on 16-NPU.",
    )
    dp_rpc_port: int = Field(12321, ge=1, le=65535, description="--data-parallel-rpc-port of each instance.")
    max_num_seqs: int | None = Field(None, ge=1, le=65536, description="--max-num-seqs (default: serving's).")
    max_num_batched_tokens: int | None = Field(
        None, ge=1, le=16777216, description="--max-num-batched-tokens (default: serving's)."
    )
    gpu_memory_utilization: float | None = Field(
        None,
        gt=0.0,
        le=0.98,
        allow_inf_nan=False,
        description="--gpu-memory-utilization (default: serving's).",
    )
    enforce_eager: bool | None = Field(None, description="--enforce-eager (default: serving's).")
    hccl_buffsize_mb: int | None = Field(
        None,
        ge=50,
        le=4096,
        description="HCCL_BUFFSIZE (tutorial: prefill 256, decode 600; default: serving's).",
    )
    additional_config: dict[str, Any] = Field(
        default_factory=dict,
        description="--additional-config of this pool, checked key by key against the pinned vllm-ascend "
        "release (removed keys are refused with the release that removed them).",
    )
    compilation_config: dict[str, Any] | None = Field(None, description="--compilation-config of this pool.")
    speculative_config: dict[str, Any] | None = Field(
        None,
        description='--speculative-config, e.g. {"method": "deepseek_mtp", "num_speculative_tokens": 1}.',
    )
    env: dict[str, str] = Field(default_factory=dict, description="Extra container environment of this pool.")
    extra_args: list[str] = Field(
        default_factory=list,
        description="Extra `vllm serve` arguments of this pool (read as serving.extra_args).",
    )
    instances: list[PdInstance] = Field(min_length=1)


class Disaggregation(SpecModel):
    """serving.disaggregation: prefill and decode pools serve the site instead of serving.replicas."""

    connector: str = Field(
        "MooncakeConnectorV1",
        description="kv_connector: MooncakeConnectorV1 (decode pulls KV) or MooncakeLayerwiseConnector "
        "(prefill pushes layer by layer) as vllm-ascend registers them; upstream vLLM's MooncakeConnector "
        "is refused.",
    )
    abort_request_timeout_s: int = Field(
        480,
        ge=1,
        le=86400,
        description="VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT: seconds a prefill instance keeps KV that no "
        "decode instance pulled.",
    )
    prefill: PdPool
    decode: PdPool
