"""vllm-ascend's own settings: ``--additional-config`` (a JSON object whose keys vllm-ascend reads one by one;
serving.extra_args are read by extra_args.py, which asks this module about its value) and the environment
variables a release moved into it."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from types import MappingProxyType

from orchestrator.catalog.version import Version
from orchestrator.spec.findings import Finding, warning
from orchestrator.spec.site import SiteSpec
from orchestrator.validation.software import release_of

MIGRATED_SINCE = Version("v0.23.0")
"""First catalog release whose additional_config.md has the migration guide below."""

MIGRATED_ENV: Mapping[str, tuple[str, bool]] = MappingProxyType(
    {
        "VLLM_ASCEND_BALANCE_SCHEDULING": ("enable_balance_scheduling", True),
        "VLLM_ASCEND_ENABLE_FLASHCOMM1": ("enable_flashcomm1", True),
        "VLLM_ASCEND_ENABLE_MATMUL_ALLREDUCE": ("enable_matmul_allreduce", True),
        "VLLM_ASCEND_FLASHCOMM2_PARALLEL_SIZE": ("enable_flashcomm2_parallel_size", False),
        "MSMONITOR_USE_DAEMON": ("msmonitor_use_daemon", True),
        "VLLM_ASCEND_ENABLE_MLAPO": ("enable_mlapo", True),
        "VLLM_ASCEND_ENABLE_NZ": ("weight_nz_mode", False),
        "VLLM_ASCEND_ENABLE_FUSED_MC2": ("enable_fused_mc2", False),
        "VLLM_ASCEND_FUSION_OP_TRANSPOSE_KV_CACHE_BY_BLOCK": ("enable_transpose_kv_cache_by_block", True),
    }
)
"""Environment variable -> (--additional-config key, whether "1"/"0" become true/false; else the integer is
kept): the "Migration Guide" of vllm-project/vllm-ascend docs/source/user_guide/configuration/
additional_config.md @v0.23.0 ("Environment variables will be removed in a future release"); envs.py there:
"DEPRECATED: VLLM_ASCEND_BALANCE_SCHEDULING env var will be removed in a future release. Use
--additional-config '{"enable_balance_scheduling": true}' instead"."""

_FLAG = "--additional-config"


def check(spec: SiteSpec) -> Iterator[Finding]:
    yield from _migrated_env(spec)


def _replacement(key: str, as_bool: bool, value: str) -> str:
    text = value.strip()
    new: object = text
    if as_bool and text in ("0", "1"):
        new = text == "1"
    elif text.lstrip("-").isdigit():
        new = int(text)
    return json.dumps({key: new})


def _migrated_env(spec: SiteSpec) -> Iterator[Finding]:
    release = release_of(spec)
    if release is None or Version(release.version) < MIGRATED_SINCE:
        return
    for name, value in spec.serving.env.items():
        if name not in MIGRATED_ENV:
            continue
        key, as_bool = MIGRATED_ENV[name]
        yield warning(
            ("serving", "env", name),
            f"{name} is deprecated in vllm-ascend {release.version} and will be removed: the setting is the "
            f"--additional-config key {key} now",
            f"remove serving.env.{name} and add to serving.extra_args: {_FLAG} "
            f"'{_replacement(key, as_bool, value)}' (merge it into an {_FLAG} you already pass)",
            "env",
        )


def additional_config_problem(value: str) -> tuple[str, str] | None:
    """(message, fix) when an --additional-config value is not a JSON object, else None.

    vLLM's parser passes text that does not look like a JSON object through as a string; vLLM then refuses it
    (VllmConfig.additional_config is a dict) and vllm-ascend reads the value key by key
    (vllm_ascend/ascend_config.py @v0.23.0)."""
    example = json.dumps({"enable_balance_scheduling": True})
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        return (
            f"{_FLAG} {value!r} is not JSON ({exc}); vLLM and vllm-ascend read it as a JSON object",
            f"write a JSON object with double-quoted keys and true/false, e.g. '{example}'",
        )
    if not isinstance(parsed, dict):
        return (
            f"{_FLAG} {value!r} is JSON but not an object; vllm-ascend reads its keys",
            f"write a JSON object, e.g. '{example}'",
        )
    return None
