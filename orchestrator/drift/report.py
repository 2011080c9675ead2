"""A check-mode run (`apply --check --diff` of every phase) read as drift: one cell per host and phase, the
totals, and the exit code schedulers act on.

Each cell has one state, decided in this order:
- not_run: the host was never checked in this phase: the phase did not run (an earlier phase stopped the
  run, no playbook yet, no host selected), or the host was left out because it failed or was unreachable in
  an earlier phase, or the run was interrupted before the host finished the phase;
- unreachable: Ansible could not reach the host (SSH);
- failed: a task failed on the host, or the playbook stopped before the host finished the phase (the check
  could not tell whether the host is in sync);
- drift: an apply would change something on the host (the phase's changes for the host, or at least one
  changed task in the recap when no change record was collected);
- in_sync: the host finished the phase and nothing would change.

Exit code (the rule `orchestrator drift` documents):
- 2 invalid spec: validation refused the spec; nothing ran (decided by the CLI before a report exists);
- 130 the run was interrupted (SIGINT / SIGTERM): the report is incomplete;
- 3 drift found, or a check failed on some host (both need a person). Drift wins over unreachable hosts:
  a run that found drift on one host while another was unreachable exits 3, and the report lists both;
- 4 some hosts were unreachable and no drift (and no failure) was found on the hosts that were checked;
- 0 every checked host is in sync (cells that were not run because no host was selected do not count).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from orchestrator.runner.changes import Change
from orchestrator.runner.model import Failure, HostStats, PhaseResult, PhaseStatus, Run

EXIT_IN_SYNC = 0
EXIT_INVALID_SPEC = 2
EXIT_DRIFT = 3
EXIT_UNREACHABLE = 4
EXIT_INTERRUPTED = 130


class CellState(StrEnum):
    IN_SYNC = "in_sync"
    DRIFT = "drift"
    UNREACHABLE = "unreachable"
    FAILED = "failed"
    NOT_RUN = "not_run"


STATES: tuple[CellState, ...] = tuple(CellState)


@dataclass(frozen=True)
class Cell:
    """One host in one phase."""

    phase: str
    host: str
    state: CellState
    changes: tuple[Change, ...] = ()
    changed_tasks: int = 0  # the recap's changed count (a change record per task result may be missing)
    message: str = ""  # why it failed / was unreachable / was not run
    seconds: float = 0.0

    @property
    def change_count(self) -> int:
        """How many things would change: the change records, else the recap's changed tasks."""
        return len(self.changes) or self.changed_tasks

    def as_dict(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "host": self.host,
            "state": str(self.state),
            "change_count": self.change_count,
            "changes": [c.as_dict() for c in self.changes],
            "message": self.message,
            "seconds": round(self.seconds, 1),
        }


@dataclass(frozen=True)
class DriftReport:
    site: str
    run_id: str
    finished: datetime
    seconds: float
    cells: tuple[Cell, ...]
    interrupted: bool = False
    artifacts: str = ""
    phases: tuple[str, ...] = field(default=())

    def with_state(self, state: CellState) -> list[Cell]:
        return [c for c in self.cells if c.state is state]

    @property
    def totals(self) -> dict[str, int]:
        return {str(s): len(self.with_state(s)) for s in STATES}

    @property
    def hosts(self) -> list[str]:
        return sorted({c.host for c in self.cells})

    @property
    def drifted_hosts(self) -> list[str]:
        return sorted({c.host for c in self.with_state(CellState.DRIFT)})

    @property
    def unreachable_hosts(self) -> list[str]:
        return sorted({c.host for c in self.with_state(CellState.UNREACHABLE)})

    @property
    def failed_hosts(self) -> list[str]:
        return sorted({c.host for c in self.with_state(CellState.FAILED)})

    @property
    def exit_code(self) -> int:
        """The module's rule: interrupted 130 > drift or failed 3 > unreachable 4 > in sync 0."""
        if self.interrupted:
            return EXIT_INTERRUPTED
        if self.drifted_hosts or self.failed_hosts:
            return EXIT_DRIFT
        if self.unreachable_hosts:
            return EXIT_UNREACHABLE
        return EXIT_IN_SYNC

    @property
    def verdict(self) -> str:
        """One word for people and dashboards."""
        return {
            EXIT_IN_SYNC: "in_sync",
            EXIT_DRIFT: "drift" if self.drifted_hosts else "failed",
            EXIT_UNREACHABLE: "unreachable",
            EXIT_INTERRUPTED: "interrupted",
        }[self.exit_code]

    def as_dict(self) -> dict[str, Any]:
        return {
            "site": self.site,
            "run_id": self.run_id,
            "finished": self.finished.isoformat(),
            "seconds": round(self.seconds, 1),
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "interrupted": self.interrupted,
            "phases": list(self.phases),
            "totals": self.totals,
            "drifted_hosts": self.drifted_hosts,
            "unreachable_hosts": self.unreachable_hosts,
            "failed_hosts": self.failed_hosts,
            "cells": [c.as_dict() for c in self.cells],
            "artifacts": self.artifacts,
        }


