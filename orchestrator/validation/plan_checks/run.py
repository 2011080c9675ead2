"""The plan-level rules in the order they report: first what decides which replicas the plan can place
(their layouts), then, on the plan, each replica's dtype and memory, what replicas and hosts share, and
the NPU-NIC addresses."""

from __future__ import annotations

from collections.abc import Mapping

from orchestrator.catalog import ModelArch
from orchestrator.planning.build import hccn_members
from orchestrator.planning.model import SitePlan
from orchestrator.planning.resolve import ResolvedProfile, resolve_profile
from orchestrator.spec.findings import Finding
from orchestrator.spec.site import SiteSpec
from orchestrator.validation.plan_checks.capacity import capacity_findings
from orchestrator.validation.plan_checks.hccn_addresses import HostAddress
from orchestrator.validation.plan_checks.hccn_layout import check_hccn
from orchestrator.validation.plan_checks.layout import dtype_findings, layout_findings
from orchestrator.validation.plan_checks.layout_fix import merge_shared
from orchestrator.validation.plan_checks.pd_engine_ids import engine_id_clashes
from orchestrator.validation.plan_checks.sharing import device_overlaps, group_profiles, port_clashes

__all__ = ["check_plan", "replica_layouts"]


def _profiles(spec: SiteSpec) -> dict[str, ResolvedProfile]:
    return {name: resolve_profile(name, p) for name, p in spec.profiles.items()}


def replica_layouts(spec: SiteSpec, arch: ModelArch) -> dict[int, list[Finding]]:
    """Per replica index, why it cannot be laid out (empty: the plan can place it)."""
    profiles = _profiles(spec)
    return {i: layout_findings(i, spec, profiles, arch) for i in range(len(spec.serving.replicas))}


def _host_addresses(spec: SiteSpec) -> dict[str, HostAddress]:
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
    return hosts


def check_plan(
    spec: SiteSpec, arch: ModelArch, plan: SitePlan, layouts: Mapping[int, list[Finding]]
) -> list[Finding]:
    """Every plan-level finding; plan holds the replicas whose layouts (replica_layouts) had none."""
    profiles = _profiles(spec)
    planned = {r.name: r for r in plan.replicas}
    findings: list[Finding] = []
    for i, replica in enumerate(spec.serving.replicas):
        findings += layouts.get(i, [])
        if replica.name in planned and not layouts.get(i):
            findings += dtype_findings(i, spec, profiles, arch)
            findings += capacity_findings(i, planned[replica.name], spec, profiles, arch)
    findings = merge_shared(findings)
    findings += device_overlaps(spec, plan.replicas) + group_profiles(spec, plan.replicas)
    if spec.network.hccn is not None:
        derived = {h.name: h.hccn for h in plan.hosts}
        members = hccn_members(spec, profiles)
        findings += check_hccn(spec.network.hccn, members, derived, _host_addresses(spec))
    if plan.pd is not None:
        findings += engine_id_clashes(spec, plan.pd)
    return findings + port_clashes(spec, plan)
