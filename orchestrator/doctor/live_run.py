"""Gather the live doctor's facts: playbooks/doctor.yml (read-only) through ansible-runner, in a private
data dir of its own that is removed afterwards (like `orchestrator status`, orchestrator/status/releases.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.runner.project import Content
from orchestrator.runner.read_job import run_read_job

PLAYBOOK = "doctor"
STAT = "orchestrator_doctor_facts"


@dataclass
class Gathered:
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)  # host -> facts
    unreachable: dict[str, str] = field(default_factory=dict)  # host -> message
    failed: dict[str, str] = field(default_factory=dict)  # host -> message


def parse(stats: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """artifact_data of playbook_on_stats -> host -> facts."""
    per_host = (stats or {}).get(STAT)
    if not isinstance(per_host, Mapping):
        return {}
    return {str(h): dict(d) for h, d in per_host.items() if isinstance(d, Mapping)}


def gather(content: Content, inventory_dir: Path, facts_dir: Path, hosts: Sequence[str]) -> Gathered:
    """Run playbooks/doctor.yml on `hosts` (NPU servers) and collect what it read."""
    found, result = run_read_job(PLAYBOOK, content, inventory_dir, facts_dir, hosts)
    out = Gathered(facts=parse(found))
    for f in result.failures:
        if f.host not in out.facts or f.unreachable:
            (out.unreachable if f.unreachable else out.failed)[f.host or "?"] = f.message
    return out
