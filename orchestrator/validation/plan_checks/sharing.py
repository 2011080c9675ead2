"""What the planned replicas and hosts share: an NPU used by two replicas, a group of replicas on
different profiles, a port two services of one host listen on."""

from __future__ import annotations

from orchestrator.planning.build import port_claims
from orchestrator.planning.model import ReplicaPlan, SitePlan
from orchestrator.spec.findings import Finding, error
from orchestrator.spec.site import SiteSpec

__all__ = ["device_overlaps", "group_profiles", "port_clashes"]


def port_clashes(spec: SiteSpec, plan: SitePlan) -> list[Finding]:
    """A clash is reported at the spec field of the later claimant."""
    findings: list[Finding] = []
    for host, used in port_claims(spec, plan.replicas).items():
        seen: dict[int, str] = {}
        for port, what, path in used:
            if port in seen:
                findings.append(
                    error(
                        path,
                        f"port {port} on '{host}' is used by both {seen[port]} and {what}",
                        "give one of them another port",
                        "ports",
                    )
                )
            seen.setdefault(port, what)
    return findings


def device_overlaps(spec: SiteSpec, replicas: tuple[ReplicaPlan, ...]) -> list[Finding]:
    owner: dict[tuple[str, int], str] = {}
    findings: list[Finding] = []
    index = {r.name: i for i, r in enumerate(spec.serving.replicas)}
    for rep in replicas:
        for m in rep.members:
            for d in m.devices:
                key = (m.server, d)
                if key in owner:
                    findings.append(
                        error(
                            ("serving", "replicas", index[rep.name], "devices"),
                            f"NPU {d} of '{m.server}' is used by replicas '{owner[key]}' and '{rep.name}'",
                            "give replicas sharing a server disjoint 'devices' lists",
                            "topology",
                        )
                    )
                    break
                owner[key] = rep.name
    return findings


def group_profiles(spec: SiteSpec, replicas: tuple[ReplicaPlan, ...]) -> list[Finding]:
    first: dict[str, ReplicaPlan] = {}
    index = {r.name: i for i, r in enumerate(spec.serving.replicas)}
    findings = []
    for rep in replicas:
        ref = first.setdefault(rep.group, rep)
        if ref.profile != rep.profile:
            findings.append(
                error(
                    ("serving", "replicas", index[rep.name], "group"),
                    f"replica '{rep.name}' "
                    f"({rep.profile}) and '{ref.name}' ({ref.profile}) are in group '{rep.group}' but "
                    "use different profiles",
                    "put them in different groups",
                    "topology",
                )
            )
    return findings
