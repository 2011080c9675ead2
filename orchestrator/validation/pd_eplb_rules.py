"""Expert-parallel load balancing per PD pool: eplb_config's keys, routed + redundant experts divisible by the
instance's EP size, and the environment switch dynamic EPLB needs.

Sources: vllm-project/vllm-ascend docs/source/user_guide/feature_guide/expert_parallelism_load_balancer.md
@v0.23.0 ("(num_experts + num_redundant_experts) must be divisible by the expert-parallel size"; dynamic EPLB
and recording need DYNAMIC_EPLB=true or EXPERT_MAP_RECORD=true), vllm_ascend/ascend_config.py @v0.23.0
EplbConfig (unknown keys raise ValueError "Config has no attribute"; the DYNAMIC_EPLB assertion). The EP size
of an instance is tp x dp (spec.parallelism: EP size = tp x dp).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from orchestrator.catalog import nearest_table
from orchestrator.catalog.version import Version
from orchestrator.catalog.vllm_argv import read_args
from orchestrator.planning.resolve import resolve_model
from orchestrator.spec.findings import Finding, SpecPath, error
from orchestrator.spec.site import SiteSpec
from orchestrator.validation.ascend_keys import EPLB_KEYS
from orchestrator.validation.extra_args import pinned_vllm
from orchestrator.validation.pd_common import Pool, pools
from orchestrator.validation.software import release_of

CODE = "pd-eplb"
EPLB_CONFIG_SINCE = Version("v0.14.0rc1")
_DOC = "expert_parallelism_load_balancer.md @v0.23.0"


@dataclass(frozen=True)
class Redundant:
    count: int
    path: SpecPath
    written: str  # how the spec gives it, for the message


def check(spec: SiteSpec) -> Iterator[Finding]:
    release = release_of(spec)
    schema = release is not None and Version(release.version) >= EPLB_CONFIG_SINCE
    try:
        experts = resolve_model(spec.model).n_routed_experts
    except KeyError:
        experts = 0  # model_rules reports an unknown model
    for p in pools(spec):
        eplb = p.pool.additional_config.get("eplb_config")
        if eplb is not None and not isinstance(eplb, dict):
            yield error(
                p.field("additional_config", "eplb_config"),
                f"eplb_config must be a mapping, got {type(eplb).__name__}",
                "write e.g. eplb_config: {dynamic_eplb: true, num_redundant_experts: 16}",
                CODE,
            )
            continue
        eplb = eplb or {}
        if schema:
            yield from _keys(p, eplb)
        yield from _divisible(spec, p, experts, eplb)
        if schema:
            yield from _dynamic_env(spec, p, eplb)


def _keys(p: Pool, eplb: dict[str, Any]) -> Iterator[Finding]:
    for key in eplb:
        if key not in EPLB_KEYS:
            yield error(
                p.field("additional_config", "eplb_config", key),
                f'eplb_config has no key {key!r}: vllm-ascend stops at start-up with ValueError "Config '
                "has no "
                f"attribute '{key}'\" (EplbConfig, vllm_ascend/ascend_config.py @v0.23.0)",
                f"use only: {', '.join(sorted(EPLB_KEYS))}",
                CODE,
            )


def redundant_experts(spec: SiteSpec, p: Pool, eplb: dict[str, Any]) -> Redundant | None:
    """num_redundant_experts from additional_config.eplb_config, else from --eplb-config in extra_args."""
    value = eplb.get("num_redundant_experts")
    if isinstance(value, int) and not isinstance(value, bool):
        path = p.field("additional_config", "eplb_config", "num_redundant_experts")
        return Redundant(value, path, "eplb_config.num_redundant_experts")
    table = nearest_table(pinned_vllm(spec))
    for use in read_args(p.pool.extra_args, table):
        if use.option is None or use.option.dest != "eplb_config" or not use.values:
            continue
        found: object = None
        if use.key == "num_redundant_experts":
            found = use.values[0]
        elif use.key is None:
            try:
                parsed = json.loads(use.values[0])
            except ValueError:
                continue
            found = parsed.get("num_redundant_experts") if isinstance(parsed, dict) else None
        if found is not None and str(found).isdigit():
            return Redundant(int(str(found)), p.field("extra_args", use.index), use.given)
    return None


def _divisible(spec: SiteSpec, p: Pool, experts: int, eplb: dict[str, Any]) -> Iterator[Finding]:
    par = p.pool.parallelism
    if not experts or not par.ep:
        return
    found = redundant_experts(spec, p, eplb)
    if found is None:
        return
    ep = par.tp * par.dp
    total = experts + found.count
    if total % ep == 0:
        return
    fit = found.count + (-total) % ep  # the next count that makes the sum a multiple of ep
    yield error(
        found.path,
        f"{p.role}: {experts} routed experts + {found.count} redundant ({found.written}) = {total} is not "
        f"divisible by the instance's expert-parallel size {ep} (tp {par.tp} x dp {par.dp}); {_DOC}: "
        '"(num_experts + num_redundant_experts) must be divisible by the expert-parallel size"',
        f"set num_redundant_experts to {fit} (or another value that makes {experts} + it a multiple of {ep})",
        CODE,
    )


def _truthy(value: str | None, words: tuple[str, ...]) -> bool:
    return value is not None and value.strip().lower() in words


def _dynamic_env(spec: SiteSpec, p: Pool, eplb: dict[str, Any]) -> Iterator[Finding]:
    dynamic = eplb.get("dynamic_eplb") is True
    recording = eplb.get("expert_map_record_path") is not None
    if not (dynamic or recording):
        return
    env = {**spec.serving.env, **p.pool.env}
    if _truthy(env.get("DYNAMIC_EPLB"), ("true", "1")) or env.get("EXPERT_MAP_RECORD") == "true":
        return
    what = "dynamic_eplb: true" if dynamic else "expert_map_record_path"
    yield error(
        p.field("additional_config", "eplb_config", "dynamic_eplb" if dynamic else "expert_map_record_path"),
        f"{p.role}: eplb_config {what} needs the environment variable DYNAMIC_EPLB=true (or "
        'EXPERT_MAP_RECORD=true); without it vllm-ascend stops at start-up with "The environment variable '
        f'DYNAMIC_EPLB or EXPERT_MAP_RECORD of the EPLB must be set to true." ({_DOC}; EplbConfig)',
        f'add DYNAMIC_EPLB: "true" to {p.name("env")}',
        CODE,
    )
