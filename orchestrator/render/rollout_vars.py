"""The serve phase's rolling update: the batch sizes, the gates' settings, the worker URLs.

playbooks/serve.yml puts the HEAD SERVERS of the replicas whose release changed into group ``serve_update``
(in plan order) and rolls over it with ``serial``; each head server rolls the replicas it heads one after
another (other members through ``delegate_to``: a multi-node replica rolls as a unit), so a batch of k head
servers has at most k replicas out of service at once.
- ``play_serve_serial`` (play_vars.yml; ``serial`` is a play keyword), in head servers: the canary batch
  first, then ``batch_size`` (a number or a percentage of the replicas), no batch larger than
  ``replicas - min_available``. Ansible repeats the last entry of a serial list until every host ran.
- ``rollout_replicas[].worker_url`` (group_vars/all.yml): the replica's URL in vllm-router's worker list.
"""

from __future__ import annotations

import math
from typing import Any

from orchestrator.planning.model import ReplicaPlan, SitePlan
from orchestrator.spec.operations import Rollout
from orchestrator.spec.site import SiteSpec


def worker_url(rep: ReplicaPlan) -> str:
    """The replica's URL in vllm-router's worker list: its endpoint without /v1 (head address + port)."""
    return f"http://{rep.head.address}:{rep.port}"


def batch_size(rollout: Rollout, replicas: int) -> int:
    """Replicas per later batch: the number, or the percentage of ``replicas`` (at least 1)."""
    value = rollout.batch_size
    if isinstance(value, str):
        pct = float(value.strip().rstrip("%"))
        return max(1, math.floor(replicas * pct / 100))
    return max(1, int(value))


def serial(rollout: Rollout, replicas: int) -> list[int]:
    """``serial`` of the rolling play: [canary, batch] (or [batch] without a canary), each capped by the
    replicas that may be out of service at once (replicas - min_available, at least 1)."""
    cap = max(1, replicas - (rollout.min_available or 0))
    later = min(batch_size(rollout, replicas), cap)
    if rollout.canary <= 0:
        return [later]
    return [min(rollout.canary, cap), later]


def rollout_play_vars(spec: SiteSpec, plan: SitePlan) -> dict[str, Any]:
    return {
        "play_serve_serial": serial(spec.rollout, len(plan.replicas)),
        "play_serve_max_fail_percentage": spec.rollout.max_fail_percentage,
    }


def rollout_vars(spec: SiteSpec, plan: SitePlan) -> dict[str, Any]:
    """group_vars/all.yml: the gates' settings the rolling play reads (the router's URL comes from
    render/gateway_vars.py)."""
    g = spec.rollout.gates
    return {
        "rollout_latency_budget_s": g.latency_budget_s,
        "rollout_drain_timeout_s": g.drain_timeout_s,
        "rollout_soak_s": g.soak_s,
    }
