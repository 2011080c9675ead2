"""ansible-runner events of one phase job -> live progress and the phase's result.

Counts come from `playbook_on_stats` (Ansible's own recap): `runner_on_failed` also fires for a task whose
failure a `rescue` handles, or that ignore_errors covers (ansible-runner #726), so live counts are only a
preview, and a host's failure is the last unhandled failed event of a host the recap counts as failed.
The phase playbooks end with a play that records, through set_stats, every host that reached the end
(playbooks/phase_done.yml); a host the recap saw that neither finished nor failed was stopped early.
Every changed task result becomes a Change (runner/change_events.py): what a check run would change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from orchestrator.runner.change_events import OK_EVENTS, changes_of
from orchestrator.runner.changes import Change
from orchestrator.runner.messages import failure_message, strip_ansi, tail
from orchestrator.runner.model import COUNTS, Failure, HostStats, PhaseResult, PhaseStatus
from orchestrator.runner.rollout import summary as rollout_summary

DONE_STAT = "orchestrator_phase_done"
WARNINGS_STAT = "orchestrator_warnings"  # set_stats list of "host: what was skipped and why" lines
"""The set_stats key of playbooks/phase_done.yml: the hosts that finished the phase."""

_RESULT_EVENTS = {
    "runner_on_ok": "ok",
    "runner_on_failed": "failed",
    "runner_on_unreachable": "unreachable",
    "runner_on_skipped": "skipped",
    "runner_on_async_ok": "ok",
    "runner_on_async_failed": "failed",
}
OUTPUT_TAIL = 15


@dataclass
class HostLive:
    """What a host is doing right now (for the progress display)."""

    state: str = "waiting"  # waiting, running, ok, failed, unreachable
    task: str = ""
    counts: HostStats = field(default_factory=HostStats)
    first: datetime | None = None
    last: datetime | None = None


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


@dataclass
class PhaseTracker:
    """Feed it every event of one job (`handle`); read progress from it; `result` at the end."""

    phase: str
    hosts: dict[str, HostLive] = field(default_factory=dict)
    tasks_seen: int = 0
    current_task: str = ""
    play: str = ""
    stats: dict[str, Any] | None = None
    _failed: dict[str, Failure] = field(default_factory=dict)
    _unreachable: dict[str, Failure] = field(default_factory=dict)
    _output: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)  # changed task results, in event order

    @property
    def tasks_done(self) -> int:
        """Tasks finished so far (the total is unknown until the playbook ends)."""
        running = any(h.state == "running" for h in self.hosts.values())
        return self.tasks_seen - 1 if running and self.tasks_seen else self.tasks_seen

    def host(self, name: str) -> HostLive:
        return self.hosts.setdefault(name, HostLive())

    def handle(self, event: Mapping[str, Any]) -> bool:
        """ansible-runner's event_handler: True keeps the event in the artifacts."""
        kind = str(event.get("event", ""))
        data = event.get("event_data") or {}
        stdout = event.get("stdout")
        if isinstance(stdout, str) and stdout.strip():
            self._output = (self._output + strip_ansi(stdout).replace("\r\n", "\n").splitlines())[
                -OUTPUT_TAIL:
            ]
        if kind == "playbook_on_play_start":
            self.play = str(data.get("name") or data.get("play") or "")
        elif kind == "playbook_on_task_start":
            self.tasks_seen += 1
            self.current_task = str(data.get("task") or data.get("name") or "")
        elif kind == "runner_on_start":
            live = self.host(str(data.get("host")))
            live.state, live.task = "running", str(data.get("task") or "")
        elif kind in _RESULT_EVENTS:
            self._result(_RESULT_EVENTS[kind], data)
        if kind in OK_EVENTS:
            self.changes += changes_of(self.phase, event)
        elif kind == "playbook_on_stats":
            self.stats = dict(data)
        return True

    def _result(self, outcome: str, data: Mapping[str, Any]) -> None:
        name = str(data.get("host"))
        live = self.host(name)
        res = data.get("res") if isinstance(data.get("res"), Mapping) else {}
        task = str(data.get("task") or "")
        for stamp in (_time(data.get("start")), _time(data.get("end"))):
            if stamp is not None:
                live.first = stamp if live.first is None else min(live.first, stamp)
                live.last = stamp if live.last is None else max(live.last, stamp)
        handled = bool(data.get("ignore_errors"))
        if outcome == "failed" and handled:
            live.counts.ignored += 1
            outcome = "ok"
        setattr(live.counts, outcome, getattr(live.counts, outcome) + 1)
        if outcome == "ok" and isinstance(res, Mapping) and res.get("changed"):
            live.counts.changed += 1
        if outcome == "failed":
            self._failed[name] = Failure(self.phase, name, task, failure_message(res))
        elif outcome == "unreachable":
            self._unreachable[name] = Failure(self.phase, name, task, failure_message(res), unreachable=True)
        if outcome in ("failed", "unreachable"):
            live.state = outcome
        elif live.state not in ("failed", "unreachable"):
            live.state = "ok"

    def note_output(self, text: str) -> None:
        """Lines from outside the playbook (a remote worker's SSH session) for the failure message."""
        self._output = (self._output + text.splitlines())[-OUTPUT_TAIL:]

    def output_tail(self) -> str:
        return tail("\n".join(self._output), OUTPUT_TAIL)

    def done_hosts(self) -> set[str]:
        data = (self.stats or {}).get("artifact_data") or {}
        hosts = data.get(DONE_STAT) if isinstance(data, Mapping) else None
        return {str(h) for h in hosts} if isinstance(hosts, list) else set()

    def _recap(self) -> dict[str, HostStats]:
        """Per-host counts from the recap (playbook_on_stats); live counts when there is none."""
        if self.stats is None:
            return {h: live.counts for h, live in self.hosts.items()}
        keys = {"dark": "unreachable", "failures": "failed"}
        out: dict[str, HostStats] = {}
        for stat_key in ("ok", "changed", "dark", "failures", "skipped", "rescued", "ignored", "processed"):
            per_host = self.stats.get(stat_key) or {}
            for h, n in per_host.items():
                stats = out.setdefault(str(h), HostStats())
                field_name = keys.get(stat_key, stat_key)
                if field_name in COUNTS:
                    setattr(stats, field_name, int(n))
        return out

    def result(self, *, canceled: bool, rc: int | None, seconds: float) -> PhaseResult:
        hosts = self._recap()
        for h, stats in hosts.items():
            live = self.hosts.get(h)
            if live is not None and live.first is not None and live.last is not None:
                stats.seconds = (live.last - live.first).total_seconds()
        gone, failed = self._unreachable, self._failed
        failures = [gone[h] for h in sorted(hosts) if hosts[h].unreachable and h in gone]
        failures += [failed[h] for h in sorted(hosts) if hosts[h].failed and h in failed]
        for h in sorted(hosts):  # the recap counts a failure the events did not show (should not happen)
            if hosts[h].failed and h not in self._failed:
                failures.append(Failure(self.phase, h, "", "failed (see the phase's artifacts)"))
        done = self.done_hosts()
        unfinished = tuple(
            h for h in sorted(hosts) if h not in done and not hosts[h].failed and not hosts[h].unreachable
        )
        result = PhaseResult(self.phase, PhaseStatus.OK, hosts, failures, seconds=seconds)
        result.changes = list(self.changes)
        artifact_data = (self.stats or {}).get("artifact_data")
        result.rollout = rollout_summary(artifact_data if isinstance(artifact_data, Mapping) else None)
        said = artifact_data.get(WARNINGS_STAT) if isinstance(artifact_data, Mapping) else None
        if isinstance(said, list):
            result.warnings = [str(w) for w in said]
        if canceled:
            result.status = PhaseStatus.INTERRUPTED
            result.unfinished = tuple(h for h in sorted(hosts) if h not in done)
        elif self.stats is None:
            result.status = PhaseStatus.ERROR
            result.failures.append(
                Failure(self.phase, "", "ansible-playbook", self.output_tail() or f"exited with rc {rc}")
            )
        elif unfinished:
            result.status = PhaseStatus.STOPPED
            result.unfinished = unfinished
        elif failures:
            result.status = PhaseStatus.FAILED
        return result
