"""Capacity planning: memory per NPU device for weights, runtime overhead and KV cache.

All sizes are GiB. The budget is the memory one process can allocate on the device (chip catalog
usable_memory_gib: torch_npu reports 60.96 GiB on a 64 GB 910B die, a 300I Duo chip shows 21525 MB) times
gpu_memory_utilization, as vLLM computes it; not the nominal HBM size.
Weights per device:
  non-expert parameters are split by TP x PP (replicated across DP ranks);
  routed-expert parameters are split by the EP group (TP x DP) when expert parallelism is on (whole experts:
  the busiest device holds ceil(experts / EP) of them), else by TP x PP;
  embedding and output head stay BF16 in msmodelslim W8A8/W4A8 checkpoints;
  with MTP speculative decoding the draft layer(s) are loaded too (on the last pipeline stage).
KV cache per token per device:
  MLA (DeepSeek): the compressed latent (kv_lora_rank + rope dim) per layer, not split by TP;
  GQA: 2 x kv_heads x head_dim per layer, split by TP (at least one KV head per device);
  the MTP draft layer caches its own KV when speculative decoding is on.
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
# bytes per parameter: routed experts, other linear layers, embedding + output head
_BYTES = {"none": (2.0, 2.0, 2.0), "w8a8": (1.0, 1.0, 2.0), "w4a8": (0.5, 1.0, 2.0)}


@dataclass(frozen=True)
class Layout:
    tp: int
    pp: int
    dp: int
    ep: bool
    mtp: bool = False  # MTP speculative decoding: the draft layers are loaded and cache KV


@dataclass(frozen=True)
class _Part:
    """Bytes of one part of the checkpoint (main model or MTP layers)."""

    experts: float
    other: float  # everything else, embeddings included


def _split(params_b: float, experts_b: float, embedding_b: float, quantization: str) -> _Part:
    expert, linear, embed = _BYTES[quantization]
    rest = max(params_b - experts_b - embedding_b, 0.0)
    return _Part(experts_b * 1e9 * expert, (rest * linear + embedding_b * embed) * 1e9)


def _main(arch: ModelArch, quantization: str) -> _Part:
    return _split(arch.params_b, arch.expert_params_b, arch.embedding_params_b, quantization)


def _mtp(arch: ModelArch, quantization: str) -> _Part:
    if not arch.mtp_layers:
        return _Part(0.0, 0.0)
    # the MTP layer stores its own embed_tokens and shared_head (DeepSeek-V3 README_WEIGHTS.md)
    return _split(arch.mtp_params_b, arch.mtp_expert_params_b, arch.embedding_params_b, quantization)


def weight_bytes_total(arch: ModelArch, quantization: str) -> float:
    """Bytes of the checkpoint on disk: main model plus its MTP layers (DeepSeek-R1 W8A8: 684.5B params)."""
    main, mtp = _main(arch, quantization), _mtp(arch, quantization)
    return main.experts + main.other + mtp.experts + mtp.other


def _expert_share(arch: ModelArch, expert_bytes: float, layout: Layout, stages: int) -> float:
    if layout.ep and arch.moe:
        split = layout.tp * layout.dp
        if arch.n_routed_experts:
            # whole experts per device: the busiest device holds ceil(n / split) of them
            return expert_bytes / stages * math.ceil(arch.n_routed_experts / split) / arch.n_routed_experts
        return expert_bytes / (split * stages)
    return expert_bytes / (layout.tp * stages)


def weight_gib_per_device(arch: ModelArch, quantization: str, layout: Layout) -> float:
    main = _main(arch, quantization)
    total = main.other / (layout.tp * layout.pp) + _expert_share(arch, main.experts, layout, layout.pp)
    if layout.mtp:
        mtp = _mtp(arch, quantization)  # on one pipeline stage: not divided by pp
        total += mtp.other / layout.tp + _expert_share(arch, mtp.experts, layout, 1)
    return total / GIB


def kv_bytes_per_token_per_device(arch: ModelArch, kv_dtype_bytes: int, layout: Layout) -> float:
    layers = math.ceil(arch.layers / layout.pp) + (arch.mtp_layers if layout.mtp else 0)
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
    usable_gib: float,
    gpu_memory_utilization: float,
    max_model_len: int,
    max_num_seqs: int,
    hccl_buffsize_mb: int,
) -> Capacity:
    """Memory of the worst device of a replica; ``usable_gib`` is what one process can allocate."""
    weights = weight_gib_per_device(arch, quantization, layout)
    overhead = overhead_gib(layout.tp * layout.pp * layout.dp, hccl_buffsize_mb)
    kv_seq = kv_bytes_per_token_per_device(arch, kv_dtype_bytes, layout) * max_model_len / GIB
    budget = usable_gib * gpu_memory_utilization
    free = budget - weights - overhead
    fit = max(0, math.floor(free / kv_seq)) if kv_seq > 0 else max_num_seqs
    return Capacity(
        usable_gib=usable_gib,
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
    usable_gib: float,
    gpu_memory_utilization: float,
    max_model_len: int,
    hccl_buffsize_mb: int,
    *,
    mtp: bool,
    limit: int = 64,
) -> int | None:
    """Fewest servers of this profile on which the model fits with one max-length sequence.

    Best case layout: MoE models use expert parallelism over every device and TP inside a server;
    dense models shard over every device (TP x PP).
    """
    for n in range(1, limit + 1):
        if arch.moe:
            layout = Layout(tp=devices_per_server, pp=1, dp=n, ep=True, mtp=mtp)
        else:
            layout = Layout(tp=devices_per_server, pp=n, dp=1, ep=False, mtp=mtp)
        cap = plan_capacity(
            arch,
            quantization,
            kv_dtype_bytes,
            layout,
            usable_gib,
            gpu_memory_utilization,
            max_model_len,
            1,
            hccl_buffsize_mb,
        )
        if cap.fits:
            return n
    return None


def max_len_that_fits(capacity: Capacity, max_model_len: int) -> int:
    """Largest max_model_len (multiple of 1024) whose single sequence fits next to the weights; for a replica
    whose weights fit (kv_budget_gib >= 0), so a sequence needs some KV cache (kv_gib_per_seq > 0)."""
    per_token = capacity.kv_gib_per_seq / max_model_len
    tokens = int(capacity.kv_budget_gib / per_token)
    return (tokens // 1024) * 1024
