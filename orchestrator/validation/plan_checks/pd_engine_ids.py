"""The Mooncake engine id of every planned PD instance is its own.

A decode rank that reads a prefill rank's metadata asserts that the remote engine id differs from its own
("Conflict engine id {engine_id} with local engine id {local}",
vllm_ascend/distributed/kv_transfer/kv_p2p/mooncake_connector.py @v0.23.0), and the gateway tells the decode
side which engine holds a request's KV by that id, so two instances with one id mix up their KV blocks.
Engine ids are planned, never typed: a clash here is a planning fault, reported at the later instance.
"""

from __future__ import annotations

from orchestrator.planning.pd_model import PdPlan
from orchestrator.spec.findings import Finding, Related, SpecPath, error
from orchestrator.spec.site import SiteSpec

__all__ = ["engine_id_clashes"]


def _paths(spec: SiteSpec) -> dict[str, SpecPath]:
    d = spec.serving.disaggregation
    out: dict[str, SpecPath] = {}
    if d is None:
        return out
    for role in ("prefill", "decode"):
        for i, inst in enumerate(getattr(d, role).instances):
            out.setdefault(inst.name, ("serving", "disaggregation", role, "instances", i, "name"))
    return out


def engine_id_clashes(spec: SiteSpec, pd: PdPlan) -> list[Finding]:
    paths = _paths(spec)
    first: dict[str, str] = {}  # engine id -> instance name
    findings: list[Finding] = []
    for inst in pd.instances:
        owner = first.setdefault(inst.engine_id, inst.name)
        if owner == inst.name:
            continue
        path = paths.get(inst.name, ("serving", "disaggregation"))
        findings.append(
            error(
                path,
                f"{inst.role} instance '{inst.name}' was planned with Mooncake engine id '{inst.engine_id}', "
                f"which instance '{owner}' has too: the connector refuses a peer with its own engine id "
                '("Conflict engine id", mooncake_connector.py @v0.23.0) and the gateway could not tell the '
                "two instances' KV apart",
                "give the instances distinct names (engine ids are derived from them); if they are distinct, "
                "this is a planning fault: report it",
                "pd-engine-id",
                (Related(paths.get(owner, ("serving", "disaggregation")), f"instance '{owner}'"),),
            )
        )
    return findings
