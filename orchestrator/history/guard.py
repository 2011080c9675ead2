"""Holding a site's lock for a run: take it (or refuse at once), recover a stale one (the run that left it is
recorded as interrupted), turn SIGTERM into KeyboardInterrupt while it is held (so that the lock is
released and the run recorded however the process is asked to stop), release it at the end."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from orchestrator.history import db
from orchestrator.history.lock import Holder, LockHeld, SiteLock
from orchestrator.history.provenance import process_start, this_host, user, utc_now

Say = Callable[[str], None]


def holder(run_id: str, kind: str, site: str) -> Holder:
    pid = os.getpid()
    return Holder(run_id, kind, site, pid, process_start(pid), user(), this_host(), utc_now())


def recover(project_root: Path, site: str, stale: Holder | None, me: str, say: Say) -> None:
    """Record the runs of the site whose process is gone as interrupted (the stale holder first, with a
    line saying so). History trouble is a warning: the lock is what keeps runs apart."""
    marked = False
    try:
        with db.connect(project_root) as conn:
            if stale is not None:
                note = f"process gone; lock recovered by {me}"
                marked = db.mark_interrupted(conn, stale.run_id, utc_now(), note)
            for rec in db.runs(conn, site):
                if rec.result == db.RUNNING and rec.shown_result == db.GONE and rec.run_id != me:
                    db.mark_interrupted(conn, rec.run_id, utc_now(), "process gone")
    except db.HistoryError as exc:
        say(f"warning: {exc}")
    if stale is not None:
        what = "it is recorded as interrupted" if marked else "its run had already been recorded as ended"
        say(f"recovered the stale lock of site {site}: {stale.describe()} is gone; {what}")


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def take(project_root: Path, site: str, run_id: str, kind: str, say: Say) -> SiteLock:
    """The site's lock for run `run_id`, a stale one recovered; LockHeld at once when another run has it."""
    lock = SiteLock(project_root, site)
    stale = lock.acquire(holder(run_id, kind, site))
    try:
        recover(project_root, site, stale, run_id, say)
    except BaseException:
        lock.release()
        raise
    return lock


@contextmanager
def holding(lock: SiteLock) -> Iterator[SiteLock]:
    """Release the lock after the block, however it ends; SIGTERM raises KeyboardInterrupt meanwhile."""
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield lock
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        lock.release()


@contextmanager
def site_lock(project_root: Path, site: str, run_id: str, kind: str, say: Say) -> Iterator[SiteLock]:
    """Hold the site's lock for the block; LockHeld (raised before the block) when another run has it."""
    with holding(take(project_root, site, run_id, kind, say)) as lock:
        yield lock


__all__ = ["LockHeld", "site_lock"]
