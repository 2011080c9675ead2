"""One line per phase for `phases` and `examples`: name, hosts, and the issue that brings its playbook."""

from __future__ import annotations

from functools import cache

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
    """'drivers    [a2-01, a2-02] (issue 8)'; '(issue 9, not implemented yet)' until its playbook exists."""
    hosts = ", ".join(ph.hosts) if ph.hosts else "skipped"
    mark = f"issue {ph.issue}" + ("" if _implemented(ph.name) else ", not implemented yet")
    return f"{ph.name:<10} [{hosts}] ({mark})"
