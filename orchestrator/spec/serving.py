"""Serving: replicas, parallelism, vLLM engine limits, HCCL settings."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from orchestrator.spec.common import Name, SecretRef, SpecModel
from orchestrator.spec.disaggregation import Disaggregation
from orchestrator.spec.parallelism import Parallelism


class Hccl(SpecModel):
    """HCCL environment for multi-device replicas (see vllm-ascend multi-node docs)."""

    buffsize_mb: int = Field(200, ge=50, le=4096, description="HCCL_BUFFSIZE in MB (DeepSeek: 200-1024).")
    # Bounds from the CANN environment variable reference: HCCL_CONNECT_TIMEOUT "取值范围[120,7200]" s
    # (hiascend.com/document/detail/zh/canncommercial/850/maintenref/envvar/envref_07_0149.html),
    # HCCL_EXEC_TIMEOUT [0, 2147483647] s on Atlas A2/A3 (envref_07_0078).
    connect_timeout_s: int = Field(
        120, ge=120, le=7200, description="HCCL_CONNECT_TIMEOUT in s; CANN accepts 120-7200."
    )
    exec_timeout_s: int = Field(1836, ge=60, le=2147483647, description="HCCL_EXEC_TIMEOUT.")
    op_expansion_mode: Literal["AIV", "AI_CPU", "HOST"] | None = Field(
        None,
        description="HCCL_OP_EXPANSION_MODE; null: the chip's default (Atlas A2: AIV on one server, left "
        "unset -- CANN's HOST -- for a replica over several servers, where CANN runs AIV AlltoAllV on one "
        "server only; A3: AIV, which also accepts AI_CPU; 300I Duo: HOST, which accepts only AI_CPU and "
        "HOST).",
    )
    intra_pcie_enable: bool | None = Field(None, description="HCCL_INTRA_PCIE_ENABLE (2-node A2 recipes: 1).")
    intra_roce_enable: bool | None = Field(None, description="HCCL_INTRA_ROCE_ENABLE (2-node A2 recipes: 0).")
    socket_ifname: str | None = Field(
        None, description="HCCL/GLOO/TP_SOCKET_IFNAME: host NIC carrying the control traffic."
    )
    deterministic: bool = Field(False, description="HCCL_DETERMINISTIC=true and LCCL_DETERMINISTIC=1.")


class Replica(SpecModel):
    name: Name
    servers: list[str] = Field(
        min_length=1, description="Servers of this replica; the first one is the head."
    )
    group: Name = Field("default", description="Rollout group; replicas of one group share a profile.")
    parallelism: Parallelism | None = Field(
        None, description="Overrides serving.parallelism for this replica."
    )
    devices: list[Annotated[int, Field(ge=0, le=15)]] | None = Field(
        None, description="Device indices used on every member (default: all). Lets replicas share a server."
    )
    port: int | None = Field(None, ge=1, le=65535, description="API port (default serving.port).")
    multi_node_tp: bool = Field(False, description="Allow tensor parallelism to span servers (needs Ray).")


class Serving(SpecModel):
    port: int = Field(8000, ge=1, le=65535, description="OpenAI API port on the head server.")
    dp_rpc_port: int = Field(13389, ge=1, le=65535, description="--data-parallel-rpc-port for multi-node DP.")
    api_key: SecretRef | None = Field(
        None, description="API key reference; passed as VLLM_API_KEY at run time."
    )
    parallelism: Parallelism = Field(default_factory=Parallelism)
    max_num_seqs: int = Field(256, ge=1, le=65536, description="--max-num-seqs (per DP rank).")
    max_num_batched_tokens: int | None = Field(
        None, ge=1, le=16777216, description="--max-num-batched-tokens."
    )
    max_model_len: int = Field(8192, ge=16, le=16777216, description="--max-model-len.")
    gpu_memory_utilization: float = Field(
        0.9, gt=0.0, le=0.98, allow_inf_nan=False, description="--gpu-memory-utilization."
    )
    kv_cache_dtype: Literal["auto", "int8"] = Field(
        "auto",
        description="KV cache dtype ('auto' = model dtype). int8 is vllm-ascend's C8 KV cache: it comes "
        "from a msmodelslim checkpoint whose quant_model_description.json has kv_cache_type C8 (served with "
        "--quantization ascend), not from a flag; it needs a quantized model.",
    )
    enforce_eager: bool = False
    hccl: Hccl = Field(default_factory=Hccl)
    extra_args: list[str] = Field(
        default_factory=list,
        description="Extra `vllm serve` arguments; read as the pinned vLLM release's parser reads them "
        "(generated flag table): unknown or removed options, bad values and options the plan sets are "
        "errors.",
    )
    allow_unknown_args: bool = Field(
        False, description="Accept extra_args options the pinned vLLM release does not have (a custom build)."
    )
    env: dict[str, str] = Field(default_factory=dict, description="Extra container environment.")
    replicas: list[Replica] = Field(
        default_factory=list,
        description="Replicas serving whole requests (at least one unless serving.disaggregation is set).",
    )
    disaggregation: Disaggregation | None = Field(
        None,
        description="Prefill/decode disaggregation (Mooncake connector, PD gateway) instead of replicas.",
    )
