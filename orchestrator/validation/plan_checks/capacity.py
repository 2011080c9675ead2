"""Does a planned replica fit its NPUs' memory: weights and runtime within the budget, one sequence of
max_model_len in the KV cache left, max_num_seqs of them at full load (a warning)."""

from __future__ import annotations

from orchestrator.catalog import ModelArch
from orchestrator.planning import capacity as cap
from orchestrator.planning.model import Capacity, ReplicaPlan
from orchestrator.planning.resolve import ResolvedProfile, effective_quantization
from orchestrator.planning.speculative import mtp_draft
from orchestrator.spec.findings import Finding, SpecPath, error, warning
from orchestrator.spec.serving import Replica
from orchestrator.spec.site import SiteSpec

__all__ = ["capacity_findings"]


def capacity_findings(
    index: int, planned: ReplicaPlan, spec: SiteSpec, profiles: dict[str, ResolvedProfile], arch: ModelArch
) -> list[Finding]:
    """Findings for the memory budget the plan computed for replica `index` (planned)."""
    replica = spec.serving.replicas[index]
    quant = effective_quantization(spec.model, arch)
    kv_bytes = 1 if spec.serving.kv_cache_dtype == "int8" else 2
    path: SpecPath = ("serving", "replicas", index)
    prof = profiles[planned.profile]
    return _capacity_findings(path, spec, replica, prof, arch, quant, kv_bytes, planned.capacity)


def _capacity_findings(
    path: SpecPath,
    spec: SiteSpec,
    replica: Replica,
    prof: ResolvedProfile,
    arch: ModelArch,
    quant: str,
    kv_bytes: int,
    c: Capacity,
) -> list[Finding]:
    serving = spec.serving
    devices = (len(replica.devices) if replica.devices is not None else prof.devices) * len(replica.servers)
    have = f"this replica has {devices} x {prof.hbm_gib} GB"
    qname = {"none": arch.default_dtype.upper(), "w8a8": "W8A8", "w4a8": "W4A8"}[quant]
    if c.budget_gib < c.weights_gib + c.overhead_gib:
        missing = c.weights_gib + c.overhead_gib - c.budget_gib
        need = cap.servers_needed(
            arch,
            quant,
            kv_bytes,
            prof.devices,
            prof.usable_gib,
            serving.gpu_memory_utilization,
            serving.max_model_len,
            serving.hccl.buffsize_mb,
            mtp=mtp_draft(serving.extra_args) and arch.mtp_layers > 0,
        )
        total_gib = cap.weight_bytes_total(arch, quant) / cap.GIB
        over = (
            f"{c.weights_gib:.1f} GiB of weights + {c.overhead_gib:.1f} GiB runtime per device exceed the "
            f"{c.budget_gib:.1f} GiB budget ({prof.usable_gib:g} GiB usable of {prof.hbm_gib} GB x "
            "gpu_memory_utilization "
            f"{serving.gpu_memory_utilization:g}) by {missing:.1f} GiB"
        )
        par = replica.parallelism or serving.parallelism
        if need is not None and need <= len(replica.servers):
            fix = "spread the weights over more devices: raise tp or pp"
            if arch.moe and not par.ep:
                fix = "enable expert parallelism (ep: true) so experts are split across all devices"
            message = (
                f"{arch.name} {qname} ({total_gib:.0f} GiB of weights) fits on {need} {prof.chip.product} "
                f"server(s), but with tp={par.tp} pp={par.pp} dp={par.dp} ep={par.ep} {over}"
            )
            return [
                error(
                    (*path, "parallelism") if replica.parallelism else ("serving", "parallelism"),
                    message,
                    fix,
                    "capacity",
                )
            ]
        if need is not None:
            servers = f"{need} {prof.chip.product} servers ({need * prof.devices} x {prof.hbm_gib} GB)"
            fix = f"give the replica at least {need} servers and spread the model over all their devices"
        else:
            servers = f"more than 64 {prof.chip.product} servers"
            fix = "use a quantized variant or a larger profile"
        if arch.moe and not par.ep:
            fix += "; enable expert parallelism (ep: true) so experts are split across all devices"
        return [
            error(
                (*path, "servers"),
                f"{arch.name} {qname} ({total_gib:.0f} GiB of weights) needs at least {servers}; "
                f"{have}: {over}",
                fix,
                "capacity",
            )
        ]
    if not c.fits:
        fit_len = cap.max_len_that_fits(c, serving.max_model_len)
        return [
            error(
                ("serving", "max_model_len"),
                f"replica '{replica.name}': one sequence of max_model_len {serving.max_model_len} needs "
                f"{c.kv_gib_per_seq:.2f} GiB of KV cache per device, but only {max(c.kv_budget_gib, 0):.2f} "
                "GiB is left after weights and runtime",
                f"lower max_model_len to {fit_len} or less, raise gpu_memory_utilization, or add devices"
                if fit_len
                else "add devices or use a quantized model",
                "capacity",
            )
        ]
    if not c.full_concurrency_fits:
        return [
            warning(
                ("serving", "max_num_seqs"),
                f"replica '{replica.name}': the KV cache holds {c.full_seqs_fit} sequences of "
                f"max_model_len {serving.max_model_len}, fewer than max_num_seqs {serving.max_num_seqs}; "
                "vLLM will queue or preempt long requests at full load",
                f"lower max_num_seqs to {c.full_seqs_fit} or max_model_len, or accept the queueing",
                "capacity",
            )
        ]
    return []
