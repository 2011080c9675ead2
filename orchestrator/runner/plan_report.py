"""What a check run (`orchestrator plan`) found, per phase and host: the changes an apply would make, and the
hosts whose answer is not known (plain data, JSON-ready).

Per phase and host, one state:
- changes: the phase would change something (its Change records);
- unchanged: the host matches the spec for this phase;
- unknown: check mode could not evaluate the phase on the host because an earlier phase would still change
  it (a bare host has no driver yet, so the host and network phases cannot read the NPUs): the host failed
  in check mode after an earlier phase reported changes on it, or was left out of the phase for that
  reason. Said as "unknown until <phase> is applied"; not a failure;
- failed / unreachable: the check itself failed on a host no earlier phase would change (a real problem);
- left_out / not_run: an earlier phase failed on the host, or stopped the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orchestrator.runner.changes import Change
from orchestrator.runner.model import PhaseResult, PhaseStatus, Run

CHANGES, UNCHANGED, UNKNOWN = "changes", "unchanged", "unknown"
FAILED, UNREACHABLE, LEFT_OUT, NOT_RUN = "failed", "unreachable", "left_out", "not_run"


@dataclass
class HostPlan:
    state: str
    note: str = ""
    changes: list[Change] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"state": self.state, "note": self.note, "changes": len(self.changes)}


@dataclass
class PhasePlan:
    name: str
    status: str  # the PhaseResult's status
    note: str
    hosts: dict[str, HostPlan]
    changes: list[Change]

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "note": self.note,
            "hosts": {h: p.as_dict() for h, p in sorted(self.hosts.items())},
            "changes": [c.as_dict() for c in self.changes],
        }


@dataclass
class PlanReport:
    run: Run
    phases: list[PhasePlan]

    @property
    def changes(self) -> list[Change]:
        return [c for p in self.phases for c in p.changes]

    def hosts_in(self, state: str) -> dict[str, str]:
        """host -> the first phase where it is in ``state``."""
        out: dict[str, str] = {}
        for p in self.phases:
            for h, hp in sorted(p.hosts.items()):
                if hp.state == state:
                    out.setdefault(h, p.name)
        return out

    @property
    def result(self) -> str:
        """interrupted > failed > unreachable > ok (as an apply's): a failed check needs a person."""
        if self.run.interrupted:
            return "interrupted"
        if self.hosts_in(FAILED) or any(p.status == PhaseStatus.ERROR for p in self.phases):
            return "failed"
        if self.hosts_in(UNREACHABLE):
            return "unreachable"
        return "ok"

    def as_dict(self) -> dict[str, Any]:
        changes = self.changes
        hosts = sorted({c.host for c in changes})
        return {
            "run_id": self.run.run_id,
            "site": self.run.site,
            "result": self.result,
            "changed": bool(changes),
            "summary": {
                "changes": len(changes),
                "hosts_with_changes": hosts,
                "phases_with_changes": list(dict.fromkeys(c.phase for c in changes)),
                "reboot_needed": sorted({c.host for c in changes if c.reboot}),
                "unknown": self.hosts_in(UNKNOWN),
                "failed": self.hosts_in(FAILED),
                "unreachable": self.hosts_in(UNREACHABLE),
            },
            "phases": [p.as_dict() for p in self.phases],
            "changes": [c.as_dict() for c in changes],
            "failures": [f.as_dict() for f in self.run.failures],
            "artifacts": self.run.artifacts,
        }


def _phase(result: PhaseResult, pending: dict[str, str]) -> PhasePlan:
    """pending: host -> the first earlier phase that would change it (updated with this phase's)."""
    hosts: dict[str, HostPlan] = {}
    failures = {f.host: f for f in result.failures if f.host}
    for h in sorted(result.hosts):
        mine = [c for c in result.changes if c.host == h]
        f = failures.get(h)
        if f is not None and not f.unreachable and h in pending:
            why = f"unknown until {pending[h]} is applied (check mode stopped at: {f.task or 'the phase'})"
            hosts[h] = HostPlan(UNKNOWN, why, mine)
        elif f is not None:
            note = "; ".join(line.strip() for line in f.message.splitlines() if line.strip())
            hosts[h] = HostPlan(UNREACHABLE if f.unreachable else FAILED, note, mine)
        elif h in result.unfinished:
            hosts[h] = HostPlan(NOT_RUN, f"did not finish the phase ({result.status})", mine)
        else:
            hosts[h] = HostPlan(CHANGES if mine else UNCHANGED, "", mine)
    for h, why in sorted(result.excluded.items()):
        if h in pending and not why.startswith("unreachable"):
            hosts[h] = HostPlan(UNKNOWN, f"unknown until {pending[h]} is applied ({why})")
        else:
            hosts[h] = HostPlan(LEFT_OUT, why)
    # changes of hosts the recap does not list (should not happen: a change counts on its play's host)
    for c in result.changes:
        hosts.setdefault(c.host, HostPlan(CHANGES, "", []))
        if c not in hosts[c.host].changes:
            hosts[c.host].changes.append(c)
    for h, hp in hosts.items():
        if hp.changes or hp.state == UNKNOWN:
            pending.setdefault(h, result.name)
    status = str(result.status)
    return PhasePlan(result.name, status, result.note, hosts, list(result.changes))


def plan_report(run: Run) -> PlanReport:
    pending: dict[str, str] = {}
    phases = []
    for result in run.phases:
        if result.status is PhaseStatus.NOT_IMPLEMENTED:
            continue
        phases.append(_phase(result, pending))
    return PlanReport(run, phases)
