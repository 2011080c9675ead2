"""The live checks in the order they are reported, and running them on the facts of every host."""

from __future__ import annotations

from collections.abc import Mapping

from orchestrator.doctor import live_devices, live_health, live_logs, live_network, live_pci, live_versions
from orchestrator.doctor.live_finding import Facts, Finding, LiveCheck

CHECKS: tuple[LiveCheck, ...] = (
    live_pci.CHECK,
    live_versions.FILES,
    live_versions.VERSIONS,
    live_versions.PAIR,
    live_health.CHECK,
    live_network.CHECK,
    live_devices.CHECK,
    live_logs.CHECK,
)


def host_findings(host: str, facts: Facts) -> list[Finding]:
    return [f for c in CHECKS for f in c.run(host, facts)]


def findings(facts: Mapping[str, Facts]) -> list[Finding]:
    """Every check on every host, hosts in name order."""
    return [f for host in sorted(facts) for f in host_findings(host, facts[host])]
