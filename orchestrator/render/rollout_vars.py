"""The serve phase's rolling update (issue 10): one inventory pseudo-host per replica and the batch sizes.

- Group ``serve_replicas`` (hosts.yml, variables inline): host ``replica-<name>`` per replica,
  ``ansible_connection: local`` (it runs on the
  controller and reaches its members with ``delegate_to``), its replica in ``serve_replica``. A multi-node
  replica is ONE pseudo-host, so it rolls as a unit. playbooks/serve.yml puts the replicas whose release
  changed into group ``serve_update`` and rolls over it with ``serial``.
- ``play_serve_serial`` (play_vars.yml; ``serial`` is a play keyword): the canary batch first, then
  ``batch_size`` (a number or a percentage of the replicas), no batch larger than
  ``replicas - min_available`` (a batch is out of service while it is replaced). Ansible repeats the last
  entry of a serial list until every host ran.
"""

from __future__ import annotations

import math
from typing import Any

from orchestrator.planning.model import ReplicaPlan, SitePlan
from orchestrator.planning.roles import replica_host
from orchestrator.spec.operations import Rollout
from orchestrator.spec.site import SiteSpec

REPLICA_GROUP = "serve_replicas"
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


def replica_group(plan: SitePlan) -> dict[str, Any]:
    """hosts.yml: the group of replica pseudo-hosts, each with its few variables inline (they are not
    servers: no host_vars file)."""
    return {"hosts": {replica_host(r.name): replica_host_vars(r) for r in plan.replicas}}


def replica_host_vars(rep: ReplicaPlan) -> dict[str, Any]:
    """A pseudo-host's variables: local connection, its replica."""
    return {
        "ansible_connection": "local",
        "ansible_python_interpreter": "{{ ansible_playbook_python }}",
        "ansible_become": False,
        "serve_replica": {
            "name": rep.name,
            "head": rep.head.server,
            "members": [m.server for m in rep.members],
            "port": rep.port,
            "endpoint": rep.endpoint,
            "worker_url": worker_url(rep),
        },
    }
