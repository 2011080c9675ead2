"""How `orchestrator history` and `orchestrator show` print runs: a table of runs, one run in detail, or
JSON (the history rows as they are stored, with "result" as read now)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from orchestrator.cli.output import console
from orchestrator.history.db import RunRecord

COUNTS = ("ok", "changed", "failed", "unreachable", "skipped")
_RESULT_STYLE = {"ok": "green", "failed": "red", "unreachable": "magenta", "running": "cyan"}


class ViewFormat(StrEnum):
    table = "table"
    json = "json"


ViewFormatOption = Annotated[
    ViewFormat, typer.Option("--format", help="table (people) or json (one document on stdout).")
]


def wide_console() -> Console:
    """stdout; wide when it is not a terminal, so that a log or a pipe gets whole run ids and commands."""
    out = console()
    return out if out.is_terminal else Console(highlight=False, soft_wrap=True, width=220)


def _time(value: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None
    except ValueError:
        return None


def duration(rec: RunRecord) -> str:
    start, end = _time(rec.started), _time(rec.ended)
    if start is None or end is None:
        return "-"
    seconds = int((end - start).total_seconds())
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def phases_cell(rec: RunRecord) -> str:
    return ", ".join(f"{p.get('name')} {p.get('status')}" for p in rec.phases) or "-"


def _style(result: str) -> str | None:
    return _RESULT_STYLE.get(result, "yellow" if result.startswith("interrupted") else None)


def runs_table(site: str, records: list[RunRecord]) -> Table:
    table = Table(title=f"runs of {site}, newest first", title_justify="left", title_style="bold")
    for col in ("run", "kind", "started (UTC)", "took", "result", "exit", "user", "phases"):
        table.add_column(col, no_wrap=col != "phases")
    for r in records:
        kind = f"{r.kind} --check" if r.check_mode and r.kind == "apply" else r.kind
        result = r.shown_result
        table.add_row(
            r.run_id,
            kind,
            r.started.replace("T", " ").rstrip("Z"),
            duration(r),
            result,
            "-" if r.exit_code is None else str(r.exit_code),
            f"{r.user}@{r.host}",
            phases_cell(r),
            style=_style(result),
        )
    return table


def detail_lines(r: RunRecord) -> list[str]:
    ended = r.ended.replace("T", " ").rstrip("Z") if r.ended else "-"
    lines = [
        f"run {r.run_id}: {r.kind}{' (check mode)' if r.check_mode else ''} of site {r.site}",
        f"result:   {r.shown_result}" + ("" if r.exit_code is None else f" (exit {r.exit_code})"),
        f"started:  {r.started.replace('T', ' ').rstrip('Z')} UTC; ended: {ended}; took {duration(r)}",
        f"by:       {r.user} on {r.host} (pid {r.pid})",
        f"command:  {' '.join(r.argv) or '-'}",
        f"spec:     sha256 {r.spec_sha256 or '-'}",
        f"version:  {r.project_version or '-'}",
        f"artifacts: {r.artifacts or '-'}",
    ]
    if r.note:
        lines.append(f"note:     {r.note}")
    return lines


def print_detail(out: Console, r: RunRecord) -> None:
    for line in detail_lines(r):
        out.print(line, markup=False, highlight=False)
    phases = Table(title="phases", title_justify="left", title_style="bold")
    for col in ("phase", "status", "seconds", "note"):
        phases.add_column(col, justify="right" if col == "seconds" else "left")
    for p in r.phases:
        phases.add_row(
            str(p.get("name")), str(p.get("status")), str(p.get("seconds")), str(p.get("note", ""))
        )
    out.print(phases if r.phases else "phases: none recorded")
    for phase, hosts in r.host_stats.items():
        table = Table(title=f"{phase}: per host", title_justify="left", title_style="bold")
        for col in ("host", *COUNTS, "seconds"):
            table.add_column(col, justify="left" if col == "host" else "right")
        for host, c in sorted(hosts.items()):
            style = "red" if c.get("failed") else "magenta" if c.get("unreachable") else None
            table.add_row(host, *(str(c.get(k, 0)) for k in (*COUNTS, "seconds")), style=style)
        out.print(table)
    for f in r.failures:
        kind = "UNREACHABLE" if f.get("unreachable") else "FAILED"
        where = f"{f['host']} in {f['phase']}" if f.get("host") else f"phase {f.get('phase')}"
        task = f', task "{f["task"]}"' if f.get("task") else ""
        body = str(f.get("message", "")).replace("\n", "\n    ")
        out.print(f"{kind}: {where}{task}:\n    {body}", markup=False, highlight=False, style="red")
    if r.resume:
        out.print(f"Resume with: {r.resume}", markup=False, highlight=False, style="bold")
