"""SIGINT / SIGTERM during an apply: remember it; the running job polls `requested`, passes SIGINT on to
ansible-playbook and, if it does not stop within a grace period, has ansible-runner kill it."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Cancel:
    def __init__(self) -> None:
        self._event = threading.Event()
        self.signal: int | None = None
        self.on_request: Callable[[int], None] | None = None  # e.g. print "stopping..."

    @property
    def requested(self) -> bool:
        return self._event.is_set()

    def request(self, signum: int = signal.SIGINT) -> None:
        first = not self._event.is_set()
        self.signal = self.signal or signum
        self._event.set()
        if first and self.on_request is not None:
            self.on_request(signum)


@contextmanager
def cancel_on_signals(cancel: Cancel) -> Iterator[Cancel]:
    """Route SIGINT and SIGTERM to cancel while the block runs (main thread only); restore after."""
    if threading.current_thread() is not threading.main_thread():
        yield cancel
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        cancel.request(signum)

    previous = {s: signal.signal(s, handler) for s in SIGNALS}
    try:
        yield cancel
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


GRACE_S = 15.0
"""After SIGINT, how long ansible-playbook gets to stop by itself (workers end, the recap and the last
events are written) before ansible-runner kills its process group."""


def _children_running(program: str) -> list[int]:
    """Direct children of this process whose command line runs `program` (Linux /proc)."""
    me, found = os.getpid(), []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == me and program.encode() in cmdline:
            found.append(int(stat.parent.name))
    return found


class GracefulStop:
    """ansible-runner's cancel_callback: on a cancel request, SIGINT to ansible-playbook (what Ctrl-C in a
    terminal does: Ansible stops starting tasks and exits), and only after GRACE_S tell ansible-runner to
    kill it. ansible-runner starts the playbook in a session of its own, so the operator's Ctrl-C reaches
    orchestrator only; this passes it on."""

    def __init__(self, cancel: Cancel, grace_s: float = GRACE_S, program: str = "ansible-playbook") -> None:
        self.cancel = cancel
        self.grace_s = grace_s
        self.program = program
        self.deadline: float | None = None

    def __call__(self) -> bool:
        if not self.cancel.requested:
            return False
        if self.deadline is None:
            self.deadline = time.monotonic() + self.grace_s
            for pid in _children_running(self.program):
                with suppress(OSError):
                    os.killpg(os.getpgid(pid), signal.SIGINT)
        return time.monotonic() >= self.deadline
