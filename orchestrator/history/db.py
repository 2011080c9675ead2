"""The run history: <project root>/.orchestrator/history.sqlite3 (stdlib sqlite3, WAL mode).

One row per apply / plan / drift / rollback / heal, inserted when the run starts (result "running", with
the pid) and updated after every phase and at the end. A "running" row whose process is gone reads as
"interrupted (process gone)" (the process was killed before it could record its end).

The schema is versioned with PRAGMA user_version: MIGRATIONS[i] brings version i to i + 1. A database of a
newer schema than this orchestrator knows is refused (never rewritten).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from orchestrator.history.provenance import process_alive, this_host

KINDS = ("apply", "plan", "drift", "rollback", "heal")
RUNNING = "running"
GONE = "interrupted (process gone)"
BUSY_TIMEOUT_MS = 10_000

def _runs_table(name: str, kinds: tuple[str, ...]) -> str:
    """The runs table's CREATE statement (the same columns in every schema version)."""
    allowed = ", ".join(f"'{k}'" for k in kinds)
    return f"""
    CREATE TABLE {name} (
        run_id TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ({allowed})),
        site TEXT NOT NULL,
        started TEXT NOT NULL,
        ended TEXT,
        result TEXT NOT NULL,
        exit_code INTEGER,
        check_mode INTEGER NOT NULL DEFAULT 0,
        spec_sha256 TEXT NOT NULL DEFAULT '',
        project_version TEXT NOT NULL DEFAULT '',
        user TEXT NOT NULL DEFAULT '',
        host TEXT NOT NULL DEFAULT '',
        pid INTEGER,
        pid_start INTEGER,
        argv TEXT NOT NULL DEFAULT '[]',
        phases TEXT NOT NULL DEFAULT '[]',
        host_stats TEXT NOT NULL DEFAULT '{{}}',
        failures TEXT NOT NULL DEFAULT '[]',
        resume TEXT,
        artifacts TEXT NOT NULL DEFAULT '',
        note TEXT NOT NULL DEFAULT ''
    );
    """


_INDEX = "CREATE INDEX runs_by_site ON runs (site, started);"
MIGRATIONS: tuple[str, ...] = (
    _runs_table("runs", ("apply", "plan", "drift", "rollback")) + _INDEX,
    # 2: kind "heal" (`orchestrator heal`, `drift --heal`); SQLite cannot change a CHECK, so the table is
    # rebuilt with the same columns and rows (https://www.sqlite.org/lang_altertable.html#otheralter)
    _runs_table("runs_v2", KINDS)
    + "INSERT INTO runs_v2 SELECT * FROM runs; DROP TABLE runs; ALTER TABLE runs_v2 RENAME TO runs;"
    + _INDEX,
)
SCHEMA_VERSION = len(MIGRATIONS)
_JSON = {"argv", "phases", "host_stats", "failures"}


class HistoryError(Exception):
    """The history database cannot be used (a sentence with the fix)."""


@dataclass
class RunRecord:
    run_id: str
    kind: str
    site: str
    started: str  # ISO 8601 UTC, e.g. 2026-12-04T21:30:01Z
    ended: str | None = None
    result: str = RUNNING
    exit_code: int | None = None
    check_mode: bool = False
    spec_sha256: str = ""
    project_version: str = ""
    user: str = ""
    host: str = ""
    pid: int | None = None
    pid_start: int | None = None  # the process's start time (/proc), so that a reused pid is not "alive"
    argv: list[str] = field(default_factory=list)
    phases: list[dict[str, Any]] = field(default_factory=list)  # [{name, status, seconds}]
    host_stats: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # phase -> host -> counts
    failures: list[dict[str, Any]] = field(default_factory=list)
    resume: str | None = None
    artifacts: str = ""
    note: str = ""

    @property
    def shown_result(self) -> str:
        """The result as people and tools read it: a running row whose process is gone was interrupted."""
        if (
            self.result == RUNNING
            and self.host == this_host()
            and not process_alive(self.pid, self.pid_start)
        ):
            return GONE
        return self.result

    def as_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["result"] = self.shown_result
        return out


_COLUMNS = tuple(f.name for f in fields(RunRecord))


