"""The latest recorded run of each phase (what `orchestrator status` shows): among the site's applies and
rollbacks that changed hosts (not --check), newest first, the first that ran the phase (a phase that was
skipped, not run or not implemented in a run did not run there)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from orchestrator.history.db import RunRecord

DID_NOT_RUN = {"skipped", "not_run", "not_implemented"}


@dataclass(frozen=True)
class PhaseRun:
    phase: str
    run: RunRecord | None  # None: no recorded run ran this phase
    status: str = ""  # the phase's status in that run

    def as_dict(self) -> dict[str, Any]:
        r = self.run
        return {
            "phase": self.phase,
            "run_id": r.run_id if r else None,
            "kind": r.kind if r else None,
            "status": self.status or None,
            "run_result": r.shown_result if r else None,
            "started": r.started if r else None,
            "ended": r.ended if r else None,
        }


def last_per_phase(records: Iterable[RunRecord], phases: Sequence[str]) -> list[PhaseRun]:
    """`records` newest first (db.runs); one entry per phase, in the order of `phases`."""
    found: dict[str, PhaseRun] = {}
    for rec in records:
        if rec.kind not in ("apply", "rollback", "heal") or rec.check_mode:
            continue
        for p in rec.phases:
            name, status = str(p.get("name")), str(p.get("status"))
            if name not in found and status not in DID_NOT_RUN:
                found[name] = PhaseRun(name, rec, status)
    return [found.get(name, PhaseRun(name, None)) for name in phases]
