"""What an apply produced: per-host counts per phase, failures, the run's result (plain data, JSON-ready)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from orchestrator.runner.changes import Change

COUNTS = ("ok", "changed", "failed", "unreachable", "skipped", "rescued", "ignored")


class PhaseStatus(StrEnum):
    OK = "ok"  # every host of the phase finished it
    FAILED = "failed"  # some hosts failed or were unreachable; the others finished it
    STOPPED = "stopped"  # the playbook stopped early (any_errors_fatal, max_fail_percentage): hosts left
    ERROR = "error"  # ansible-playbook could not run the playbook (no stats)
    INTERRUPTED = "interrupted"  # SIGINT / SIGTERM
    SKIPPED = "skipped"  # nothing to do: no host of the phase is selected
    NOT_RUN = "not_run"  # an earlier phase stopped the apply
    NOT_IMPLEMENTED = "not_implemented"  # playbooks/<phase>.yml is missing from the checkout


class RunResult(StrEnum):
    OK = "ok"
    FAILED = "failed"
    UNREACHABLE = "unreachable"
    INTERRUPTED = "interrupted"


@dataclass
class HostStats:
    ok: int = 0
    changed: int = 0
    failed: int = 0
    unreachable: int = 0
    skipped: int = 0
    rescued: int = 0
    ignored: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: getattr(self, k) for k in COUNTS}
        out["seconds"] = round(self.seconds, 1)
        return out


@dataclass(frozen=True)
class Failure:
    phase: str
    host: str  # "" when the phase could not run at all
    task: str
    message: str
    unreachable: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "host": self.host or None,
            "task": self.task,
            "message": self.message,
            "unreachable": self.unreachable,
        }


@dataclass
class PhaseResult:
    name: str
    status: PhaseStatus
    hosts: dict[str, HostStats] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)
    excluded: dict[str, str] = field(default_factory=dict)  # host -> why it was left out of this phase
    unfinished: tuple[str, ...] = ()  # hosts the playbook stopped before they finished (STOPPED)
    seconds: float = 0.0
    note: str = ""
    artifacts: str = ""  # the job's private data dir
    rollout: dict[str, Any] | None = None  # the serve phase's rolling update (runner/rollout.py)
    changes: list[Change] = field(default_factory=list)  # changed task results (what plan / drift report)
    warnings: list[str] = field(default_factory=list)  # what a role skipped and why (set_stats warnings)

    @property
    def failed_hosts(self) -> set[str]:
        return {h for h, s in self.hosts.items() if s.failed}

    @property
    def unreachable_hosts(self) -> set[str]:
        return {h for h, s in self.hosts.items() if s.unreachable}

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": str(self.status),
            "seconds": round(self.seconds, 1),
            "hosts": {h: s.as_dict() for h, s in sorted(self.hosts.items())},
            "excluded": dict(sorted(self.excluded.items())),
            "unfinished": list(self.unfinished),
            "note": self.note,
            "changes": [c.as_dict() for c in self.changes],
            "warnings": list(self.warnings),
        }


@dataclass
class Run:
    run_id: str
    site: str
    check: bool
    phases: list[PhaseResult] = field(default_factory=list)
    interrupted: bool = False
    resume: str | None = None
    artifacts: str = ""

    @property
    def failures(self) -> list[Failure]:
        return [f for p in self.phases for f in p.failures]

    @property
    def result(self) -> RunResult:
        """interrupted > failed > unreachable > ok: a host that failed needs a person, even when others
        were only unreachable (which a retry may fix)."""
        if self.interrupted:
            return RunResult.INTERRUPTED
        if any(not f.unreachable for f in self.failures) or any(
            p.status in (PhaseStatus.STOPPED, PhaseStatus.ERROR) for p in self.phases
        ):
            return RunResult.FAILED
        if self.failures:
            return RunResult.UNREACHABLE
        return RunResult.OK

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "site": self.site,
            "result": str(self.result),
            "check": self.check,
            "phases": [p.as_dict() for p in self.phases],
            "failures": [f.as_dict() for f in self.failures],
            "resume": self.resume,
            "artifacts": self.artifacts,
            "rollout": next((p.rollout for p in self.phases if p.rollout is not None), None),
        }
