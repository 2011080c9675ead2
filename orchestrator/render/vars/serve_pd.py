"""The serve phase's variables of a prefill/decode disaggregated site (serving.disaggregation), all of them
the plan's (planning/pd.py, pd_args.py); rendered only for such a site, so an aggregated site's inventory
is unchanged.

- host_vars ``vllm_serve_instances``: the DP ranks that run on the host, in plan order, one container each,
  in the shape of an aggregated replica's member (render/vars/serve.py ``instance``) so the serve role starts,
  gates and rolls them the same way: every rank runs its own API server, so every rank is a "head" of its
  instance (the replica, ``replica``), mode "pd"; and the PD facts: pool (prefill|decode), engine_id,
  dp_rank, url, kv_port, kv_handshake_port (first of the len(devices) ports the rank binds). devices: the
  host's NPU indices the container gets; visible_devices: the same, comma-joined (inside the container
  ASCEND_RT_VISIBLE_DEVICES is 0..n-1, in env); args: argv after `vllm`, starting with "serve".
- group_vars ``rollout_replicas``: one entry per PD instance (head: its first server, the DP master), as
  an aggregated replica's, plus pool and engine_id: the rolling update rolls an instance as a unit.
- group_vars ``vllm_serve_pd``: {connector, prefill_worker_urls, decode_worker_urls (the PD gateway's
  --prefill / --decode workers, plan order), instances: [{name, role, engine_id, kv_port, dp_address,
  dp_rpc_port, servers, startup_timeout_s, ranks: [{server, dp_rank, container_name, port, url, engine_id (the
  id the rank reports, reported_engine_id)}]}]}: for the
  rollout (which containers make an instance) and the gateway.
"""

from __future__ import annotations

from typing import Any

from orchestrator.planning.model import SitePlan
from orchestrator.planning.pd_model import PdInstancePlan, PdRankPlan


def pd_rank(plan: SitePlan, inst: PdInstancePlan, r: PdRankPlan) -> dict[str, Any]:
    """One DP rank on its server (an entry of host_vars vllm_serve_instances)."""
    return {
        "replica": inst.name,
        "group": inst.role,
        "role": "head",
        "mode": "pd",
        "node_rank": inst.servers.index(r.server),
        "container_name": r.container_name,
        "image": plan.image_for(inst.chip).tag,
        "port": r.port,
        "head_address": r.address,
        "devices": list(r.devices),
        "visible_devices": r.visible_devices,
        "dp_size_local": 1,
        "dp_start_rank": r.dp_rank,
        "args": list(r.args),
        "env": dict(r.env),
        "startup_timeout_s": inst.startup_timeout_s,
        "pool": inst.role,
        "engine_id": inst.engine_id,
        "dp_rank": r.dp_rank,
        "url": r.url,
        "kv_port": inst.kv_port,
        "kv_handshake_port": r.kv_handshake_port,
    }


def pd_replica(inst: PdInstancePlan) -> dict[str, Any]:
    """One PD instance as an entry of rollout_replicas (its first rank's URL is its worker_url)."""
    first = inst.ranks[0]
    return {
        "name": inst.name,
        "group": inst.role,
        "head": inst.servers[0],
        "endpoint": f"{first.url}/v1",
        "worker_url": first.url,
        "members": list(inst.servers),
        "mode": "pd",
        "port": first.port,
        "startup_timeout_s": inst.startup_timeout_s,
        "pool": inst.role,
        "engine_id": inst.engine_id,
        "urls": [r.url for r in inst.ranks],
    }


def pd_host_ranks(plan: SitePlan) -> dict[str, list[dict[str, Any]]]:
    """server -> its ranks' host_vars entries, in plan order (one pass over the plan)."""
    out: dict[str, list[dict[str, Any]]] = {}
    if plan.pd is None:
        return out
    for inst in plan.pd.instances:
        for r in inst.ranks:
            out.setdefault(r.server, []).append(pd_rank(plan, inst, r))
    return out


def reported_engine_id(inst: PdInstancePlan) -> str:
    """The engine id a rank of ``inst`` hands to decodes in kv_transfer_params: with data parallelism vLLM
    appends ``_dp<local DP rank>`` (vllm/v1/engine/core.py ``run_engine_core`` @v0.23.0), and the local rank
    of an external-DP API server (one per rank, as here) is 0."""
    return f"{inst.engine_id}_dp0" if inst.dp > 1 else inst.engine_id


def _instance(inst: PdInstancePlan) -> dict[str, Any]:
    return {
        "name": inst.name,
        "role": inst.role,
        "engine_id": inst.engine_id,
        "kv_port": inst.kv_port,
        "dp_address": inst.dp_address,
        "dp_rpc_port": inst.dp_rpc_port,
        "servers": list(inst.servers),
        "startup_timeout_s": inst.startup_timeout_s,
        "ranks": [
            {
                "server": r.server,
                "dp_rank": r.dp_rank,
                "container_name": r.container_name,
                "port": r.port,
                "url": r.url,
                "engine_id": reported_engine_id(inst),
            }
            for r in inst.ranks
        ],
    }


def serve_pd_vars(plan: SitePlan) -> dict[str, Any]:
    """group_vars/all.yml: vllm_serve_pd on a PD site, nothing on an aggregated one."""
    pd = plan.pd
    if pd is None:
        return {}
    return {
        "vllm_serve_pd": {
            "connector": pd.connector,
            "prefill_worker_urls": list(pd.worker_urls("prefill")),
            "decode_worker_urls": list(pd.worker_urls("decode")),
            "instances": [_instance(i) for i in pd.instances],
        }
    }