def _to_row(rec: RunRecord) -> dict[str, Any]:
    row = {k: getattr(rec, k) for k in _COLUMNS}
    for k in _JSON:
        row[k] = json.dumps(row[k], sort_keys=True)
    row["check_mode"] = int(rec.check_mode)
    return row


def _from_row(row: sqlite3.Row) -> RunRecord:
    data = {k: row[k] for k in row.keys()}  # noqa: SIM118 (sqlite3.Row is not a mapping)
    for k in _JSON:
        data[k] = json.loads(data[k])
    data["check_mode"] = bool(data["check_mode"])
    return RunRecord(**data)


def db_path(project_root: Path) -> Path:
    return project_root / ".orchestrator" / "history.sqlite3"


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise HistoryError(
            f"{path} has schema version {version}, newer than this orchestrator knows ({SCHEMA_VERSION}). "
            "Fix: run the orchestrator version that wrote it (or a newer one), or move the file aside."
        )
    if version == SCHEMA_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")  # one migrating process at a time; the others wait (busy timeout)
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        for step in range(version, SCHEMA_VERSION):
            for statement in MIGRATIONS[step].split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {step + 1}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


@contextmanager
def connect(project_root: Path) -> Iterator[sqlite3.Connection]:
    """A connection to the site's history (created and migrated on first use); closed after the block."""
    path = db_path(project_root)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    except (OSError, sqlite3.Error) as exc:
        raise HistoryError(
            f"cannot open the run history {path}: {exc}. Fix: check the folder's permissions."
        ) from None
    with closing(conn):
        try:
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode = WAL")
            _migrate(conn, path)
            yield conn
        except sqlite3.DatabaseError as exc:
            raise HistoryError(
                f"the run history {path} cannot be read: {exc}. Fix: move the file aside (a new one is "
                "created); the runs' own records stay in .orchestrator/runs/."
            ) from None


def insert(conn: sqlite3.Connection, rec: RunRecord) -> None:
    if rec.kind not in KINDS:
        raise ValueError(f"kind {rec.kind!r} is not one of {', '.join(KINDS)}")
    row = _to_row(rec)
    names = ", ".join(row)
    conn.execute(f"INSERT INTO runs ({names}) VALUES ({', '.join(':' + k for k in row)})", row)


def update(conn: sqlite3.Connection, rec: RunRecord) -> None:
    row = _to_row(rec)
    sets = ", ".join(f"{k} = :{k}" for k in row if k != "run_id")
    conn.execute(f"UPDATE runs SET {sets} WHERE run_id = :run_id", row)


def mark_interrupted(conn: sqlite3.Connection, run_id: str, ended: str, note: str) -> bool:
    """A run whose process is gone: "interrupted" if it still reads "running" (True when it did)."""
    cur = conn.execute(
        "UPDATE runs SET result = 'interrupted', ended = COALESCE(ended, ?), note = ? "
        "WHERE run_id = ? AND result = ?",
        (ended, note, run_id, RUNNING),
    )
    return cur.rowcount > 0


def runs(conn: sqlite3.Connection, site: str, last: int | None = None) -> list[RunRecord]:
    """The site's runs, newest first (at most `last`)."""
    sql = "SELECT * FROM runs WHERE site = ? ORDER BY started DESC, run_id DESC"
    args: tuple[Any, ...] = (site,)
    if last is not None:
        sql += " LIMIT ?"
        args = (site, last)
    return [_from_row(r) for r in conn.execute(sql, args)]


class NoSuchRun(HistoryError):
    pass


def find(conn: sqlite3.Connection, prefix: str) -> RunRecord:
    """The run whose id is `prefix` or starts with it (exactly one)."""
    pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    rows = conn.execute(
        "SELECT * FROM runs WHERE run_id = ? OR run_id LIKE ? ESCAPE '\\' ORDER BY started DESC LIMIT 6",
        (prefix, pattern),
    ).fetchall()
    exact = [r for r in rows if r["run_id"] == prefix]
    if exact:
        return _from_row(exact[0])
    if not rows:
        raise NoSuchRun(
            f"no run '{prefix}' in the history. Fix: `orchestrator history SITE` lists the runs of a site."
        )
    if len(rows) > 1:
        ids = ", ".join(r["run_id"] for r in rows[:5])
        raise NoSuchRun(f"'{prefix}' matches several runs ({ids}, ...). Fix: give more of the run id.")
    return _from_row(rows[0])
