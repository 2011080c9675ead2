"""Assemble the site plan from a structurally valid spec."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import NamedTuple

from orchestrator.catalog import ModelArch, get_release
from orchestrator.catalog.container_engine import CONTAINER_RUNTIME_PACKAGES
from orchestrator.planning import capacity as cap
from orchestrator.planning import hccl_ports, preflight
from orchestrator.planning.drivers import drivers_plan
from orchestrator.planning.hccn_peers import hccn_views
from orchestrator.planning.image import image_plans
from orchestrator.planning.load import site_load
from orchestrator.planning.model import HostPlan, ReplicaPlan, SitePlan, StackPlan
from orchestrator.planning.network import HccnServer, plan_hccn
from orchestrator.planning.pd import plan_pd
from orchestrator.planning.pd_model import PdPlan
from orchestrator.planning.pd_peers import pd_links
from orchestrator.planning.resolve import (
    ResolvedProfile,
    effective_dtype,
    effective_quantization,
    resolve_profile,
    served_name,
)
from orchestrator.planning.roles import role_host, role_hosts
from orchestrator.planning.rollout import rollout_plan
from orchestrator.planning.serve_args import RAY_GCS_PORT
from orchestrator.planning.topology import plan_replica
from orchestrator.planning.tuning import host_tuning, tuning_plan
from orchestrator.planning.warmup import warmup_plan
from orchestrator.spec.findings import SpecPath
from orchestrator.spec.site import SiteSpec


class PortClaim(NamedTuple):
    port: int
    what: str  # "ssh", "replica r1 API"
    path: SpecPath  # the spec field that sets it


def stack_plan(spec: SiteSpec) -> StackPlan:
    s = spec.software.vllm_ascend
    try:
        r = get_release(s.version)
        return StackPlan(
            s.version,
            s.vllm or r.vllm,
            s.cann or r.cann,
            r.torch,
            s.torch_npu or r.torch_npu,
            r.triton_ascend,
            s.python or r.image_python,
        )
    except KeyError:  # allowed by allow_unsupported: explicit values are required then
        return StackPlan(s.version, s.vllm or "", s.cann or "", "", s.torch_npu or "", "", s.python or "")


def hccn_members(spec: SiteSpec, profiles: dict[str, ResolvedProfile]) -> list[HccnServer]:
    """The servers whose NPU NICs the HCCN plan addresses (NPU servers of a chip with RoCE), in spec order."""
    members = []
    for i, srv in enumerate(spec.servers):
        prof = profiles.get(srv.profile or "")
        if prof is None or not prof.chip.has_roce or "npu" not in srv.roles:
            continue
        explicit = tuple(srv.overrides.hccn_addresses) if srv.overrides.hccn_addresses is not None else None
        members.append(HccnServer(srv.name, i, prof.devices, explicit))
    return members


def pd_port_claims(pd: PdPlan) -> dict[str, list[PortClaim]]:
    """The PD ranks' ports: API port and Mooncake handshake ports per rank, DP RPC port on each instance's
    first server (the DP master)."""
    claims: dict[str, list[PortClaim]] = defaultdict(list)
    for inst in pd.instances:
        pool: SpecPath = ("serving", "disaggregation", inst.role)
        claims[inst.servers[0]].append(
            PortClaim(inst.dp_rpc_port, f"PD instance {inst.name} DP RPC", (*pool, "dp_rpc_port"))
        )
        for r in inst.ranks:
            claims[r.server].append(PortClaim(r.port, f"PD {inst.name} dp{r.dp_rank} API", (*pool, "port")))
            for port in r.kv_handshake_ports:
                what = f"PD {inst.name} dp{r.dp_rank} Mooncake handshake"
                claims[r.server].append(PortClaim(port, what, (*pool, "kv_port")))
    return claims


def port_claims(
    spec: SiteSpec, replicas: Sequence[ReplicaPlan], pd: PdPlan | None = None
) -> dict[str, list[PortClaim]]:
    """Ports each host listens on, in claim order, each with the spec field that sets it (the PD ranks' when
    pd is given)."""
    claims: dict[str, list[PortClaim]] = defaultdict(list)
    mon_cfg = spec.monitoring
    for i, srv in enumerate(spec.servers):
        claims[srv.name].append(PortClaim(srv.ssh_port, "ssh", ("servers", i, "ssh_port")))
        if "npu" in srv.roles and mon_cfg.enabled:
            claims[srv.name].append(
                PortClaim(mon_cfg.node_exporter_port, "node_exporter", ("monitoring", "node_exporter_port"))
            )
            claims[srv.name].append(
                PortClaim(mon_cfg.npu_exporter_port, "npu-exporter", ("monitoring", "npu_exporter_port"))
            )
    index = {r.name: i for i, r in enumerate(spec.serving.replicas)}
    for rep in replicas:
        r = index[rep.name]
        port_path: SpecPath = (
            ("serving", "replicas", r, "port") if spec.serving.replicas[r].port else ("serving", "port")
        )
        claims[rep.head.server].append(PortClaim(rep.port, f"replica {rep.name} API", port_path))
        if rep.mode == "dp":
            claims[rep.head.server].append(
                PortClaim(rep.dp_rpc_port, f"replica {rep.name} DP RPC", ("serving", "dp_rpc_port"))
            )
        if rep.mode == "ray":
            claims[rep.head.server].append(
                PortClaim(RAY_GCS_PORT, f"replica {rep.name} Ray head", ("serving", "replicas", r))
            )
    for host, pd_claims in (pd_port_claims(pd) if pd else {}).items():
        claims[host] += pd_claims
    mon = role_host(spec, "monitoring")
    if mon_cfg.enabled and mon:
        claims[mon].append(
            PortClaim(mon_cfg.prometheus_port, "prometheus", ("monitoring", "prometheus_port"))
        )
    gw = role_host(spec, "gateway")
    if spec.gateway.enabled and gw:
        claims[gw].append(PortClaim(spec.gateway.port, "gateway", ("gateway", "port")))
    return claims


def _dtype(
    spec: SiteSpec,
    arch: ModelArch,
    profiles: dict[str, ResolvedProfile],
    replicas: list[ReplicaPlan],
    pd: PdPlan | None,
) -> str:
    if replicas:
        return effective_dtype(spec.model, arch, profiles[replicas[0].profile].chip)
    if pd and pd.instances:
        return effective_dtype(spec.model, arch, profiles[pd.instances[0].profile].chip)
    return (
        spec.model.dtype if spec.model.dtype != "auto" else arch.default_dtype
    )  # no replica could be placed


def build_plan(spec: SiteSpec, arch: ModelArch, placeable: Collection[int] | None = None) -> SitePlan:
    """The site plan of a spec whose spec-level rules passed, with the replicas at the indices in placeable
    (default: all; the pipeline leaves out those whose layout checks failed)."""
    profiles = {name: resolve_profile(name, p) for name, p in spec.profiles.items()}
    servers = {s.name: s for s in spec.servers}
    indices = range(len(spec.serving.replicas)) if placeable is None else sorted(placeable)
    base_ports = hccl_ports.base_ports(spec)  # once: it scans every replica
    replicas = [plan_replica(i, spec, servers, profiles, arch, base_ports) for i in indices]
    pd = plan_pd(spec, servers, profiles, arch)
    hccn = plan_hccn(spec.network.hccn, hccn_members(spec, profiles)) if spec.network.hccn is not None else {}
    ports = port_claims(spec, replicas, pd)
    stack = stack_plan(spec)
    replicas_of: dict[str, list[str]] = {}  # server -> its replicas, in replica order (one pass, not n x m)
    for r in replicas:
        for name in dict.fromkeys(m.server for m in r.members):
            replicas_of.setdefault(name, []).append(r.name)
    hosts = []
    tuning = tuning_plan(spec)
    weights_gib = cap.weight_bytes_total(arch, effective_quantization(spec.model, arch)) / cap.GIB
    for srv in spec.servers:
        prof = profiles.get(srv.profile or "")
        host = HostPlan(
            name=srv.name,
            address=str(srv.address),
            ssh_port=srv.ssh_port,
            roles=tuple(srv.roles),
            profile=srv.profile,
            chip=prof.chip.name if prof else None,
            devices=prof.devices if prof else 0,
            hbm_gib=prof.hbm_gib if prof else 0,
            hccn=hccn.get(srv.name, ()),
            replicas=tuple(replicas_of.get(srv.name, ())),
            ports=tuple(sorted((c.port, c.what) for c in ports.get(srv.name, []))),
            tuning=host_tuning(spec, tuning, srv) if prof else None,
        )
        hosts.append(
            replace(
                host,
                preflight_npu=preflight.preflight_npu(spec, host),
                disk=preflight.disk_needs(spec, host, weights_gib, arch.name),
            )
        )
    views = hccn_views(hosts, replicas, pd_links(pd) if pd else ())
    hosts = [
        replace(h, hccn_peers=views[h.name].peers, rank_tables=tuple(views[h.name].rank_tables.items()))
        for h in hosts
    ]
    quant = effective_quantization(spec.model, arch)
    return SitePlan(
        site=spec.site,
        stack=stack,
        images=image_plans(spec, stack, profiles),
        hosts=tuple(hosts),
        replicas=tuple(replicas),
        model_name=arch.name,
        served_name=served_name(spec.model),
        weights_gib=weights_gib,
        quantization=quant,
        dtype=_dtype(spec, arch, profiles, replicas, pd),
        tuning=tuning,
        preflight=preflight.preflight_site(spec),
        roles=role_hosts(spec),
        rollout=rollout_plan(spec.rollout, len(pd.instances) if pd else len(replicas)),
        drivers=drivers_plan(spec),
        container_runtime_packages=CONTAINER_RUNTIME_PACKAGES[spec.os.distro],
        pd=pd,
        warmup=warmup_plan(spec),
        load=site_load(spec, arch),
    )
