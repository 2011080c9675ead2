"""The per-site lock across real processes: a second holder is refused at once naming the first (run id,
kind, pid, user, start time, the fix); `orchestrator apply` is refused with exit 75 before it renders or
runs anything; SIGTERM to the holder records its run as interrupted and frees the lock; a holder killed
with SIGKILL leaves a stale holder file that the next run recovers (its run recorded as interrupted)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.cli import exits
from orchestrator.history import db
from orchestrator.history.guard import LockHeld, take
from orchestrator.history.lock import holder_path, lock_path, read_holder
from orchestrator.history.provenance import user
from tests.helpers import CLOSED_WEBHOOK, PATIENCE_S, ROOT, copy_ready_site, run_cli

HOLD = """
import sys, time
from pathlib import Path
from orchestrator.history.record import recorded_run
with recorded_run(sys.argv[3], sys.argv[2], Path(sys.argv[1]), run_id=sys.argv[4], lock=True,
                  argv=["orchestrator", sys.argv[3], sys.argv[2]]):
    print("held", flush=True)
    time.sleep(120)
"""


def hold(root: Path, site: str, run_id: str, kind: str = "apply") -> subprocess.Popen[str]:
    """A real process holding the site's lock (and a running history row) until it is signalled."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(root), site, kind, run_id],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == "held", line + (proc.stderr.read() if proc.stderr else "")
    return proc


