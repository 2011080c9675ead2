"""How `orchestrator history` and `orchestrator show` print runs: a table of runs, one run in detail, or
JSON (the history rows as they are stored, with "result" as read now)."""

from __future__ import annotations

from datetime import datetime

from rich.console import Console
from rich.table import Table

from orchestrator.cli.output import say
from orchestrator.history.db import RunRecord

COUNTS = ("ok", "changed", "failed", "unreachable", "skipped")
_RESULT_STYLE = {"ok": "green", "failed": "red", "unreachable": "magenta", "running": "cyan"}


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
    return ", ".join(f"{p.get('name')} {str(p.get('status')).replace('_', ' ')}" for p in rec.phases) or "-"


def _style(result: str) -> str | None:
    return _RESULT_STYLE.get(result, "yellow" if result.startswith("interrupted") else None)


def _when(value: str) -> str:
    return value.replace("T", " ").rstrip("Z")


def runs_table(site: str, records: list[RunRecord]) -> Table:
    """One row per run, in 80 columns: the run id whole (what `orchestrator show` takes) over its kind; the
    start over how long it took and who ran it; the result over the exit code; the phases, wrapped."""
    table = Table(title=f"runs of {site}, newest first", title_justify="left", title_style="bold")
    table.add_column("run", no_wrap=True)  # never cut: `orchestrator show RUN` needs all of it
    table.add_column("started (UTC)", overflow="fold")
    table.add_column("result", overflow="fold")
    table.add_column("phases", overflow="fold")
    for r in records:
        kind = f"{r.kind} --check" if r.check_mode and r.kind == "apply" else r.kind
        result = r.shown_result
        table.add_row(
            f"{r.run_id}\n{kind}",
            f"{_when(r.started)}\ntook {duration(r)}\nby {r.user}@{r.host}",
            result if r.exit_code is None else f"{result}\nexit {r.exit_code}",
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
        f"spec:     {r.spec_sha256} (sha256)" if r.spec_sha256 else "spec:     -",
        f"version:  {r.project_version or '-'}",
        f"artifacts: {r.artifacts or '-'}",
    ]
    if r.note:
        lines.append(f"note:     {r.note}")
    return lines


def print_detail(out: Console, r: RunRecord) -> None:
    say(out, "\n".join(detail_lines(r)), hang=len("artifacts: "))  # continued under the values
    phases = Table(title="phases", title_justify="left", title_style="bold")
    for col in ("phase", "status", "seconds", "note"):
        phases.add_column(col, justify="right" if col == "seconds" else "left", overflow="fold")
    for p in r.phases:
        status = str(p.get("status")).replace("_", " ")
        phases.add_row(str(p.get("name")), status, str(p.get("seconds")), str(p.get("note", "")))
    out.print(phases if r.phases else "phases: none recorded")
    for phase, hosts in r.host_stats.items():
        table = Table(title=f"{phase}: per host", title_justify="left", title_style="bold")
        for col in ("host", *COUNTS, "seconds"):
            table.add_column(col, justify="left" if col == "host" else "right", overflow="fold")
        for host, c in sorted(hosts.items()):
            style = "red" if c.get("failed") else "magenta" if c.get("unreachable") else None
            table.add_row(host, *(str(c.get(k, 0)) for k in (*COUNTS, "seconds")), style=style)
        out.print(table)
    for f in r.failures:
        kind = "UNREACHABLE" if f.get("unreachable") else "FAILED"
        where = f"{f['host']} in {f['phase']}" if f.get("host") else f"phase {f.get('phase')}"
        task = f', task "{f["task"]}"' if f.get("task") else ""
        body = str(f.get("message", "")).replace("\n", "\n    ")
        say(out, f"{kind}: {where}{task}:\n    {body}", style="red")
    if r.resume:
        say(out, f"Resume with: {r.resume}", style="bold")
