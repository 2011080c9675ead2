"""Recording a run in the history: a row inserted when it starts ("running", with the pid), updated after
every phase and at the end.

    with recorded_run("plan", site, root, spec_path=..., content_root=..., check=True) as rec:
        run = apply(req, rec.observer(view), cancel, run_id=rec.run_id)
        rec.finish_run(run, exit_code)

`lock=True` also holds the site's lock for the block (LockHeld when another run has it); apply and
rollback take it. A block that ends without finish() is recorded too: interrupted on KeyboardInterrupt,
else "error" (the exception's class, never its message: it may quote secrets). History trouble (a
database that cannot be written) is a warning on `say`: it never stops a run.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from orchestrator.history import db
from orchestrator.history.guard import site_lock
from orchestrator.history.provenance import (
    process_start,
    project_version,
    safe_argv,
    spec_sha256,
    this_host,
    user,
    utc_now,
)
from orchestrator.runner.apply import Observer
from orchestrator.runner.events import PhaseTracker
from orchestrator.runner.model import PhaseResult, Run
from orchestrator.runner.project import new_run_id

Say = Callable[[str], None]
INTERRUPTED_RC = 130
ERROR_RC = 70


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def phase_summary(result: PhaseResult) -> dict[str, Any]:
    return {"name": result.name, "status": str(result.status), "seconds": round(result.seconds, 1)} | (
        {"note": result.note} if result.note else {}
    )


class Recording:
    """The history row of one run, kept up to date."""

    def __init__(self, root: Path, rec: db.RunRecord, say: Say) -> None:
        self.root, self.record, self.say = root, rec, say
        self.finished = False
        self._broken = False

    @property
    def run_id(self) -> str:
        return self.record.run_id

    def _write(self, insert: bool = False) -> None:
        if self._broken:
            return
        try:
            with db.connect(self.root) as conn:
                (db.insert if insert else db.update)(conn, self.record)
        except db.HistoryError as exc:
            self._broken = True
            self.say(f"warning: this run is not recorded in the history: {exc}")

    def start(self) -> None:
        """Insert the row ("running", with the pid)."""
        self._write(insert=True)

    def phase_done(self, result: PhaseResult) -> None:
        rec = self.record
        rec.phases.append(phase_summary(result))
        if result.hosts:
            rec.host_stats[result.name] = {h: s.as_dict() for h, s in sorted(result.hosts.items())}
        rec.failures += [f.as_dict() for f in result.failures]
        self._write()

    def observer(self, inner: Observer) -> Observer:
        """`inner` (the progress display) that also records every phase as it ends."""
        return _RecordingObserver(inner, self)

    def finish(
        self,
        *,
        result: str,
        exit_code: int,
        resume: str | None = None,
        artifacts: str | None = None,
        note: str = "",
    ) -> None:
        rec = self.record
        rec.result, rec.exit_code, rec.resume, rec.ended = result, exit_code, resume, utc_now()
        if artifacts is not None:
            rec.artifacts = artifacts
        if note:
            rec.note = note
        self.finished = True
        self._write()

    def finish_run(self, run: Run, exit_code: int, result: str | None = None) -> None:
        """The runner's Run is the authority on phases, stats and failures; `result` overrides its result
        (e.g. drift: "drift" / "clean")."""
        rec = self.record
        rec.phases = [phase_summary(p) for p in run.phases]
        rec.host_stats = {p.name: {h: s.as_dict() for h, s in sorted(p.hosts.items())} for p in run.phases}
        rec.host_stats = {k: v for k, v in rec.host_stats.items() if v}
        rec.failures = [f.as_dict() for f in run.failures]
        self.finish(
            result=result or str(run.result), exit_code=exit_code, resume=run.resume, artifacts=run.artifacts
        )


class _RecordingObserver:
    def __init__(self, inner: Observer, recording: Recording) -> None:
        self.inner, self.recording = inner, recording

    def phase_started(self, phase: str, hosts: Sequence[str]) -> None:
        self.inner.phase_started(phase, hosts)

    def progress(self, tracker: PhaseTracker, event: Mapping[str, Any]) -> None:
        self.inner.progress(tracker, event)

    def phase_finished(self, result: PhaseResult) -> None:
        self.recording.phase_done(result)
        self.inner.phase_finished(result)


def new_record(
    kind: str,
    site: str,
    run_id: str,
    *,
    spec_path: Path | None,
    content_root: Path | None,
    argv: Sequence[str] | None,
    check: bool,
) -> db.RunRecord:
    pid = os.getpid()
    return db.RunRecord(
        run_id=run_id,
        kind=kind,
        site=site,
        started=utc_now(),
        check_mode=check,
        spec_sha256=spec_sha256(spec_path),
        project_version=project_version(content_root),
        user=user(),
        host=this_host(),
        pid=pid,
        pid_start=process_start(pid),
        argv=safe_argv(sys.argv if argv is None else argv),
    )


@contextmanager
def recorded_run(
    kind: str,
    site: str,
    project_root: Path,
    *,
    spec_path: Path | None = None,
    content_root: Path | None = None,
    argv: Sequence[str] | None = None,
    check: bool = False,
    run_id: str | None = None,
    lock: bool = False,
    say: Say = _stderr,
) -> Iterator[Recording]:
    """Record the block as one run of `kind` on `site` (and hold the site's lock when `lock`)."""
    run_id = run_id or new_run_id()
    with ExitStack() as stack:
        if lock:
            stack.enter_context(site_lock(project_root, site, run_id, kind, say))
        rec = new_record(
            kind, site, run_id, spec_path=spec_path, content_root=content_root, argv=argv, check=check
        )
        recording = Recording(project_root, rec, say)
        recording.start()
        try:
            yield recording
        except KeyboardInterrupt:
            if not recording.finished:
                recording.finish(result="interrupted", exit_code=INTERRUPTED_RC, note="interrupted")
            raise
        except BaseException as exc:
            if not recording.finished:
                code = getattr(exc, "exit_code", getattr(exc, "code", None))
                rc = code if isinstance(code, int) else ERROR_RC
                recording.finish(result="error", exit_code=rc, note=f"ended by {type(exc).__name__}")
            raise
        if not recording.finished:
            recording.finish(result="error", exit_code=ERROR_RC, note="ended without a result")
