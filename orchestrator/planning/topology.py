"""Replica topology: members, devices, parallel layout, DP ranks, arguments, capacity."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from orchestrator.catalog import ModelArch
from orchestrator.planning import capacity as cap
from orchestrator.planning import hccl_ports, serve_args
from orchestrator.planning.gates import startup_timeout_s
from orchestrator.planning.load import site_load
from orchestrator.planning.model import MemberPlan, MemberRole, ReplicaMode, ReplicaPlan
from orchestrator.planning.resolve import (
    ResolvedProfile,
    effective_dtype,
    effective_parallelism,
    effective_quantization,
    served_name,
)
from orchestrator.planning.speculative import mtp_draft
from orchestrator.spec.hardware import Server
from orchestrator.spec.parallelism import Parallelism
from orchestrator.spec.serving import Replica
from orchestrator.spec.site import SiteSpec


@dataclass(frozen=True)
class _Layout:
    mode: ReplicaMode
    devices: tuple[int, ...]
    dp_local: int


def _layout(replica: Replica, par: Parallelism, prof: ResolvedProfile) -> _Layout:
    """The devices each member gives the replica, how its members run together and the DP ranks per
    member (a replica the layout checks passed: orchestrator/validation/plan_checks/layout.py)."""
    devices = tuple(replica.devices) if replica.devices is not None else tuple(range(prof.devices))
    local = len(devices)
    mode: ReplicaMode = "single"
    if len(replica.servers) > 1:
        mode = "ray" if (par.pp > 1 or par.tp > local) else "dp"
    dp_local = local // par.tp if mode != "ray" else 0
    return _Layout(mode, devices, dp_local)


def plan_replica(
    index: int,
    spec: SiteSpec,
    servers: dict[str, Server],
    profiles: dict[str, ResolvedProfile],
    arch: ModelArch,
    ports: Mapping[tuple[str, str], int] | None = None,
) -> ReplicaPlan:
    """The plan of replica `index`; `ports` is hccl_ports.base_ports(spec), computed once by the caller
    (it scans every replica: computing it per replica made planning quadratic in the replicas)."""
    """The plan of replica `index`, one whose layout checks passed (plan_checks/layout.py)."""
    replica = spec.serving.replicas[index]
    members = [servers[s] for s in replica.servers]
    prof = profiles[str(members[0].profile)]
    par = effective_parallelism(spec.serving, replica)
    layout = _layout(replica, par, prof)
    quant = effective_quantization(spec.model, arch)
    dtype = effective_dtype(spec.model, arch, prof.chip)
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
        load=site_load(spec, arch).args(),
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
    return ReplicaPlan(
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


def _control_ip(member: Server) -> str:
    """The node's IP for HCCL_IF_IP and, on Ray, for `ray start --node-ip-address` and VLLM_HOST_IP (the
    vllm-ascend Ray recipe uses its {local_ip} for all three): overrides.hccl_if_ip, else the address."""
    return str(member.overrides.hccl_if_ip or member.address)