def _message(failures: Sequence[Failure], host: str) -> str:
    for f in failures:
        if f.host == host:
            return f"{f.task}: {f.message}" if f.task else f.message
    whole = [f for f in failures if not f.host]  # the phase could not run at all
    return whole[0].message if whole else ""


def _cell(p: PhaseResult, host: str, stats: HostStats | None, changes: tuple[Change, ...]) -> Cell:
    def cell(state: CellState, message: str = "", with_changes: bool = False) -> Cell:
        return Cell(
            p.name,
            host,
            state,
            changes=changes if with_changes else (),
            changed_tasks=stats.changed if stats and with_changes else 0,
            message=message,
            seconds=stats.seconds if stats else 0.0,
        )

    if host in p.excluded:
        return cell(CellState.NOT_RUN, f"left out: {p.excluded[host]}")
    if p.status in (PhaseStatus.NOT_RUN, PhaseStatus.NOT_IMPLEMENTED, PhaseStatus.SKIPPED):
        return cell(CellState.NOT_RUN, p.note or str(p.status))
    if p.status is PhaseStatus.INTERRUPTED and (stats is None or host in p.unfinished):
        return cell(CellState.NOT_RUN, "the run was interrupted before this host finished the phase")
    if stats is None:
        if p.status is PhaseStatus.ERROR:
            return cell(CellState.FAILED, _message(p.failures, host) or "the phase could not run")
        return cell(CellState.NOT_RUN, "the phase reported no result for this host")
    if stats.unreachable:
        return cell(CellState.UNREACHABLE, _message([f for f in p.failures if f.unreachable], host), True)
    if stats.failed or host in p.unfinished:
        msg = _message([f for f in p.failures if not f.unreachable], host)
        return cell(CellState.FAILED, msg or "the playbook stopped before this host finished the phase", True)
    if changes or stats.changed:
        return cell(CellState.DRIFT, with_changes=True)
    return cell(CellState.IN_SYNC)


def build_report(
    run: Run,
    *,
    hosts_by_phase: Mapping[str, Sequence[str]] | None = None,
    seconds: float = 0.0,
    finished: datetime | None = None,
) -> DriftReport:
    """The drift report of a check-mode run. hosts_by_phase: the hosts each phase was meant to check (the
    plan's hosts of the phase within --limit), so that a phase that did not run still lists its hosts."""
    if not run.check:
        raise ValueError("a drift report needs a check-mode run (ApplyRequest.check=True)")
    cells: list[Cell] = []
    for p in run.phases:
        planned = list((hosts_by_phase or {}).get(p.name, ()))
        hosts = list(dict.fromkeys([*planned, *sorted(p.hosts), *sorted(p.excluded), *p.unfinished]))
        for host in hosts:
            changes = tuple(c for c in p.changes if c.host == host)
            cells.append(_cell(p, host, p.hosts.get(host), changes))
    return DriftReport(
        site=run.site,
        run_id=run.run_id,
        finished=finished or datetime.now(UTC),
        seconds=seconds,
        cells=tuple(cells),
        interrupted=run.interrupted,
        artifacts=run.artifacts,
        phases=tuple(p.name for p in run.phases),
    )


def change_line(c: Change) -> str:
    """One line a person reads: the task, its loop item, what would change, and whether it needs a reboot."""
    line = c.task or c.action or str(c.kind)
    if c.item:
        line += f" [{c.item}]"
    if c.detail:
        line += f": {c.detail}"
    return line + (" (takes effect after a reboot)" if c.reboot else "")


def cell_lines(cell: Cell) -> list[str]:
    """What a cell says beyond its state: the changes of a drifted cell, else its message."""
    if cell.state is CellState.DRIFT:
        lines = [change_line(c) for c in cell.changes]
        return lines or [f"{cell.changed_tasks} task(s) would change (details in the run's artifacts)"]
    return [cell.message] if cell.message else []
