"""Run a read-only playbook whose plays report what they read through `set_stats` (status, doctor), in a
private data dir of its own that is removed afterwards, and return the collected stats and the failures."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from orchestrator.runner.cancel import Cancel
from orchestrator.runner.events import PhaseTracker
from orchestrator.runner.job import JobSpec, run_job
from orchestrator.runner.model import PhaseResult
from orchestrator.runner.project import Content


def run_read_job(
    playbook: str,
    content: Content,
    inventory_dir: Path,
    facts_dir: Path,
    hosts: Sequence[str],
) -> tuple[dict[str, Any], PhaseResult]:
    """playbooks/<playbook>.yml on `hosts` -> (playbook_on_stats artifact_data, the job result)."""
    found: dict[str, Any] = {}

    def on_event(tracker: PhaseTracker, event: Mapping[str, Any]) -> None:
        if event.get("event") == "playbook_on_stats":
            data = (event.get("event_data") or {}).get("artifact_data")
            if isinstance(data, Mapping):
                found.update(data)

    with tempfile.TemporaryDirectory(prefix=f"orchestrator-{playbook}-") as tmp:
        job = JobSpec(
            phase=playbook,
            content=content,
            inventory_dir=inventory_dir,
            facts_dir=facts_dir,
            private_dir=Path(tmp) / "job",
            limit=tuple(hosts),
        )
        result = run_job(job, on_event=on_event, cancel=Cancel())
    return found, result
