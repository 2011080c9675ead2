"""Can a replica be laid out: one hardware profile for its servers, a device list within them, tp x pp x dp
filling its NPU devices, and a parallel layout the model and the deployment support. A replica with an
error here is left out of the plan (orchestrator/pipeline.py)."""

from __future__ import annotations

from orchestrator.catalog import ModelArch
from orchestrator.planning.resolve import ResolvedProfile, effective_dtype, effective_parallelism
from orchestrator.spec.findings import Finding, SpecPath, error
from orchestrator.spec.parallelism import Parallelism
from orchestrator.spec.serving import Replica
from orchestrator.spec.site import SiteSpec
from orchestrator.validation.plan_checks.layout_fix import suggest_layouts

__all__ = ["dtype_findings", "layout_findings"]


def _check_layout(
    path: SpecPath, replica: Replica, par: Parallelism, prof: ResolvedProfile, arch: ModelArch
) -> list[Finding]:
    findings: list[Finding] = []
    devices = tuple(replica.devices) if replica.devices is not None else tuple(range(prof.devices))
    bad = [d for d in devices if d < 0 or d >= prof.devices]
    if bad or len(set(devices)) != len(devices) or not devices:
        findings.append(
            error(
                (*path, "devices"),
                f"device list {list(devices)} is not a set of distinct indices "
                f"in 0..{prof.devices - 1} ({prof.describe()})",
                "list each device index once, within the server's devices",
                "topology",
            )
        )
        return findings
    local = len(devices)
    nodes = len(replica.servers)
    total = local * nodes
    world = par.tp * par.pp * par.dp
    ppath: SpecPath = (*path, "parallelism") if replica.parallelism else ("serving", "parallelism")
    if world != total:
        findings.append(
            error(
                ppath,
                f"tp x pp x dp = {par.tp} x {par.pp} x {par.dp} = {world}, but replica "
                f"'{replica.name}' owns {total} NPU devices ({nodes} server(s) x {local})",
                suggest_layouts(par, local, nodes),
                "topology",
            )
        )
    if arch.heads % par.tp:
        findings.append(
            error(
                (*ppath, "tp"),
                f"{arch.name} has {arch.heads} attention heads, which tp={par.tp} does not divide",
                f"use a tp that divides {arch.heads}",
                "topology",
            )
        )
    if arch.attention == "gqa" and arch.kv_heads % par.tp and par.tp % arch.kv_heads:
        findings.append(
            error(
                (*ppath, "tp"),
                f"{arch.name} has {arch.kv_heads} KV heads: tp={par.tp} must divide "
                "them, or be a multiple of them (vLLM then replicates KV heads)",
                f"use a tp that divides {arch.kv_heads} or is a multiple of it",
                "topology",
            )
        )
    if par.pp > arch.layers:
        findings.append(
            error(
                (*ppath, "pp"),
                f"pp={par.pp} exceeds the {arch.layers} layers of {arch.name}",
                "lower pp",
                "topology",
            )
        )
    if par.ep and not arch.moe:
        findings.append(
            error(
                (*ppath, "ep"),
                f"expert parallelism needs a mixture-of-experts model; {arch.name} is dense",
                "set ep: false",
                "topology",
            )
        )
    mode = "single"
    if nodes > 1:
        mode = "ray" if (par.pp > 1 or par.tp > local) else "dp"
        if par.tp > local and not replica.multi_node_tp:
            findings.append(
                error(
                    (*ppath, "tp"),
                    f"tp={par.tp} spans servers ({local} devices per member); "
                    "tensor parallelism across servers runs over RoCE and needs Ray",
                    f"use tp <= {local} with more dp ranks, or set multi_node_tp: true on the replica",
                    "topology",
                )
            )
        if mode == "dp" and local % par.tp:
            findings.append(
                error(
                    (*ppath, "tp"),
                    f"each member has {local} devices, not a multiple of tp={par.tp}: "
                    "a DP rank cannot straddle servers",
                    f"use a tp that divides {local}",
                    "topology",
                )
            )
        if mode == "ray" and par.dp > 1:
            findings.append(
                error(
                    (*ppath, "dp"),
                    "a multi-server replica with pipeline or cross-server tensor "
                    "parallelism runs on Ray, which this pipeline deploys with dp=1 only",
                    "use dp: 1, or drop pp/multi-node tp and scale with dp",
                    "topology",
                )
            )
    return findings


def layout_findings(
    index: int, spec: SiteSpec, profiles: dict[str, ResolvedProfile], arch: ModelArch
) -> list[Finding]:
    """Why replica `index` cannot be laid out; empty when the plan can place it."""
    replica = spec.serving.replicas[index]
    path: SpecPath = ("serving", "replicas", index)
    servers = {s.name: s for s in spec.servers}
    names = {servers[s].profile for s in replica.servers}
    if len(names) != 1 or None in names:
        return [
            error(
                (*path, "servers"),
                f"servers of replica '{replica.name}' use different or no "
                f"hardware profiles ({', '.join(sorted(str(n) for n in names))})",
                "put servers of one profile in a replica",
                "topology",
            )
        ]
    prof = profiles[str(servers[replica.servers[0]].profile)]
    return _check_layout(path, replica, effective_parallelism(spec.serving, replica), prof, arch)


def dtype_findings(
    index: int, spec: SiteSpec, profiles: dict[str, ResolvedProfile], arch: ModelArch
) -> list[Finding]:
    """The model's dtype on the chip of replica `index` (a replica that can be laid out)."""
    servers = {s.name: s for s in spec.servers}
    prof = profiles[str(servers[spec.serving.replicas[index].servers[0]].profile)]
    if effective_dtype(spec.model, arch, prof.chip) == "bfloat16" and not prof.chip.supports_bf16:
        return [
            error(
                ("model", "dtype"),
                f"{prof.chip.name} has no bfloat16 support",
                "set model.dtype: float16",
                "model",
            )
        ]
    return []
