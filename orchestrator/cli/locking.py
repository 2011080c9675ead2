"""The site lock of apply, rollback, plan and drift (a check run during an apply would see a half-done
state): held from before the inventory is rendered until the run is recorded; refused at once (exit 75, the
holder named) when another run has it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console

from orchestrator.cli import exits
from orchestrator.history.guard import LockHeld, holding, take
from orchestrator.history.lock import SiteLock


@contextmanager
def hold_site_lock(root: Path, site: str, run_id: str, kind: str, err: Console) -> Iterator[SiteLock]:
    """Hold `site`'s lock for run `run_id` during the block, or exit LOCKED naming the holder."""

    def say(line: str) -> None:
        err.print(line, markup=False, highlight=False)

    try:
        lock = take(root, site, run_id, kind, say)
    except LockHeld as exc:
        err.print(f"refused: {exc.message}", markup=False, highlight=False, style="red")
        raise typer.Exit(exits.LOCKED) from None
    with holding(lock):
        yield lock
