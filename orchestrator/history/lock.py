"""One lock per site: .orchestrator/locks/<site>.lock (filelock: flock(2), which the kernel releases when the
holding process dies, however it dies) and a holder file beside it, <site>.holder.json, naming the run
that holds it (run id, kind, pid, user, host, start time).

- A second run that wants the lock while one holds it is refused at once (no waiting): LockHeld names the
  holder.
- A holder file found while the lock is free belongs to a process that died without cleaning up (SIGKILL,
  power loss): acquire() returns it so that the caller records that run as interrupted and says so.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from orchestrator.history.provenance import process_alive, this_host

HOLDER_WAIT_S = 2.0
"""How long a refused run waits for the holder file of a lock that was just taken (written right after)."""


@dataclass(frozen=True)
class Holder:
    run_id: str
    kind: str
    site: str
    pid: int
    pid_start: int | None
    user: str
    host: str
    started: str

    @property
    def alive(self) -> bool:
        """The holding process still runs (always True for a holder on another host: we cannot tell)."""
        return self.host != this_host() or process_alive(self.pid, self.pid_start)

    def describe(self) -> str:
        return (
            f"{self.kind} run {self.run_id} (pid {self.pid}, user {self.user} on {self.host}, "
            f"started {self.started})"
        )


class LockHeld(Exception):
    def __init__(self, site: str, path: Path, holder: Holder | None) -> None:
        self.site, self.path, self.holder = site, path, holder
        super().__init__(self.message)

    @property
    def message(self) -> str:
        h = self.holder
        if h is None:
            return (
                f"site {self.site} is locked by another orchestrator run (its holder file "
                f"{holder_path(self.path)} is missing). Fix: wait for it to end; `fuser -v {self.path}` "
                "names the process that holds the lock."
            )
        head = f"site {self.site} is locked by {h.describe()}."
        if h.alive:
            return (
                f"{head} Fix: wait for it to end (`orchestrator show {h.run_id}`), or stop it with "
                f"`kill -INT {h.pid}` (it records itself as interrupted and prints the command that "
                "resumes); if that process is gone, the lock is free and the next run recovers it."
            )
        return (
            f"{head} That process is gone, yet the lock is held: a process it started still runs. "
            f"Fix: find it with `fuser -v {self.path}`, stop it, then run again (the stale lock is "
            "recovered)."
        )


def _safe(site: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", site)


def lock_path(project_root: Path, site: str) -> Path:
    return project_root / ".orchestrator" / "locks" / f"{_safe(site)}.lock"


def holder_path(lock: Path) -> Path:
    return lock.with_suffix(".holder.json")


def read_holder(path: Path) -> Holder | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Holder(**data) if isinstance(data, dict) else None
    except (OSError, ValueError, TypeError):
        return None


class SiteLock:
    def __init__(self, project_root: Path, site: str) -> None:
        self.site = site
        self.path = lock_path(project_root, site)
        self.holder_file = holder_path(self.path)
        self._lock = FileLock(str(self.path), timeout=0)
        self._mine: Holder | None = None

    @property
    def run_id(self) -> str | None:
        """The run that holds the lock through this object (None: not held)."""
        return self._mine.run_id if self._mine is not None else None

    def acquire(self, me: Holder) -> Holder | None:
        """Take the lock for `me` or raise LockHeld at once; returns the holder of a stale holder file
        (the lock was free: that run died without releasing), else None."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._lock.acquire(blocking=False)
        except Timeout:
            raise LockHeld(self.site, self.path, self._current_holder()) from None
        stale = read_holder(self.holder_file)
        tmp = self.holder_file.with_name(f".{self.holder_file.name}.{os.getpid()}")
        tmp.write_text(json.dumps(asdict(me), indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, self.holder_file)  # readers see the old file or the new one, never half of one
        self._mine = me
        return stale if stale is not None and stale.run_id != me.run_id else None

    def _current_holder(self) -> Holder | None:
        """The holder file; a lock taken a moment ago may not have written it yet (or an old one is
        still there): wait briefly for one whose process runs."""
        deadline = time.monotonic() + HOLDER_WAIT_S
        holder = read_holder(self.holder_file)
        while (holder is None or not holder.alive) and time.monotonic() < deadline:
            time.sleep(0.1)
            holder = read_holder(self.holder_file)
        return holder

    def release(self) -> None:
        if self._mine is None:
            return
        current = read_holder(self.holder_file)
        if current is not None and current.run_id == self._mine.run_id:
            self.holder_file.unlink(missing_ok=True)
        self._mine = None
        self._lock.release()
