"""What `orchestrator apply` shows: progress while a phase runs (rich Live on a terminal, plain lines
otherwise), then a table per phase, the failures and the command that resumes."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from orchestrator.cli.output import say
from orchestrator.runner.events import PhaseTracker
from orchestrator.runner.messages import strip_ansi
from orchestrator.runner.model import PhaseResult, PhaseStatus, Run
from orchestrator.runner.rollout import gate_lines, startup_line

_STYLE = {"failed": "red", "unreachable": "magenta", "running": "cyan", "ok": "green", "waiting": "dim"}


def _first_line(text: str) -> str:
    return strip_ansi(text).strip().splitlines()[0] if text.strip() else ""


def phase_line(result: PhaseResult) -> str:
    """One line per finished phase."""
    if result.status is PhaseStatus.NOT_IMPLEMENTED:
        return f"== {result.name}: {result.note}"
    head = f"== {result.name}: {str(result.status).replace('_', ' ')}"
    if result.hosts:
        head += f" ({len(result.hosts)} host(s), {result.seconds:.1f} s)"
    extra = [result.note] if result.note else []
    extra += [f"{h} left out ({why})" for h, why in sorted(result.excluded.items())]
    if result.unfinished and result.status is not PhaseStatus.INTERRUPTED:
        extra.append(f"did not finish: {', '.join(result.unfinished)}")
    return head + (": " + "; ".join(extra) if extra else "")


class PlainProgress:
    """Plain lines (CI logs, pipes): phase starts, each task, and every host result that is not plain ok."""

    def __init__(self, out: Console) -> None:
        self.out = out

    def say(self, line: str, style: str | None = None) -> None:
        say(self.out, line, style)

    def phase_started(self, phase: str, hosts: Sequence[str]) -> None:
        self.say(f"== {phase}: {len(hosts)} host(s): {', '.join(hosts)}", "bold")

    def rollout(self, tracker: PhaseTracker, event: Mapping[str, Any]) -> None:
        """The rollout's gates as they pass or fail (batch, replica, gate, seconds), and while a replica
        starts, its phase (a gate call that returned before /health 200: Ansible retries it)."""
        data = event.get("event_data") or {}
        res = data.get("res")
        kinds = ("runner_on_ok", "runner_on_failed", "runner_item_on_ok", "runner_item_on_failed")
        if event.get("event") in kinds and isinstance(res, Mapping):
            for line in gate_lines(res):
                self.say(f"{tracker.phase:<10} {line}", None if "FAILED" not in line else "red")
        elif event.get("event") == "runner_retry" and isinstance(res, Mapping):
            starting = startup_line(res)  # a replica that still starts: its phase from its log
            if starting is not None:
                self.say(f"{tracker.phase:<10} {starting}")

    def progress(self, tracker: PhaseTracker, event: Mapping[str, Any]) -> None:
        self.rollout(tracker, event)
        kind = event.get("event")
        data = event.get("event_data") or {}
        host, task = data.get("host"), data.get("task")
        if kind == "playbook_on_task_start":
            self.say(f"{tracker.phase:<10} task {tracker.tasks_seen}: {tracker.current_task}")
        elif kind == "runner_on_unreachable":
            msg = _first_line(str((data.get("res") or {}).get("msg", "")))
            self.say(f"{tracker.phase:<10} {host}: UNREACHABLE at {task}: {msg}", "magenta")
        elif kind == "runner_on_failed" and not data.get("ignore_errors"):
            msg = _first_line(str((data.get("res") or {}).get("msg", "")))
            self.say(f"{tracker.phase:<10} {host}: failed {task}: {msg}", "red")
        elif kind == "runner_on_ok" and (data.get("res") or {}).get("changed"):
            self.say(f"{tracker.phase:<10} {host}: changed {task}", "yellow")

    def phase_finished(self, result: PhaseResult) -> None:
        self.say(phase_line(result), "red" if result.failures else None)


class LiveProgress(PlainProgress):
    """A terminal: a live table of the hosts of the running phase (tasks done / seen so far, the task
    each host runs, its counts so far); one line per phase once it ends."""

    def __init__(self, out: Console) -> None:
        super().__init__(out)
        self.live: Live | None = None
        self._last = 0.0

    def phase_started(self, phase: str, hosts: Sequence[str]) -> None:
        self.live = Live(console=self.out, refresh_per_second=4, transient=True)
        self.live.start()
        tracker = PhaseTracker(phase)
        for h in hosts:
            tracker.host(h)
        self.live.update(self.render(tracker))

    def progress(self, tracker: PhaseTracker, event: Mapping[str, Any]) -> None:
        self.rollout(tracker, event)  # printed above the live table
        now = time.monotonic()
        if self.live is None or now - self._last < 0.1:
            return
        self._last = now
        self.live.update(self.render(tracker))  # a snapshot: the refresh thread never reads the tracker

    @staticmethod
    def render(tracker: PhaseTracker) -> Group:
        head = Text(
            f"{tracker.phase}: {tracker.tasks_done} task(s) done, {tracker.tasks_seen} seen so far; "
            f"now: {tracker.current_task or '-'}",
            style="bold",
        )
        table = Table(box=None, pad_edge=False)
        for col in ("host", "state", "task", "ok", "changed", "failed", "unreachable", "skipped"):
            table.add_column(
                col, justify="right" if col not in ("host", "state", "task") else "left", overflow="fold"
            )
        for name, live in sorted(tracker.hosts.items()):
            c = live.counts
            table.add_row(
                name,
                Text(live.state, style=_STYLE.get(live.state, "")),
                Text(live.task if live.state == "running" else ""),  # task names are not markup
                *(str(v) for v in (c.ok, c.changed, c.failed, c.unreachable, c.skipped)),
            )
        return Group(head, table)

    def phase_finished(self, result: PhaseResult) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None
        super().phase_finished(result)


def summary_tables(out: Console, run: Run) -> None:
    """Per phase: ok / changed / failed / unreachable / skipped / seconds per host."""
    for p in run.phases:
        if not p.hosts:
            say(out, phase_line(p))
            continue
        table = Table(title=phase_line(p)[3:], title_justify="left", title_style="bold")
        for col in ("host", "ok", "changed", "failed", "unreachable", "skipped", "seconds"):
            table.add_column(col, justify="left" if col == "host" else "right", overflow="fold")
        for h, s in sorted(p.hosts.items()):
            style = "red" if s.failed else "magenta" if s.unreachable else None
            cells = (s.ok, s.changed, s.failed, s.unreachable, s.skipped)
            table.add_row(h, *(str(v) for v in cells), f"{s.seconds:.1f}", style=style)
        out.print(table)


def failure_lines(run: Run) -> list[str]:
    lines = []
    for f in run.failures:
        where = f"{f.host} in {f.phase}" if f.host else f"phase {f.phase}"
        kind = "UNREACHABLE" if f.unreachable else "FAILED"
        task = f', task "{f.task}"' if f.task else ""
        body = f.message.replace("\n", "\n    ")
        lines.append(f"{kind}: {where}{task}:\n    {body}")
    return lines


def warning_lines(run: Run) -> list[str]:
    return [f"WARNING: {p.name}: {w}" for p in run.phases for w in p.warnings]


def print_outcome(out: Console, run: Run, exit_code: int) -> None:
    summary_tables(out, run)
    for line in warning_lines(run):
        say(out, line, style="yellow")
    for line in failure_lines(run):
        say(out, line, style="red")
    if run.resume:
        say(out, f"Resume with: {run.resume}", style="bold")
    say(out, f"run {run.run_id}: {run.result} (exit {exit_code}); artifacts in {run.artifacts}")
