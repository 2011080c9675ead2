"""The plan of a prefill/decode disaggregated site as `orchestrator validate` prints it: each pool's instances
(servers, engine id, kv port, capacity, startup gate), every DP rank (server, API port, Mooncake handshake
ports, NPUs, container), the gateway's worker lists; with --argv each rank's `vllm serve` argv and
environment (and each replica member's, on an aggregated site)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from orchestrator.cli.plan_text import capacity_line, ranges

if TYPE_CHECKING:  # light to import (cli/output.py is read by every command's --help)
    from orchestrator.planning.model import SitePlan
    from orchestrator.planning.pd_model import PdInstancePlan, PdPlan


def instance_lines(inst: PdInstancePlan) -> list[str]:
    experts = f"expert parallel over {inst.ep_size} NPUs" if inst.ep else "expert parallel off"
    lines = [
        f"  {inst.role.capitalize()} instance {inst.name} (tp {inst.tp} x pp {inst.pp} x dp {inst.dp}, "
        f"{experts}) on {', '.join(inst.servers)}: engine id '{inst.engine_id}', kv_port {inst.kv_port}, "
        f"DP master {inst.dp_address}:{inst.dp_rpc_port}"
    ]
    lines.append("    dp rank  server        API port  handshake ports  NPUs   container")
    for r in inst.ranks:
        hs = r.kv_handshake_ports
        ports = f"{hs[0]}-{hs[-1]}" if len(hs) > 1 else str(hs[0]) if hs else "-"
        lines.append(
            f"    {r.dp_rank:<7}  {r.server:<12}  {r.port:<8}  {ports:<15}  {ranges(r.devices):<5}  "
            f"{r.container_name}"
        )
    lines.append("  " + capacity_line(inst.capacity))
    lines.append(f"    startup gate: healthy within {inst.startup_timeout_s} s")
    return lines


def pd_lines(pd: PdPlan) -> list[str]:
    lines = [
        f"Prefill/decode disaggregated ({pd.connector}): {len(pd.prefill)} prefill instance(s), "
        f"{len(pd.decode)} decode instance(s)"
    ]
    for inst in pd.instances:
        lines += instance_lines(inst)
    for role in ("prefill", "decode"):
        urls = pd.worker_urls(role)
        lines.append(f"  gateway {role} workers ({len(urls)}): {' '.join(urls)}")
    return lines


def argv_lines(plan: SitePlan) -> list[str]:
    """Every container's `vllm serve` argv and environment (validate --argv)."""
    lines: list[str] = []
    for rep in plan.replicas:
        for m in rep.members:
            lines.append(f"Replica {rep.name} on {m.server} ({m.role}):")
            lines += _process(m.args, m.env)
    if plan.pd is not None:
        for inst in plan.pd.instances:
            for r in inst.ranks:
                role = inst.role.capitalize()
                lines.append(f"{role} {inst.name} dp{r.dp_rank} on {r.server} ({r.container_name}):")
                lines += _process(r.args, r.env)
    return lines


def _process(args: tuple[str, ...], env: tuple[tuple[str, str], ...]) -> list[str]:
    out = [f"  env {k}={shlex.quote(v)}" for k, v in env]
    if args:
        out.append("  vllm " + " ".join(shlex.quote(a) for a in args))
    return out
