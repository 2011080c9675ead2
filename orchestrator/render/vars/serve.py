"""The serve phase's variables (role vllm_serve and its rolling update): every replica member's instance
(host_vars), the replicas and the gates' settings (group_vars/all.yml), the rolling play's batches
(play_vars.yml). All of it is the plan's (planning/topology.py, serve_args.py,
rollout.py, gates.py).

- ``play_serve_serial``, in head servers: the canary batch first, then the planned batch size, no batch
  larger than ``replicas - min_available`` (planning/rollout.py). playbooks/serve.yml rolls the head servers
  of the replicas whose release changed with it; filter ascend.npu.rollout_batch splits them the same way.
- ``rollout_replicas[].worker_url``: the replica's URL in vllm-router's worker list.
- ``startup_timeout_s`` of every instance and replica: the plan's readiness timeout (planning/gates.py), which
  the role passes through unchanged.
"""

from __future__ import annotations

from typing import Any

from orchestrator.planning.model import MemberPlan, ReplicaPlan, SitePlan
from orchestrator.render.vars.serve_pd import pd_replica
from orchestrator.spec.site import SiteSpec


def worker_url(rep: ReplicaPlan) -> str:
    """The replica's URL in vllm-router's worker list: its endpoint without /v1 (head address + port)."""
    return rep.endpoint.removesuffix("/v1")


def _replica_summary(rep: ReplicaPlan) -> dict[str, Any]:
    return {
        "name": rep.name,
        "group": rep.group,
        "head": rep.head.server,
        "endpoint": rep.endpoint,
        "worker_url": worker_url(rep),
        "members": [m.server for m in rep.members],
        "mode": rep.mode,
        "port": rep.port,
        "startup_timeout_s": rep.startup_timeout_s,
    }


def _warmup(plan: SitePlan) -> dict[str, Any] | None:
    """The warm-up set as ascend.npu.vllm_warmup takes it (planning/warmup.py); None when it is off."""
    w = plan.warmup
    if w is None:
        return None
    return {
        "requests": [r.as_dict() for r in w.requests],
        "max_rounds": w.max_rounds,
        "settle_ratio": w.settle_ratio,
    }


def serve_vars(spec: SiteSpec, plan: SitePlan) -> dict[str, Any]:
    """group_vars/all.yml."""
    g = spec.rollout.gates
    return {
        "vllm_serve_served_name": plan.served_name,
        "vllm_serve_api_key_ref": spec.serving.api_key,
        "rollout_auto_rollback": spec.rollout.auto_rollback,
        "rollout_smoke_prompts": g.smoke_prompts,
        "rollout_max_error_rate": g.max_error_rate,
        "vllm_serve_ready_interval_s": g.health_interval_s,
        "rollout_accuracy_tolerance": g.accuracy_tolerance,
        "rollout_latency_budget_s": g.latency_budget_s,
        "rollout_drain_timeout_s": g.drain_timeout_s,
        "rollout_soak_s": g.soak_s,
        "rollout_soak_batches": g.soak_batches,
        "rollout_progress_interval_s": g.progress_interval_s,
        # a timeout the spec sets stands; else a restart's comes from the server's last start (its record)
        "rollout_startup_from_history": g.startup_timeout_s is None,
        "rollout_warmup": _warmup(plan),
        "rollout_replicas": [_replica_summary(r) for r in plan.replicas]
        + [pd_replica(i) for i in (plan.pd.instances if plan.pd is not None else ())],
    }


def serve_play_vars(plan: SitePlan) -> dict[str, Any]:
    """play_vars.yml: ``serial`` and ``max_fail_percentage`` of the rolling play."""
    return {
        "play_serve_serial": list(plan.rollout.serial),
        "play_serve_max_fail_percentage": plan.rollout.max_fail_percentage,
    }


def _ray(rep: ReplicaPlan, m: MemberPlan) -> dict[str, Any]:
    """What a Ray member runs besides (head) or instead of (worker) `vllm serve` (docs/ray.md)."""
    return {
        "gcs_address": rep.ray_address,
        "node_ip_address": m.ray_node_ip,
        "npus": len(m.devices),
        "cluster_npus": rep.tp * rep.pp,
        "start_args": list(m.ray_start_args),
    }


def instance(plan: SitePlan, rep: ReplicaPlan, m: MemberPlan, chip: str) -> dict[str, Any]:
    """One replica member on its server (host_vars vllm_serve_instances)."""
    out = {
        "replica": rep.name,
        "group": rep.group,
        "role": m.role,
        "mode": rep.mode,
        "node_rank": m.node_rank,
        "container_name": f"vllm-{rep.name}",
        "image": plan.image_for(chip).tag,
        "port": rep.port if m.role == "head" else None,
        "head_address": rep.head.address,
        "devices": list(m.devices),
        "visible_devices": m.visible_devices,
        "dp_size_local": m.dp_size_local,
        "dp_start_rank": m.dp_start_rank,
        "args": list(m.args),
        "env": dict(m.env),
        "startup_timeout_s": rep.startup_timeout_s,
    }
    if rep.mode == "ray":
        out["ray"] = _ray(rep, m)
    return out
