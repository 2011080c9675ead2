"""`orchestrator drift --format table`: one row per host and phase (people), then what would change."""

from __future__ import annotations

import textwrap

from rich.console import Console
from rich.table import Table
from rich.text import Text

from orchestrator.drift.report import STATES, CellState, DriftReport, cell_lines

_STYLE = {
    CellState.IN_SYNC: "green",
    CellState.DRIFT: "yellow",
    CellState.UNREACHABLE: "magenta",
    CellState.FAILED: "red",
    CellState.NOT_RUN: "dim",
}


def summary_line(report: DriftReport) -> str:
    totals = ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in report.totals.items() if n)
    return (
        f"drift of {report.site}: {report.verdict.replace('_', ' ')} (exit {report.exit_code}); "
        f"host x phase: {totals or 'none checked'}; run {report.run_id}, {report.seconds:.1f} s"
    )


def print_table(out: Console, report: DriftReport) -> None:
    table = Table(title=f"drift of {report.site}", title_justify="left", title_style="bold")
    for col in ("host", "phase", "state", "changes", "detail"):
        table.add_column(col, justify="right" if col == "changes" else "left", overflow="fold")
    for cell in sorted(report.cells, key=lambda c: (c.host, report.phases.index(c.phase))):
        lines = cell_lines(cell)
        detail = lines[0] if lines else ""
        if len(lines) > 1:
            detail += f" (+{len(lines) - 1} more)"
        table.add_row(
            cell.host,
            cell.phase,
            str(cell.state).replace("_", " "),
            str(cell.change_count) if cell.state is CellState.DRIFT else "",
            Text(detail),  # a task's own words and paths, e.g. "[/var/cache/...]": not console markup
            style=_STYLE[cell.state],
        )
    out.print(table)
    for state in STATES:
        if state in (CellState.IN_SYNC, CellState.NOT_RUN):
            continue
        for cell in report.with_state(state):
            out.print(f"{str(state).upper()}: {cell.host} in {cell.phase}:", markup=False, highlight=False)
            for line in cell_lines(cell):
                out.print(_fill(line, out.width, "    "), markup=False, highlight=False, style=_STYLE[state])
    out.print(_fill(summary_line(report), out.width), markup=False, highlight=False, style="bold")


def _fill(line: str, width: int, indent: str = "") -> str:
    """Wrapped to the console's width at spaces (a path or an id stays whole), continued 4 further in."""
    return textwrap.fill(
        line,
        width=max(width, 20),
        initial_indent=indent,
        subsequent_indent=indent + "    ",
        break_long_words=False,
        break_on_hyphens=False,
    )
