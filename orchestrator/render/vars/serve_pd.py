"""The serve phase's variables of a prefill/decode disaggregated site (serving.disaggregation), all of them
the plan's (planning/pd.py, pd_args.py); rendered only for such a site, so an aggregated site's inventory
is unchanged.

- host_vars ``vllm_serve_pd_ranks``: the DP ranks that run on the host, in plan order, one container each:
  {instance, role (prefill|decode), engine_id, dp_rank, container_name, image, address, port, url, devices
  (the host's NPU indices the container gets), visible_devices (the same, comma-joined; inside the container
  ASCEND_RT_VISIBLE_DEVICES is 0..n-1, in env), kv_port, kv_handshake_port (first of the len(devices) ports
  the rank binds), args (argv after `vllm`, starting with "serve"), env (name -> value),
  startup_timeout_s}.
- group_vars ``vllm_serve_pd``: {connector, prefill_worker_urls, decode_worker_urls (the PD gateway's
  --prefill / --decode workers, plan order), instances: [{name, role, engine_id, kv_port, dp_address,
  dp_rpc_port, servers, startup_timeout_s, ranks: [{server, dp_rank, container_name, port, url}]}]}: for the
  rollout (which containers make an instance) and the gateway.
"""

from __future__ import annotations

from typing import Any

from orchestrator.planning.model import SitePlan
from orchestrator.planning.pd_model import PdInstancePlan, PdRankPlan


def pd_rank(plan: SitePlan, inst: PdInstancePlan, r: PdRankPlan) -> dict[str, Any]:
    """One DP rank on its server (host_vars vllm_serve_pd_ranks)."""
    return {
        "instance": inst.name,
        "role": inst.role,
        "engine_id": inst.engine_id,
        "dp_rank": r.dp_rank,
        "container_name": r.container_name,
        "image": plan.image_for(inst.chip).tag,
        "address": r.address,
        "port": r.port,
        "url": r.url,
        "devices": list(r.devices),
        "visible_devices": r.visible_devices,
        "kv_port": inst.kv_port,
        "kv_handshake_port": r.kv_handshake_port,
        "args": list(r.args),
        "env": dict(r.env),
        "startup_timeout_s": inst.startup_timeout_s,
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