@pytest.fixture
def holders() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_a_second_holder_is_refused_at_once_naming_the_first(
    tmp_path: Path, holders: list[subprocess.Popen[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = hold(tmp_path, "lab", "20261204T210000Z-111111")
    holders.append(first)
    said: list[str] = []
    # "At once" is checked as "never sleeps" (neither polling the lock, as filelock does with a timeout,
    # nor waiting for the holder file) rather than as a wall time: on a busy machine (CI runs the unit
    # tests at nice 19 beside the integration tests) a refusal that does not wait can still take seconds.
    # A blocking flock would not return before the holder ends (120 s), and then it would not refuse.
    waits: list[float] = []
    me, sleep = threading.get_ident(), time.sleep

    def recorded_sleep(seconds: float) -> None:
        if threading.get_ident() == me:
            waits.append(seconds)
        sleep(seconds)

    with monkeypatch.context() as m, pytest.raises(LockHeld) as refused:
        m.setattr(time, "sleep", recorded_sleep)
        take(tmp_path, "lab", "20261204T210001Z-222222", "apply", said.append)
    assert waits == []  # no waiting for the lock
    h = refused.value.holder
    assert h is not None
    assert (h.run_id, h.kind, h.pid, h.user) == ("20261204T210000Z-111111", "apply", first.pid, user())
    message = refused.value.message
    for part in ("20261204T210000Z-111111", f"pid {first.pid}", f"started {h.started}", user()):
        assert part in message
    assert "Fix: wait for it to end" in message and "if that process is gone" in message
    # another site is not locked by it
    other = take(tmp_path, "other", "20261204T210002Z-333333", "apply", said.append)
    other.release()

    first.send_signal(signal.SIGTERM)  # stops like Ctrl-C: the run is recorded, the lock released
    assert first.wait(timeout=PATIENCE_S) != 0
    assert not holder_path(lock_path(tmp_path, "lab")).exists()
    lock = take(tmp_path, "lab", "20261204T210003Z-444444", "apply", said.append)
    lock.release()
    assert said == []  # nothing stale to recover
    with db.connect(tmp_path) as conn:
        rec = db.find(conn, "20261204T210000Z-111111")
    assert (rec.result, rec.exit_code, rec.ended is not None) == ("interrupted", 130, True)


def test_a_holder_killed_with_sigkill_leaves_a_stale_lock_that_is_recovered(
    tmp_path: Path, holders: list[subprocess.Popen[str]]
) -> None:
    first = hold(tmp_path, "lab", "20261204T210000Z-aaaaaa", kind="rollback")
    holders.append(first)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=PATIENCE_S)
    stale = read_holder(holder_path(lock_path(tmp_path, "lab")))
    assert stale is not None and stale.run_id == "20261204T210000Z-aaaaaa" and not stale.alive
    with db.connect(tmp_path) as conn:
        assert db.find(conn, "20261204T210000Z-aaaaaa").shown_result == db.GONE
    said: list[str] = []
    lock = take(tmp_path, "lab", "20261204T210500Z-bbbbbb", "apply", said.append)
    try:
        assert len(said) == 1, said
        assert said[0].startswith(
            f"recovered the stale lock of site lab: rollback run 20261204T210000Z-aaaaaa (pid {first.pid}"
        )
        assert said[0].endswith("is gone; it is recorded as interrupted")
        now = read_holder(holder_path(lock_path(tmp_path, "lab")))
        assert now is not None and (now.run_id, now.pid) == ("20261204T210500Z-bbbbbb", os.getpid())
    finally:
        lock.release()
    with db.connect(tmp_path) as conn:
        rec = db.find(conn, "20261204T210000Z-aaaaaa")
    assert rec.result == "interrupted"
    assert rec.note == "process gone; lock recovered by 20261204T210500Z-bbbbbb"


def test_apply_is_refused_with_exit_75_while_another_run_holds_the_site(
    tmp_path: Path, holders: list[subprocess.Popen[str]]
) -> None:
    site = "a2-fleet-gateway"
    root = copy_ready_site(tmp_path, site)
    holders.append(hold(root, site, "20261204T210000Z-cccccc"))
    out = run_cli("--root", str(root), "apply", site, "--yes", "--limit", "edge-01")
    assert out.returncode == exits.LOCKED == 75, out.stderr
    text = " ".join(out.stderr.split())
    assert f"refused: site {site} is locked by apply run 20261204T210000Z-cccccc (pid" in text
    assert "Fix: wait for it to end" in text and "Traceback" not in text
    assert not (root / ".orchestrator" / "runs").exists()  # nothing ran
    with db.connect(root) as conn:
        assert [r.run_id for r in db.runs(conn, site)] == ["20261204T210000Z-cccccc"]  # no row of its own


def test_a_stale_holder_of_a_run_that_had_ended_keeps_its_result(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    lock = lock_path(tmp_path, "lab")
    lock.parent.mkdir(parents=True)
    holder = {
        "run_id": "r-ended",
        "kind": "apply",
        "site": "lab",
        "pid": child.pid,
        "pid_start": None,
        "user": "ops",
        "host": "ctl",
        "started": "2026-12-04T21:00:00Z",
    }
    holder_path(lock).write_text(json.dumps(holder))
    with db.connect(tmp_path) as conn:
        db.insert(
            conn, db.RunRecord("r-ended", "apply", "lab", "2026-12-04T21:00:00Z", result="ok", exit_code=0)
        )
    said: list[str] = []
    take(tmp_path, "lab", "r-next", "apply", said.append).release()
    assert said == [
        f"recovered the stale lock of site lab: apply run r-ended (pid {child.pid}, user ops on ctl, started "
        "2026-12-04T21:00:00Z) is gone; its run had already been recorded as ended"
    ]
    with db.connect(tmp_path) as conn:
        assert db.find(conn, "r-ended").result == "ok"


@pytest.mark.parametrize("command", ["plan", "drift"])
def test_plan_and_drift_are_refused_with_exit_75_while_an_apply_holds_the_site(
    tmp_path: Path, holders: list[subprocess.Popen[str]], command: str
) -> None:
    """A check run during an apply would report a half-done state: plan and drift take the lock too."""
    site = "a2-fleet-gateway"
    root = copy_ready_site(tmp_path, site)
    holders.append(hold(root, site, "20261204T220000Z-dddddd"))
    out = run_cli(
        "--root", str(root), command, site, "--limit", "edge-01", env={"DRIFT_WEBHOOK_URL": CLOSED_WEBHOOK}
    )
    assert out.returncode == exits.LOCKED == 75, out.stderr
    text = " ".join(out.stderr.split())
    assert f"refused: site {site} is locked by apply run 20261204T220000Z-dddddd (pid" in text, text
    assert "Traceback" not in text
    assert not (root / ".orchestrator" / "runs").exists()  # nothing ran
    with db.connect(root) as conn:
        assert [r.run_id for r in db.runs(conn, site)] == ["20261204T220000Z-dddddd"]
