"""Assemble the inventory files from the per-phase variables (orchestrator/render/vars/), plain dicts in a
deterministic order. Nothing is decided here: every value comes from the plan (or is a plain spec value).

Layout written by the renderer:
  hosts.yml               groups only (npu, build, gateway, monitoring, replica_<name>, rollout_<group>,
                          phase_<phase>: render/groups.py)
  group_vars/all.yml      site-wide settings (SSH, versions, model, rollout, monitoring)
  group_vars/npu.yml      host-layer settings shared by NPU servers (packages, tuning, HCCN options)
  host_vars/<host>.yml    everything per host: address, chip, HCCN addresses, serving instances (a Ray
                          replica's members also carry `ray`: GCS address, NPUs, `ray start` argv), on a
                          PD site its DP ranks (render/vars/serve_pd.py)
Secrets stay references ('env:NAME' / 'file:PATH'); roles resolve them on the controller at run time.
"""

from __future__ import annotations

from typing import Any

from orchestrator.planning.model import HostPlan, MemberPlan, ReplicaPlan, SitePlan
from orchestrator.render.groups import inventory_groups
from orchestrator.render.vars.common import INVENTORY_VERSION, common_host_vars, common_vars
from orchestrator.render.vars.drivers import drivers_vars
from orchestrator.render.vars.gateway import gateway_vars
from orchestrator.render.vars.host import (
    container_runtime_npu_vars,
    container_runtime_vars,
    host_tuning_host_vars,
    host_tuning_vars,
)
from orchestrator.render.vars.image import image_vars
from orchestrator.render.vars.monitoring import monitoring_vars
from orchestrator.render.vars.network import network_gate_vars, network_host_vars, network_vars
from orchestrator.render.vars.preflight import preflight_host_vars, preflight_vars
from orchestrator.render.vars.serve import instance, serve_vars
from orchestrator.render.vars.serve_pd import pd_host_ranks, serve_pd_vars
from orchestrator.render.vars.weights import weights_vars
from orchestrator.spec.site import SiteSpec

Files = dict[str, dict[str, Any]]

__all__ = ["INVENTORY_VERSION", "Files", "inventory_files"]


def _all_vars(spec: SiteSpec, plan: SitePlan, spec_sha256: str) -> dict[str, Any]:
    """group_vars/all.yml: what every phase reads, then each phase's site-wide variables."""
    return {
        **common_vars(spec, spec_sha256),
        **image_vars(spec, plan),
        **weights_vars(spec),
        **serve_vars(spec, plan),
        **serve_pd_vars(plan),
        **monitoring_vars(spec, plan),
        **preflight_vars(plan),
        **gateway_vars(spec, plan),
        **container_runtime_vars(plan, spec),
    }


def _npu_vars(spec: SiteSpec, plan: SitePlan) -> dict[str, Any]:
    """group_vars/npu.yml: the host layer of the NPU servers (drivers, host, network phases)."""
    return {
        **drivers_vars(spec, plan),
        **host_tuning_vars(spec, plan),
        **container_runtime_npu_vars(spec),
        **network_vars(spec),
    }


Members = list[tuple[ReplicaPlan, MemberPlan]]


def _host_vars(
    plan: SitePlan, host: HostPlan, members: Members, pd_ranks: list[dict[str, Any]]
) -> dict[str, Any]:
    """host_vars/<host>.yml; members: the host's replica memberships in plan order (looked up once);
    pd_ranks: its PD ranks (a PD site's serving instances, render/vars/serve_pd.py)."""
    out = common_host_vars(host)
    if host.chip is not None:
        out.update({"npu_chip": host.chip, "npu_device_count": host.devices})
        out.update(network_host_vars(host))
        out.update(host_tuning_host_vars(plan, host))
    out.update(preflight_host_vars(host))
    out["vllm_serve_instances"] = [instance(plan, rep, m, host.chip or "") for rep, m in members] + pd_ranks
    if host.chip is not None:
        out.update(network_gate_vars(host))
    return out


def inventory_files(spec: SiteSpec, plan: SitePlan, spec_sha256: str) -> Files:
    """Relative path -> YAML content, in a fixed order."""
    files: Files = {
        "hosts.yml": inventory_groups(spec, plan),
        "group_vars/all.yml": _all_vars(spec, plan, spec_sha256),
        "group_vars/npu.yml": _npu_vars(spec, plan),
    }
    members: dict[str, Members] = {}  # one pass: linear in the site size
    for rep in plan.replicas:
        for m in rep.members:
            members.setdefault(m.server, []).append((rep, m))
    pd = pd_host_ranks(plan)
    for host in plan.hosts:
        files[f"host_vars/{host.name}.yml"] = _host_vars(
            plan, host, members.get(host.name, []), pd.get(host.name, [])
        )
    return files
