"""Replica topology: members, devices, parallel layout, DP ranks, arguments, capacity."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from orchestrator.catalog import ModelArch
from orchestrator.planning import capacity as cap
from orchestrator.planning import hccl_ports, serve_args
from orchestrator.planning.gates import startup_timeout_s
from orchestrator.planning.layout_fix import suggest_layouts
from orchestrator.planning.model import Capacity, MemberPlan, MemberRole, ReplicaMode, ReplicaPlan
from orchestrator.planning.resolve import (
    ResolvedProfile,
    effective_dtype,
    effective_parallelism,
    effective_quantization,
    served_name,
)
from orchestrator.planning.speculative import mtp_draft
from orchestrator.spec.findings import Finding, SpecPath, error, warning
from orchestrator.spec.hardware import Server
from orchestrator.spec.serving import Parallelism, Replica
from orchestrator.spec.site import SiteSpec


@dataclass(frozen=True)
class _Layout:
    mode: ReplicaMode
    devices: tuple[int, ...]
    dp_local: int


def _check_layout(
    path: SpecPath, replica: Replica, par: Parallelism, prof: ResolvedProfile, arch: ModelArch
) -> tuple[_Layout | None, list[Finding]]:
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
        return None, findings
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
    mode: ReplicaMode = "single"
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
    if any(f.is_error for f in findings):
        return None, findings
    dp_local = local // par.tp if mode != "ray" else 0
    return _Layout(mode, devices, dp_local), findings


def plan_replica(
    index: int,
    spec: SiteSpec,
    servers: dict[str, Server],
    profiles: dict[str, ResolvedProfile],
    arch: ModelArch,
    ports: Mapping[tuple[str, str], int] | None = None,
) -> tuple[ReplicaPlan | None, list[Finding]]:
    """The plan of replica `index`; `ports` is hccl_ports.base_ports(spec), computed once by the caller
    (it scans every replica: computing it per replica made planning quadratic in the replicas)."""
    replica = spec.serving.replicas[index]
    path: SpecPath = ("serving", "replicas", index)
    members = [servers[s] for s in replica.servers]
    names = {m.profile for m in members}
    if len(names) != 1 or None in names:
        return None, [
            error(
                (*path, "servers"),
                f"servers of replica '{replica.name}' use different or no "
                f"hardware profiles ({', '.join(sorted(str(n) for n in names))})",
                "put servers of one profile in a replica",
                "topology",
            )
        ]
    prof = profiles[str(members[0].profile)]
    par = effective_parallelism(spec.serving, replica)
    layout, findings = _check_layout(path, replica, par, prof, arch)
    if layout is None:
        return None, findings
    quant = effective_quantization(spec.model, arch)
    dtype = effective_dtype(spec.model, arch, prof.chip)
    if dtype == "bfloat16" and not prof.chip.supports_bf16:
        findings.append(
            error(
                ("model", "dtype"),
                f"{prof.chip.name} has no bfloat16 support",
                "set model.dtype: float16",
                "model",
            )
        )
    kv_bytes = 1 if spec.serving.kv_cache_dtype == "int8" else 2
    hccl = spec.serving.hccl
    mtp = mtp_draft(spec.serving.extra_args) and arch.mtp_layers > 0
    capacity = cap.plan_capacity(
        arch,
        quant,
        kv_bytes,
        cap.Layout(par.tp, par.pp, par.dp, par.ep, mtp),
        prof.usable_gib,
        spec.serving.gpu_memory_utilization,
        spec.serving.max_model_len,
        spec.serving.max_num_seqs,
        hccl.buffsize_mb,
    )
    findings.extend(_capacity_findings(path, spec, replica, prof, arch, quant, kv_bytes, capacity))
    port = replica.port or spec.serving.port
    head = members[0]
    backend = "ray" if layout.mode == "ray" else None
    engine = serve_args.engine_args(
        weights_path=spec.model.weights_path,
        serving=spec.serving,
        tp=par.tp,
        pp=par.pp,
        dp=par.dp,
        ep=par.ep,
        quantization=quant,
        dtype=dtype,
        trust_remote_code=spec.model.trust_remote_code,
        backend=backend,
    )
    ray = layout.mode == "ray"
    head_ip = _control_ip(head)
    ray_address = f"{head_ip}:{serve_args.RAY_GCS_PORT}" if ray else None
    if ports is None:
        ports = hccl_ports.base_ports(spec)
    plans: list[MemberPlan] = []
    for rank, member in enumerate(members):
        headless = rank > 0
        args: list[str] = []
        if not ray or not headless:
            args = list(engine)
            if not headless:
                args += serve_args.api_args(str(member.address), port, served_name(spec.model))
            if layout.mode == "dp":
                args += serve_args.dp_args(
                    local=layout.dp_local,
                    start_rank=rank * layout.dp_local,
                    head_address=head_ip,
                    rpc_port=spec.serving.dp_rpc_port,
                    headless=headless,
                )
            args += spec.serving.extra_args
        env = serve_args.member_env(
            devices=layout.devices,
            world_size=par.tp * par.pp * par.dp,
            hccl=hccl,
            chip=prof.chip,
            if_ip=_control_ip(member),
            socket_ifname=member.overrides.socket_ifname,
            ray=ray,
            extra=spec.serving.env,
            base_port=ports.get((replica.name, member.name)),
            servers=len(members),
        )
        role: MemberRole = "head" if not headless else ("ray-worker" if ray else "headless")
        ray_start: list[str] = []
        if ray:
            ray_start = serve_args.ray_start_args(
                head=not headless, node_ip=_control_ip(member), head_ip=head_ip, npus=len(layout.devices)
            )
        plans.append(
            MemberPlan(
                server=member.name,
                address=str(member.address),
                node_rank=rank,
                role=role,
                devices=layout.devices,
                dp_size_local=layout.dp_local,
                dp_start_rank=rank * layout.dp_local,
                args=tuple(args),
                env=tuple(env),
                ray_start_args=tuple(ray_start),
                ray_node_ip=_control_ip(member) if ray else None,
            )
        )
    weights_per_server = capacity.weights_gib * len(layout.devices)
    timeout = spec.rollout.gates.startup_timeout_s or startup_timeout_s(
        weights_per_server, spec.rollout.gates.weights_read_mb_s, spec.serving.enforce_eager
    )
    plan = ReplicaPlan(
        name=replica.name,
        group=replica.group,
        profile=prof.name,
        chip=prof.chip.name,
        mode=layout.mode,
        tp=par.tp,
        pp=par.pp,
        dp=par.dp,
        ep=par.ep,
        port=port,
        dp_rpc_port=spec.serving.dp_rpc_port,
        members=tuple(plans),
        capacity=capacity,
        startup_timeout_s=timeout,
        ray_address=ray_address,
    )
    return plan, findings


def _control_ip(member: Server) -> str:
    """The node's IP for HCCL_IF_IP and, on Ray, for `ray start --node-ip-address` and VLLM_HOST_IP (the
    vllm-ascend Ray recipe uses its {local_ip} for all three): overrides.hccl_if_ip, else the address."""
    return str(member.overrides.hccl_if_ip or member.address)


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
