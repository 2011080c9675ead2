"""The run history database: round trip, schema version and WAL mode (read back through sqlite3 itself),
a newer schema refused, run id prefixes, a "running" row whose process is gone, provenance."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from orchestrator.history import db
from orchestrator.history.provenance import process_start, project_version, safe_argv, this_host, utc_now
from tests.helpers import ROOT


def record(run_id: str, **kw: object) -> db.RunRecord:
    base: dict[str, object] = {"kind": "apply", "site": "lab", "started": "2026-12-04T21:00:00Z"}
    return db.RunRecord(run_id=run_id, **{**base, **kw})  # type: ignore[arg-type]


def test_round_trip_and_schema(tmp_path: Path) -> None:
    rec = record(
        "20261204T210000Z-aaaaaa",
        argv=["orchestrator", "apply", "lab", "--yes"],
        phases=[{"name": "preflight", "status": "ok", "seconds": 1.5}],
        host_stats={"preflight": {"a2-01": {"ok": 3, "changed": 1}}},
        failures=[{"phase": "preflight", "host": "a2-01", "task": "t", "message": "m", "unreachable": False}],
        check_mode=True,
        pid=12345,
    )
    with db.connect(tmp_path) as conn:
        db.insert(conn, rec)
        rec.result, rec.exit_code, rec.ended, rec.resume = "failed", 3, "2026-12-04T21:01:00Z", "x y"
        db.update(conn, rec)
    with db.connect(tmp_path) as conn:
        back = db.find(conn, "20261204T210000Z-aaaaaa")
    assert back == rec
    raw = sqlite3.connect(db.db_path(tmp_path))
    assert raw.execute("PRAGMA user_version").fetchone()[0] == db.SCHEMA_VERSION == 2
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    row = raw.execute("SELECT result, exit_code, check_mode, phases FROM runs").fetchone()
    assert row == ("failed", 3, 1, '[{"name": "preflight", "seconds": 1.5, "status": "ok"}]')


def test_unknown_kind_is_refused(tmp_path: Path) -> None:
    with db.connect(tmp_path) as conn, pytest.raises(sqlite3.IntegrityError):
        conn.execute(
            "INSERT INTO runs (run_id, kind, site, started, result) VALUES ('x', 'deploy', 's', 't', 'ok')"
        )


def test_a_version_1_history_migrates_keeping_its_rows_and_takes_heal_runs(tmp_path: Path) -> None:
    """A database written by an orchestrator of schema 1 (its CREATE statement run by sqlite3 itself): its
    rows survive the rebuild that admits kind 'heal', and the index is back."""
    path = db.db_path(tmp_path)
    path.parent.mkdir(parents=True)
    raw = sqlite3.connect(path)
    raw.executescript(db.MIGRATIONS[0] + "PRAGMA user_version = 1;")
    raw.execute(
        "INSERT INTO runs (run_id, kind, site, started, result, phases) VALUES "
        "('20261204T210000Z-aaaaaa', 'rollback', 'lab', '2026-12-04T21:00:00Z', 'ok', '[]')"
    )
    raw.commit()
    with pytest.raises(sqlite3.IntegrityError):  # schema 1 refuses the new kind
        raw.execute(
            "INSERT INTO runs (run_id, kind, site, started, result) VALUES ('h', 'heal', 's', 't', 'x')"
        )
    raw.close()
    with db.connect(tmp_path) as conn:
        old = db.find(conn, "20261204T210000Z-aaaaaa")
        db.insert(conn, record("20261205T210000Z-bbbbbb", kind="heal"))
    assert old is not None and (old.kind, old.result) == ("rollback", "ok")
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == 2
    assert [r[0] for r in raw.execute("SELECT kind FROM runs ORDER BY started")] == ["rollback", "heal"]
    made = "SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_autoindex%'"
    assert raw.execute(made).fetchall() == [("runs_by_site",)]


def test_a_newer_schema_is_refused_not_rewritten(tmp_path: Path) -> None:
    with db.connect(tmp_path):
        pass
    raw = sqlite3.connect(db.db_path(tmp_path))
    raw.execute("PRAGMA user_version = 7")
    raw.close()
    newer = r"schema version 7, newer than this orchestrator knows \(2\)"
    with pytest.raises(db.HistoryError, match=newer), db.connect(tmp_path):
        pass
    assert sqlite3.connect(db.db_path(tmp_path)).execute("PRAGMA user_version").fetchone()[0] == 7


def test_a_file_that_is_no_database_names_the_fix(tmp_path: Path) -> None:
    db.db_path(tmp_path).parent.mkdir(parents=True)
    db.db_path(tmp_path).write_bytes(b"not a database" * 100)
    with pytest.raises(db.HistoryError, match="Fix: move the file aside"), db.connect(tmp_path):
        pass


def test_newest_first_last_n_and_prefixes(tmp_path: Path) -> None:
    ids = ["20261204T210000Z-aaaaaa", "20261204T220000Z-bbbbbb", "20261204T220000Z-bbbccc"]
    with db.connect(tmp_path) as conn:
        for run_id in ids:
            db.insert(conn, record(run_id, started=run_id[:15], result="ok"))
        db.insert(conn, record("20261204T230000Z-dddddd", site="other", result="ok"))
        assert [r.run_id for r in db.runs(conn, "lab")] == [ids[2], ids[1], ids[0]]
        assert [r.run_id for r in db.runs(conn, "lab", last=1)] == [ids[2]]
        assert db.find(conn, "20261204T2100").run_id == ids[0]
        with pytest.raises(db.NoSuchRun, match="matches several runs"):
            db.find(conn, "20261204T220000Z-bbb")
        with pytest.raises(db.NoSuchRun, match="no run 'zzz'"):
            db.find(conn, "zzz")
        with pytest.raises(db.NoSuchRun, match="no run"):
            db.find(conn, "%")  # LIKE wildcards are literal


def test_running_row_of_a_gone_process_reads_interrupted(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    me = os.getpid()
    gone = record("r-gone", pid=child.pid, host=this_host())
    mine = record("r-mine", pid=me, pid_start=process_start(me), host=this_host())
    reused = record("r-reused", pid=me, pid_start=(process_start(me) or 0) + 1, host=this_host())
    elsewhere = record("r-else", pid=child.pid, host="another-controller")
    assert gone.shown_result == db.GONE
    assert mine.shown_result == db.RUNNING
    assert reused.shown_result == db.GONE  # the same pid, another process
    assert elsewhere.shown_result == db.RUNNING  # cannot tell from here
    assert gone.as_dict()["result"] == db.GONE
    with db.connect(tmp_path) as conn:
        db.insert(conn, gone)
        assert db.mark_interrupted(conn, "r-gone", utc_now(), "process gone")
        assert not db.mark_interrupted(conn, "r-gone", utc_now(), "again")  # only a running row changes
        back = db.find(conn, "r-gone")
    assert (back.result, back.note) == ("interrupted", "process gone")


def test_project_version_is_the_checkout_commit_else_the_package_version(tmp_path: Path) -> None:
    git = ["git", "-C", str(ROOT), "rev-parse", "HEAD"]
    head = subprocess.run(git, capture_output=True, text=True, check=False)
    assert head.returncode == 0, head.stderr
    assert project_version(ROOT) == head.stdout.strip()
    assert project_version(tmp_path) == version("ascend-orchestrator")


def test_argv_keeps_no_secret() -> None:
    argv = ["orchestrator", "apply", "lab", "--api-key", "abc", "--token=xyz", "sk-live-123", "--yes"]
    assert safe_argv(argv) == [
        "orchestrator",
        "apply",
        "lab",
        "--api-key",
        "<redacted>",
        "--token=<redacted>",
        "<redacted>",
        "--yes",
    ]
