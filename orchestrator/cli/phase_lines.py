"""The phases for `phases` and `examples`: name, hosts and what the phase does there, wrapped to the
console's width; or one JSON object."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from rich.console import Console

from orchestrator.cli.output import fill
from orchestrator.cli.sites import project_root
from orchestrator.planning.phases import Phase
from orchestrator.runner.project import ContentMissing, content


@cache
def _implemented(phase: str) -> bool:
    try:
        return content(project_root()).implemented(phase)
    except ContentMissing:
        return False


def phase_head(ph: Phase) -> str:
    """'drivers    [a2-01, a2-02]', and '(not implemented yet: no playbooks/x.yml)' while its playbook is
    missing."""
    hosts = ", ".join(ph.hosts) if ph.hosts else "skipped: no host"
    missing = "" if _implemented(ph.name) else f" (not implemented yet: no playbooks/{ph.playbook})"
    return f"{ph.name:<10} [{hosts}]{missing}"


def print_phases(out: Console, phases: Sequence[Phase], indent: str = "") -> None:
    """Numbered, in apply order: the head line, then what the phase does, indented under it."""
    for i, ph in enumerate(phases, 1):
        out.print(fill(f"{indent}{i:>2}. {phase_head(ph)}", out.width), markup=False, highlight=False)
        out.print(fill(f"{indent}      {ph.summary}", out.width, hang=0), markup=False, highlight=False)


def phases_json(site: str, phases: Sequence[Phase]) -> dict[str, Any]:
    """`phases --format json`: the phases in apply order, with their hosts (empty: skipped)."""
    return {
        "site": site,
        "phases": [
            {
                "name": ph.name,
                "playbook": f"playbooks/{ph.playbook}",
                "hosts": list(ph.hosts),
                "skipped": ph.skipped,
                "implemented": _implemented(ph.name),
                "summary": ph.summary,
            }
            for ph in phases
        ],
    }
