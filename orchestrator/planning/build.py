"""Assemble the site plan from a structurally valid spec."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from orchestrator.catalog import ModelArch, get_release
from orchestrator.catalog.container_engine import CONTAINER_RUNTIME_PACKAGES
from orchestrator.planning import capacity as cap
from orchestrator.planning import preflight
from orchestrator.planning.drivers import drivers_plan
from orchestrator.planning.gates import startup_plan
from orchestrator.planning.hccn_peers import hccn_views
from orchestrator.planning.image import image_plans
from orchestrator.planning.layout_fix import merge_shared
from orchestrator.planning.model import HccnDevice, HostPlan, ReplicaPlan, SitePlan, StackPlan
from orchestrator.planning.network import HccnServer, HostAddress, plan_hccn
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
from orchestrator.spec.findings import Finding, SpecPath, error
from orchestrator.spec.site import SiteSpec


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


def _hccn(
    spec: SiteSpec, profiles: dict[str, ResolvedProfile]
) -> tuple[dict[str, tuple[HccnDevice, ...]], list[Finding]]:
    plan = spec.network.hccn
    if plan is None:
        return {}, []
    members = []
    hosts: dict[str, HostAddress] = {}
    for i, srv in enumerate(spec.servers):
        hosts.setdefault(
            str(srv.address),
            HostAddress(("servers", i, "address"), f"the management address of '{srv.name}'"),
        )
        if srv.overrides.hccl_if_ip is not None:
            hosts.setdefault(
                str(srv.overrides.hccl_if_ip),
                HostAddress(("servers", i, "overrides", "hccl_if_ip"), f"the HCCL_IF_IP of '{srv.name}'"),
            )
    for i, srv in enumerate(spec.servers):
        prof = profiles.get(srv.profile or "")
        if prof is None or not prof.chip.has_roce or "npu" not in srv.roles:
            continue
        explicit = tuple(srv.overrides.hccn_addresses) if srv.overrides.hccn_addresses is not None else None
        members.append(HccnServer(srv.name, i, prof.devices, explicit))
    return plan_hccn(plan, members, hosts)


def _ports(
    spec: SiteSpec, replicas: list[ReplicaPlan]
) -> tuple[dict[str, list[tuple[int, str]]], list[Finding]]:
    """Ports each host listens on, and clashes reported at the spec field of the later claimant."""
    claims: dict[str, list[tuple[int, str, SpecPath]]] = defaultdict(list)
    mon_cfg = spec.monitoring
    for i, srv in enumerate(spec.servers):
        claims[srv.name].append((srv.ssh_port, "ssh", ("servers", i, "ssh_port")))
        if "npu" in srv.roles and mon_cfg.enabled:
            claims[srv.name].append(
                (mon_cfg.node_exporter_port, "node_exporter", ("monitoring", "node_exporter_port"))
            )
            claims[srv.name].append(
                (mon_cfg.npu_exporter_port, "npu-exporter", ("monitoring", "npu_exporter_port"))
            )
    index = {r.name: i for i, r in enumerate(spec.serving.replicas)}
    for rep in replicas:
        r = index[rep.name]
        port_path: SpecPath = (
            ("serving", "replicas", r, "port") if spec.serving.replicas[r].port else ("serving", "port")
        )
        claims[rep.head.server].append((rep.port, f"replica {rep.name} API", port_path))
        if rep.mode == "dp":
            claims[rep.head.server].append(
                (rep.dp_rpc_port, f"replica {rep.name} DP RPC", ("serving", "dp_rpc_port"))
            )
        if rep.mode == "ray":
            claims[rep.head.server].append(
                (RAY_GCS_PORT, f"replica {rep.name} Ray head", ("serving", "replicas", r))
            )
    mon = role_host(spec, "monitoring")
    if mon_cfg.enabled and mon:
        claims[mon].append((mon_cfg.prometheus_port, "prometheus", ("monitoring", "prometheus_port")))
    gw = role_host(spec, "gateway")
    if spec.gateway.enabled and gw:
        claims[gw].append((spec.gateway.port, "gateway", ("gateway", "port")))
    findings: list[Finding] = []
    for host, used in claims.items():
        seen: dict[int, str] = {}
        for port, what, path in used:
            if port in seen:
                findings.append(
                    error(
                        path,
                        f"port {port} on '{host}' is used by both {seen[port]} and {what}",
                        "give one of them another port",
                        "ports",
                    )
                )
            seen.setdefault(port, what)
    ports = {host: [(port, what) for port, what, _ in used] for host, used in claims.items()}
    return ports, findings


def _device_overlaps(spec: SiteSpec, replicas: list[ReplicaPlan]) -> list[Finding]:
    owner: dict[tuple[str, int], str] = {}
    findings: list[Finding] = []
    index = {r.name: i for i, r in enumerate(spec.serving.replicas)}
    for rep in replicas:
        for m in rep.members:
            for d in m.devices:
                key = (m.server, d)
                if key in owner:
                    findings.append(
                        error(
                            ("serving", "replicas", index[rep.name], "devices"),
                            f"NPU {d} of '{m.server}' is used by replicas '{owner[key]}' and '{rep.name}'",
                            "give replicas sharing a server disjoint 'devices' lists",
                            "topology",
                        )
                    )
                    break
                owner[key] = rep.name
    return findings


def _groups(spec: SiteSpec, replicas: list[ReplicaPlan]) -> list[Finding]:
    first: dict[str, ReplicaPlan] = {}
    index = {r.name: i for i, r in enumerate(spec.serving.replicas)}
    findings = []
    for rep in replicas:
        ref = first.setdefault(rep.group, rep)
        if ref.profile != rep.profile:
            findings.append(
                error(
                    ("serving", "replicas", index[rep.name], "group"),
                    f"replica '{rep.name}' "
                    f"({rep.profile}) and '{ref.name}' ({ref.profile}) are in group '{rep.group}' but "
                    "use different profiles",
                    "put them in different groups",
                    "topology",
                )
            )
    return findings


def build_plan(spec: SiteSpec, arch: ModelArch) -> tuple[SitePlan | None, list[Finding]]:
    profiles = {name: resolve_profile(name, p) for name, p in spec.profiles.items()}
    servers = {s.name: s for s in spec.servers}
    findings: list[Finding] = []
    replicas: list[ReplicaPlan] = []
    for i in range(len(spec.serving.replicas)):
        rep, found = plan_replica(i, spec, servers, profiles, arch)
        findings.extend(found)
        if rep is not None:
            replicas.append(rep)
    findings = merge_shared(findings)
    findings += _device_overlaps(spec, replicas) + _groups(spec, replicas)
    hccn, found = _hccn(spec, profiles)
    findings += found
    ports, found = _ports(spec, replicas)
    findings += found
    if any(f.is_error for f in findings):
        return None, findings
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
            ports=tuple(sorted(ports.get(srv.name, []))),
            tuning=host_tuning(spec, tuning, srv) if prof else None,
        )
        hosts.append(
            replace(
                host,
                preflight_npu=preflight.preflight_npu(spec, host),
                disk=preflight.disk_needs(spec, host, weights_gib, arch.name),
            )
        )
    views = hccn_views(hosts, replicas)
    hosts = [
        replace(h, hccn_peers=views[h.name].peers, rank_tables=tuple(views[h.name].rank_tables.items()))
        for h in hosts
    ]
    first_chip = profiles[replicas[0].profile].chip
    quant = effective_quantization(spec.model, arch)
    plan = SitePlan(
        site=spec.site,
        stack=stack,
        images=image_plans(spec, stack, profiles),
        hosts=tuple(hosts),
        replicas=tuple(replicas),
        model_name=arch.name,
        served_name=served_name(spec.model),
        weights_gib=weights_gib,
        quantization=quant,
        dtype=effective_dtype(spec.model, arch, first_chip),
        tuning=tuning,
        preflight=preflight.preflight_site(spec),
        roles=role_hosts(spec),
        rollout=rollout_plan(spec.rollout, len(replicas)),
        drivers=drivers_plan(spec),
        startup=startup_plan(spec),
        container_runtime_packages=CONTAINER_RUNTIME_PACKAGES[spec.os.distro],
    )
    return plan, findings
