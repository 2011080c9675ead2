"""The groups of the rendered inventory (hosts.yml), all from the plan.

  npu, build, gateway, monitoring    the servers of each role
  container_runtime                  where a container engine runs
  replica_<name>, rollout_<group>    the servers of each replica, the replicas of each rollout group
  pd_instance_<name>, pd_<role>      PD sites: the servers of each instance, the instances of each pool
  phase_<name>                       the hosts each phase runs on (planning.phases: Phase.hosts); every
                                     play of playbooks/<name>.yml targets it or one of its parts:
  phase_<name>_<part>                the hosts some plays of the phase narrow to (Phase.parts)

`--limit` of orchestrator apply/plan/drift expands group names through group_members, the same groups.
"""

from __future__ import annotations

from typing import Any

from orchestrator.planning.model import SitePlan
from orchestrator.planning.phases import plan_phases
from orchestrator.planning.roles import SITE_ROLES, container_hosts, hosts_with_role, role_host
from orchestrator.spec.site import SiteSpec


def phase_group(phase: str, part: str | None = None) -> str:
    """The inventory group of a phase's hosts (or of one of its parts)."""
    return f"phase_{phase}" if part is None else f"phase_{phase}_{part}"


def _phase_groups(spec: SiteSpec, plan: SitePlan) -> dict[str, Any]:
    children: dict[str, Any] = {}
    for ph in plan_phases(spec, plan):
        children[phase_group(ph.name)] = {"hosts": dict.fromkeys(ph.hosts)}
        for part, hosts in ph.parts:
            children[phase_group(ph.name, part)] = {"hosts": dict.fromkeys(hosts)}
    return children


def _pd_groups(plan: SitePlan) -> dict[str, Any]:
    children: dict[str, Any] = {}
    if plan.pd is None:
        return children
    pools: dict[str, list[str]] = {"prefill": [], "decode": []}
    for inst in plan.pd.instances:
        name = f"pd_instance_{inst.name}".replace("-", "_")
        children[name] = {"hosts": dict.fromkeys(inst.servers)}
        pools[inst.role].append(name)
    for role, names in pools.items():
        children[f"pd_{role}"] = {"children": dict.fromkeys(names)}
    return children


def inventory_groups(spec: SiteSpec, plan: SitePlan) -> dict[str, Any]:
    """hosts.yml: every group under `all`, in a fixed order."""
    children: dict[str, Any] = {}
    children["npu"] = {"hosts": dict.fromkeys(hosts_with_role(spec, "npu"))}
    for role in SITE_ROLES:
        hosts = hosts_with_role(spec, role)
        if not hosts:  # the image is built on the first NPU server when no server has role 'build'
            chosen = role_host(spec, role)
            hosts = (chosen,) if chosen else ()
        children[role] = {"hosts": dict.fromkeys(hosts)}
    children["container_runtime"] = {"hosts": dict.fromkeys(container_hosts(spec))}
    groups: dict[str, list[str]] = {}
    for rep in plan.replicas:
        children[f"replica_{rep.name}".replace("-", "_")] = {"hosts": {m.server: None for m in rep.members}}
        groups.setdefault(rep.group, []).append(f"replica_{rep.name}".replace("-", "_"))
    for group, reps in groups.items():
        children[f"rollout_{group}".replace("-", "_")] = {"children": dict.fromkeys(reps)}
    children.update(_pd_groups(plan))
    children.update(_phase_groups(spec, plan))
    return {"all": {"children": children}}


def group_members(spec: SiteSpec, plan: SitePlan) -> dict[str, tuple[str, ...]]:
    """Every group of hosts.yml (not `all`) with its hosts, its child groups' included, in inventory order."""
    children: dict[str, Any] = inventory_groups(spec, plan)["all"]["children"]

    def members(name: str, seen: frozenset[str]) -> tuple[str, ...]:
        node = children.get(name) or {}
        out = list(node.get("hosts") or {})
        for child in node.get("children") or {}:
            if child not in seen:
                out += members(child, seen | {child})
        return tuple(dict.fromkeys(out))

    return {name: members(name, frozenset({name})) for name in children}
