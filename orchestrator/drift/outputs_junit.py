"""`orchestrator drift --junit FILE` / `--format junit`: JUnit XML for CI dashboards (Jenkins, GitLab,
GitHub test reporters), written with junitparser.

One test case per host and phase: classname = the phase, name = the host. A drifted cell is a <failure>
(type "drift") whose text lists the changes (and file diffs); an unreachable or failed cell is an <error>
(type "unreachable" / "failed"); a cell that was not run is <skipped>; a cell in sync passes.
"""

from __future__ import annotations

import io
import socket
from pathlib import Path

from junitparser import Error, Failure, Skipped, TestCase, TestSuite

from orchestrator.drift.report import Cell, CellState, DriftReport, cell_lines

MAX_TEXT = 64 * 1024
"""Characters of change text per test case (a diff of a large file must not bloat the report)."""


def _seconds(value: float) -> float:
    return round(max(value, 0.0), 3)  # the JUnit schema's time: at most three decimals


def _text(cell: Cell) -> str:
    parts = cell_lines(cell)
    parts += [c.diff.rstrip() for c in cell.changes if c.diff.strip()]
    text = "\n".join(parts)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "\n... (cut; the JSON report has it all)"


def _case(cell: Cell) -> TestCase:
    case = TestCase(name=cell.host, classname=cell.phase, time=_seconds(cell.seconds))
    if cell.state is CellState.DRIFT:
        result: Failure | Error | Skipped = Failure(
            f"drift: {cell.change_count} change(s) an apply would make", type_="drift"
        )
    elif cell.state in (CellState.UNREACHABLE, CellState.FAILED):
        result = Error(cell.message or str(cell.state), type_=str(cell.state))
    elif cell.state is CellState.NOT_RUN:
        result = Skipped(cell.message or "not run")
    else:
        return case
    text = _text(cell)
    if text:
        result.text = text
    case.result = [result]
    return case


def junit_xml(report: DriftReport) -> TestSuite:
    """One <testsuite> as the document root (Jenkins, GitLab and GitHub reporters read it; junitparser's
    <testsuites> root carries a "skipped" attribute the JUnit schema does not allow)."""
    suite = TestSuite(f"orchestrator drift {report.site}")
    for key, value in (
        ("site", report.site),
        ("run_id", report.run_id),
        ("verdict", report.verdict),
        ("exit_code", str(report.exit_code)),
    ):
        suite.add_property(key, value)
    for cell in report.cells:
        suite.add_testcase(_case(cell))
    suite.update_statistics()  # type: ignore[no-untyped-call]
    suite.time = _seconds(report.seconds)
    suite.timestamp = report.finished.replace(microsecond=0).isoformat()
    suite.hostname = socket.gethostname()
    return suite


def junit_text(report: DriftReport) -> str:
    """The document as write_junit writes it (XML declaration, indented)."""
    buf = io.BytesIO()
    junit_xml(report).write(buf, pretty=True)
    return buf.getvalue().decode("utf-8")


def write_junit(report: DriftReport, path: Path) -> None:
    """Write the XML next to its final name, then rename (a dashboard never reads half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    junit_xml(report).write(str(tmp), pretty=True)
    tmp.replace(path)
