"""The top-level --additional-config keys vllm-ascend reads, and the keys a release removed.

ACCEPTED is extracted from vllm-project/vllm-ascend @v0.23.0 (5cb98caaadeff42b5b62b996e34bb2aaa29d20fd):
every ``additional_config.get("KEY"``, ``additional_config["KEY"]``, ``"KEY" in additional_config`` and
``_get_config_value(additional_config, "KEY"`` in vllm_ascend/ascend_config.py, plus the same patterns in the
rest of vllm_ascend/ (utils.py: enable_flashcomm1, enable_dsa_cp; attention/kvcomp_attn/attention_utils.py:
enable_hamming_sparse; platform.py, rfork_loader.py, patch_balance_schedule.py: keys already listed).
vllm-ascend ignores any other key without a word, so a misspelt key silently does nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from orchestrator.catalog.version import Version

ACCEPTED_RELEASE = Version("v0.23.0")

ACCEPTED: frozenset[str] = frozenset(
    {
        "SLO_limits_for_dynamic_batch",
        "ascend_compilation_config",
        "ascend_fusion_config",
        "ascend_log_path",
        "c8_enable_reshape_optim",
        "dp_allreduce_on_npu",
        "dump_config",
        "dump_config_path",
        "enable_async_exponential",
        "enable_balance_scheduling",
        "enable_cpu_binding",
        "enable_dsa_cp",
        "enable_flashcomm1",
        "enable_flashcomm2_parallel_size",
        "enable_fused_mc2",
        "enable_hamming_sparse",
        "enable_kv_nz",
        "enable_matmul_allreduce",
        "enable_mc2_hierarchy_comm",
        "enable_mlapo",
        "enable_prefill_mc2",
        "enable_reduce_sample",
        "enable_shared_expert_dp",
        "enable_sleep_mode_extra_cleanup",
        "enable_sparse_li_c8",
        "enable_sparse_sfa_c8",
        "enable_transpose_kv_cache_by_block",
        "eplb_config",
        "finegrained_tp_config",
        "hamming_sparse",
        "layer_sharding",
        "mega_moe_max_tokens",
        "mix_placement",
        "msmonitor_use_daemon",
        "multistream_dsv4_dsa_overlap",
        "multistream_overlap_gate",
        "multistream_overlap_shared_expert",
        "pa_shape_list",
        "profiling_chunk_config",
        "recompute_scheduler_enable",
        "refresh",
        "rejection_sampler_config",
        "weight_nz_mode",
        "weight_prefetch_config",
        "xlite_graph_config",
    }
)


@dataclass(frozen=True)
class Removed:
    since: Version  # the first release without the key
    note: str  # what the release notes / source say
    fix: str


_EPLB = 'moved into eplb_config; "The old ones are removed in this release" (release notes v0.14.0rc1)'
_V091 = (
    "a v0.9.1 (v0.9.1-dev branch) key, read by vllm_ascend/ascend_config.py @v0.9.1 and by no main-line "
    "release"
)

REMOVED: Mapping[str, Removed] = MappingProxyType(
    {
        "torchair_graph_config": Removed(
            Version("v0.12.0rc1"),
            "Torchair graph mode was removed (#4814; release notes v0.12.0rc1: \"doesn't work anymore. "
            "Please use "
            'aclgraph instead")',
            'remove it; ACL graph mode is configured with compilation_config, e.g. {"cudagraph_mode": '
            '"FULL_DECODE_ONLY"} on decode',
        ),
        "ascend_scheduler_config": Removed(
            Version("v0.12.0rc1"),
            'the Ascend scheduler was removed (#4623; release notes v0.12.0rc1: "Ascend scheduler is '
            'removed")',
            "remove it; vLLM's own scheduler (chunked prefill on) is used",
        ),
        "chunked_prefill_for_mla": Removed(
            Version("v0.13.0rc1"),
            "it was dropped (#5296, release notes v0.13.0rc1)",
            "remove it",
        ),
        "enable_weight_nz_layout": Removed(
            Version("v0.10.0rc1"), _V091, "remove it (weight_nz_mode sets the NZ layout)"
        ),
        "enable_prefill_optimizations": Removed(Version("v0.10.0rc1"), _V091, "remove it"),
        "lmhead_tp_size": Removed(
            Version("v0.10.0rc1"), _V091, 'use finegrained_tp_config: {"lmhead_tensor_parallel_size": N}'
        ),
        "dynamic_eplb": Removed(Version("v0.14.0rc1"), _EPLB, "move it into eplb_config"),
        "expert_map_path": Removed(Version("v0.14.0rc1"), _EPLB, "move it into eplb_config"),
        "expert_map_record_path": Removed(Version("v0.14.0rc1"), _EPLB, "move it into eplb_config"),
        "eplb_policy_type": Removed(Version("v0.14.0rc1"), _EPLB, "move it into eplb_config"),
        "init_redundancy_expert": Removed(
            Version("v0.14.0rc1"), _EPLB, "set eplb_config.num_redundant_experts instead"
        ),
        "num_iterations_eplb_update": Removed(
            Version("v0.14.0rc1"), _EPLB, "set eplb_config.algorithm_execution_interval instead"
        ),
        "gate_eplb": Removed(Version("v0.14.0rc1"), _EPLB, "remove it"),
        "num_wait_worker_iterations": Removed(Version("v0.14.0rc1"), _EPLB, "remove it"),
    }
)
"""Top-level keys a release removed: the release, why, what to write instead."""

EPLB_KEYS: frozenset[str] = frozenset(
    {
        "dynamic_eplb",
        "expert_map_path",
        "expert_heat_collection_interval",
        "algorithm_execution_interval",
        "expert_map_record_path",
        "num_redundant_experts",
        "eplb_policy_type",
        "eplb_heat_collection_stage",
    }
)
"""eplb_config keys (EplbConfig._defaults, vllm_ascend/ascend_config.py @v0.23.0); any other raises
ValueError "Config has no attribute '<key>'" at start-up."""
