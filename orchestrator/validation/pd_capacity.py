"""Does each PD pool's instance fit its NPUs' memory with that pool's settings: weights and runtime within the
budget, one max_model_len sequence of KV cache left, max_num_seqs of them at full load (a warning). The same
arithmetic as the replicas' (planning/capacity.py; validation/plan_checks/capacity.py), per role: prefill and
decode usually differ in parallelism, gpu_memory_utilization, max_num_seqs and HCCL buffer."""

from __future__ import annotations

from collections.abc import Iterator

from orchestrator.catalog import ModelArch
from orchestrator.planning import capacity as cap
from orchestrator.planning.model import Capacity
from orchestrator.planning.resolve import ResolvedProfile, effective_quantization, resolve_model
from orchestrator.planning.speculative import MTP_METHODS, mtp_draft
from orchestrator.spec.findings import Finding, error, warning
from orchestrator.spec.site import SiteSpec
from orchestrator.validation.pd_common import Pool, devices_per_rank, pools, ranks_per_server, server_profiles
from orchestrator.validation.prelaunch_rules import dispatch_shape, needed_hccl_buffsize_mb

CODE = "capacity"


def _mtp(spec: SiteSpec, p: Pool, arch: ModelArch) -> bool:
    config = p.pool.speculative_config
    on = bool(config) and str((config or {}).get("method", "")).lower() in MTP_METHODS
    return (on or mtp_draft(spec.serving.extra_args)) and arch.mtp_layers > 0


def pool_capacity(spec: SiteSpec, p: Pool, arch: ModelArch, prof: ResolvedProfile) -> Capacity:
    s = spec.serving
    par = p.pool.parallelism
    return cap.plan_capacity(
        arch,
        effective_quantization(spec.model, arch),
        1 if s.kv_cache_dtype == "int8" else 2,
        cap.Layout(par.tp, par.pp, par.dp, par.ep, mtp=_mtp(spec, p, arch)),
        prof.usable_gib,
        p.pool.gpu_memory_utilization or s.gpu_memory_utilization,
        s.max_model_len,
        p.pool.max_num_seqs or s.max_num_seqs,
        p.pool.hccl_buffsize_mb or s.hccl.buffsize_mb,
    )


def check(spec: SiteSpec) -> Iterator[Finding]:
    try:
        arch = resolve_model(spec.model)
    except KeyError:
        return  # model_rules reports it
    profiles = server_profiles(spec)
    for p in pools(spec):
        for inst in p.pool.instances:
            local = ranks_per_server(p.pool, inst)
            prof = profiles.get(inst.servers[0])
            if local is None or prof is None or local * devices_per_rank(p.pool) > prof.devices:
                continue  # pd_layout_rules reports the layout
            found = list(_findings(spec, p, arch, prof, pool_capacity(spec, p, arch, prof)))
            if found:
                yield from found
                break  # the pool's instances share their settings: one report per pool
        yield from _hccl_buffsize(spec, p, arch)


def _hccl_buffsize(spec: SiteSpec, p: Pool, arch: ModelArch) -> Iterator[Finding]:
    """HCCL_BUFFSIZE of the pool against MoE dispatch/combine under EP (prelaunch_rules.py's estimate)."""
    par = p.pool.parallelism
    if not arch.moe or not par.ep or par.tp * par.dp < 2:
        return
    seqs = p.pool.max_num_seqs or spec.serving.max_num_seqs
    quantized = effective_quantization(spec.model, arch) != "none"
    need = needed_hccl_buffsize_mb(dispatch_shape(arch, par, seqs, quantized))
    have = p.pool.hccl_buffsize_mb or spec.serving.hccl.buffsize_mb
    if have >= need:
        return
    yield warning(
        p.field("hccl_buffsize_mb") if p.pool.hccl_buffsize_mb else ("serving", "hccl", "buffsize_mb"),
        f"{p.role}: MoE dispatch/combine with expert parallelism over {par.tp * par.dp} ranks and "
        f"max_num_seqs {seqs} needs HCCL_BUFFSIZE of at least about {need} MB; the pool gets {have} "
        '(vllm-ascend PR #5287: "HCCL_BUFFSIZE is too SMALL")',
        f"set {p.name('hccl_buffsize_mb')} to {-(-need // 64) * 64} or more, or lower max_num_seqs",
        "hccl",
    )


def _findings(
    spec: SiteSpec, p: Pool, arch: ModelArch, prof: ResolvedProfile, c: Capacity
) -> Iterator[Finding]:
    s = spec.serving
    par = p.pool.parallelism
    util = p.pool.gpu_memory_utilization or s.gpu_memory_utilization
    if c.budget_gib < c.weights_gib + c.overhead_gib:
        fix = "spread the weights over more devices: raise tp (or dp with ep)"
        if arch.moe and not par.ep:
            fix = f"enable expert parallelism ({p.name('parallelism', 'ep')}: true) so experts are split"
        yield error(
            p.field("parallelism"),
            f"{p.role}: {arch.name} with tp={par.tp} pp={par.pp} dp={par.dp} ep={par.ep} puts "
            f"{c.weights_gib:.1f} GiB of weights + {c.overhead_gib:.1f} GiB runtime on each device, over the "
            f"{c.budget_gib:.1f} GiB budget ({prof.usable_gib:g} GiB usable of {prof.chip.product} "
            f"{prof.hbm_gib} GB x gpu_memory_utilization {util:g})",
            fix,
            CODE,
        )
        return
    if not c.fits:
        fit_len = cap.max_len_that_fits(c, s.max_model_len)
        yield error(
            ("serving", "max_model_len"),
            f"{p.role}: one sequence of max_model_len {s.max_model_len} needs {c.kv_gib_per_seq:.2f} "
            f"GiB of KV cache per device, but only {max(c.kv_budget_gib, 0):.2f} GiB is left after weights "
            "and runtime",
            f"lower max_model_len to {fit_len} or less, raise {p.name('gpu_memory_utilization')}, or "
            "spread the pool wider"
            if fit_len
            else "spread the pool over more devices or use a quantized model",
            CODE,
        )
        return
    if not c.full_concurrency_fits:
        seqs = p.pool.max_num_seqs or s.max_num_seqs
        yield warning(
            p.field("max_num_seqs") if p.pool.max_num_seqs else ("serving", "max_num_seqs"),
            f"{p.role}: the KV cache of each DP rank holds {c.full_seqs_fit} sequences of max_model_len "
            f"{s.max_model_len}, fewer than max_num_seqs {seqs}; vLLM will queue or preempt long requests at "
            "full load",
            f"lower {p.name('max_num_seqs')} to {c.full_seqs_fit}, or accept the queueing",
            CODE,
        )
