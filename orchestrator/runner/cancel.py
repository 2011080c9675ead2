"""SIGINT / SIGTERM during an apply: remember it; the running job polls `requested` and stops."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
