"""Capacity planning: memory per NPU device for weights, runtime overhead and KV cache.

All sizes are GiB. HBM "64 GB" is what npu-smi reports as 65536 MB, i.e. 64 GiB.
Weights per device:
  non-expert parameters are split by TP x PP (replicated across DP ranks);
  routed-expert parameters are split by the EP group (TP x DP) when expert parallelism is on (whole experts:
  the busiest device holds ceil(experts / EP) of them), else by TP x PP.
KV cache per token per device:
  MLA (DeepSeek): the compressed latent (kv_lora_rank + rope dim) per layer, not split by TP;
  GQA: 2 x kv_heads x head_dim per layer, split by TP (at least one KV head per device).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from orchestrator.catalog import ModelArch
from orchestrator.planning.model import Capacity

GIB = 1024**3
RUNTIME_OVERHEAD_GIB = (
    1.5  # activations, workspace, graph capture: what vLLM's profiling run typically reserves
)
BYTES_PER_PARAM = {"none": 2.0, "w8a8": 1.0, "w4a8": 1.0}
EXPERT_BYTES_PER_PARAM = {"none": 2.0, "w8a8": 1.0, "w4a8": 0.5}


@dataclass(frozen=True)
class Layout:
    tp: int
    pp: int
    dp: int
    ep: bool


def weight_bytes_total(arch: ModelArch, quantization: str) -> float:
    dense = (arch.params_b - arch.expert_params_b) * 1e9 * BYTES_PER_PARAM[quantization]
    experts = arch.expert_params_b * 1e9 * EXPERT_BYTES_PER_PARAM[quantization]
    return dense + experts


def weight_gib_per_device(arch: ModelArch, quantization: str, layout: Layout) -> float:
    dense = (arch.params_b - arch.expert_params_b) * 1e9 * BYTES_PER_PARAM[quantization]
    experts = arch.expert_params_b * 1e9 * EXPERT_BYTES_PER_PARAM[quantization]
    dense_share = dense / (layout.tp * layout.pp)
    if layout.ep and arch.moe:
        split = layout.tp * layout.dp
        if arch.n_routed_experts:
            # whole experts per device: the busiest device holds ceil(n / split) of them
            per_layer = math.ceil(arch.n_routed_experts / split) / arch.n_routed_experts
            return (dense_share + experts / layout.pp * per_layer) / GIB
        return (dense_share + experts / (split * layout.pp)) / GIB
    return (dense_share + experts / (layout.tp * layout.pp)) / GIB


def kv_bytes_per_token_per_device(arch: ModelArch, kv_dtype_bytes: int, layout: Layout) -> float:
    layers = math.ceil(arch.layers / layout.pp)
    if arch.attention == "mla":
        return float(layers * (arch.kv_lora_rank + arch.qk_rope_head_dim) * kv_dtype_bytes)
    kv_heads = max(1, arch.kv_heads // layout.tp)
    return float(2 * layers * kv_heads * arch.head_dim * kv_dtype_bytes)


def overhead_gib(world_size: int, hccl_buffsize_mb: int) -> float:
    hccl = 2 * hccl_buffsize_mb / 1024 if world_size > 1 else 0.0
    return RUNTIME_OVERHEAD_GIB + hccl


def plan_capacity(
    arch: ModelArch,
    quantization: str,
    kv_dtype_bytes: int,
    layout: Layout,
    hbm_gib: int,
    gpu_memory_utilization: float,
    max_model_len: int,
    max_num_seqs: int,
    hccl_buffsize_mb: int,
) -> Capacity:
    weights = weight_gib_per_device(arch, quantization, layout)
    overhead = overhead_gib(layout.tp * layout.pp * layout.dp, hccl_buffsize_mb)
    kv_seq = kv_bytes_per_token_per_device(arch, kv_dtype_bytes, layout) * max_model_len / GIB
    budget = hbm_gib * gpu_memory_utilization
    free = budget - weights - overhead
    fit = max(0, math.floor(free / kv_seq)) if kv_seq > 0 else max_num_seqs
    return Capacity(
        hbm_gib=float(hbm_gib),
        budget_gib=budget,
        weights_gib=weights,
        overhead_gib=overhead,
        kv_gib_per_seq=kv_seq,
        max_num_seqs=max_num_seqs,
        full_seqs_fit=fit,
    )


def servers_needed(
    arch: ModelArch,
    quantization: str,
    kv_dtype_bytes: int,
    devices_per_server: int,
    hbm_gib: int,
    gpu_memory_utilization: float,
    max_model_len: int,
    hccl_buffsize_mb: int,
    limit: int = 64,
) -> int | None:
    """Fewest servers of this profile on which the model fits with one max-length sequence.

    Best case layout: MoE models use expert parallelism over every device and TP inside a server;
    dense models shard over every device (TP x PP).
    """
    for n in range(1, limit + 1):
        devices = n * devices_per_server
        if arch.moe:
            tp = devices_per_server
            layout = Layout(tp=tp, pp=1, dp=devices // tp, ep=True)
        else:
            tp = devices_per_server
            layout = Layout(tp=tp, pp=n, dp=1, ep=False)
        cap = plan_capacity(
            arch,
            quantization,
            kv_dtype_bytes,
            layout,
            hbm_gib,
            gpu_memory_utilization,
            max_model_len,
            1,
            hccl_buffsize_mb,
        )
        if cap.fits:
            return n
    return None


def max_len_that_fits(capacity: Capacity, max_model_len: int) -> int:
    """Largest max_model_len (multiple of 1024) whose single sequence fits next to the weights."""
    if capacity.kv_gib_per_seq <= 0 or capacity.kv_budget_gib <= 0:
        return 0
    per_token = capacity.kv_gib_per_seq / max_model_len
    tokens = int(capacity.kv_budget_gib / per_token)
    return (tokens // 1024) * 1024
