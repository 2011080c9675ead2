"""What each PD pool adds to `vllm serve`: its extra_args (read as serving.extra_args, and the flags the PD
plan renders refused with the pool field to set), its env (the variables the plan derives refused), its
batch limits, and MTP speculative decoding per role.

Sources: vllm-project/vllm-ascend docs/source/tutorials/features/pd_disaggregation_mooncake_multi_node.md
@v0.23.0 (the note on num_speculative_tokens: "on P nodes should be 1, and ... on D nodes should be greater or
equal to 1" for models other than hybrid Mamba ones; the per-rank `vllm serve` argv of the 2P1D example).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from orchestrator.planning.speculative import MTP_METHODS
from orchestrator.spec.findings import Finding, error
from orchestrator.spec.site import SiteSpec
from orchestrator.validation.extra_args import check_args
from orchestrator.validation.pd_common import Pool, pools
from orchestrator.validation.serving_rules import check_env

_TUTORIAL = "pd_disaggregation_mooncake_multi_node.md @v0.23.0"


def pool_fields(p: Pool) -> dict[str, str]:
    """`vllm serve` destinations the PD plan renders for a pool's ranks -> the spec field to set instead."""
    layout = f"{p.name('instances')}[].servers (the plan gives each server its DP ranks)"
    return {
        "tensor_parallel_size": p.name("parallelism", "tp"),
        "pipeline_parallel_size": p.name("parallelism", "pp"),
        "data_parallel_size": p.name("parallelism", "dp"),
        "enable_expert_parallel": p.name("parallelism", "ep"),
        "port": f"{p.name('port')} (rank i listens on port + i)",
        "data_parallel_rpc_port": p.name("dp_rpc_port"),
        "data_parallel_address": f"{p.name('instances')}[].servers (the first server is the DP master)",
        "data_parallel_size_local": layout,
        "data_parallel_start_rank": layout,
        "data_parallel_rank": layout,
        "headless": layout,
        "device_ids": f"{p.name('instances')}[].devices",
        "max_num_seqs": p.name("max_num_seqs"),
        "max_num_batched_tokens": p.name("max_num_batched_tokens"),
        "gpu_memory_utilization": p.name("gpu_memory_utilization"),
        "enforce_eager": p.name("enforce_eager"),
        "kv_transfer_config": "serving.disaggregation.connector and the pools' kv_port (the plan writes "
        "--kv-transfer-config with kv_role, engine_id and the connector's extra config)",
        "additional_config": p.name("additional_config"),
        "speculative_config": p.name("speculative_config"),
        "compilation_config": p.name("compilation_config"),
    }


def derived_env(p: Pool) -> Mapping[str, str]:
    """Variables the PD plan sets in a pool's containers (besides planning.serve_args.DERIVED_ENV)."""
    return {
        "HCCL_BUFFSIZE": f"{p.name('hccl_buffsize_mb')} (or serving.hccl.buffsize_mb)",
        "VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT": "serving.disaggregation.abort_request_timeout_s",
        "ASCEND_RT_VISIBLE_DEVICES": f"{p.name('instances')}[].devices",
    }


def check(spec: SiteSpec) -> Iterator[Finding]:
    for p in pools(spec):
        yield from check_args(spec, p.pool.extra_args, p.field("extra_args"), pool_fields(p))
        yield from check_env(p.pool.env, p.field("env"), derived_env(p))
        yield from _batch(spec, p)
        yield from _mtp(p)


def _batch(spec: SiteSpec, p: Pool) -> Iterator[Finding]:
    """max_num_batched_tokens >= max_num_seqs when the pool sets either (serving_rules checks serving's)."""
    own_seqs, own_tokens = p.pool.max_num_seqs, p.pool.max_num_batched_tokens
    if own_seqs is None and own_tokens is None:
        return
    seqs = own_seqs or spec.serving.max_num_seqs
    tokens = own_tokens or spec.serving.max_num_batched_tokens
    if tokens is not None and tokens < seqs:
        yield error(
            p.field("max_num_batched_tokens" if own_tokens is not None else "max_num_seqs"),
            f"{p.role}: max_num_batched_tokens {tokens} is below max_num_seqs {seqs}; vLLM refuses to start",
            f"raise {p.name('max_num_batched_tokens')} to at least {seqs}",
            "vllm-args",
        )


def _mtp(p: Pool) -> Iterator[Finding]:
    config = p.pool.speculative_config
    if not config or str(config.get("method", "")).lower() not in MTP_METHODS:
        return
    n = config.get("num_speculative_tokens")
    path = p.field("speculative_config", "num_speculative_tokens")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        yield error(
            path if n is not None else p.field("speculative_config"),
            f"{p.role} MTP (method {config.get('method')}) needs num_speculative_tokens, an integer >= 1; "
            f"got {n!r}",
            f"set num_speculative_tokens: {1 if p.role == 'prefill' else 'a whole number >= 1'}",
            "pd-mtp",
        )
    elif p.role == "prefill" and n != 1:
        yield error(
            path,
            f"prefill MTP with num_speculative_tokens {n}: on prefill instances it must be 1 (decode "
            f"instances may use more), {_TUTORIAL}",
            "set num_speculative_tokens: 1 in the prefill pool (keep the larger value in the decode pool)",
            "pd-mtp",
        )
