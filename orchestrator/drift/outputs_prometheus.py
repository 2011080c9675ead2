"""`orchestrator drift --textfile FILE` / `--format prometheus`: metrics for node_exporter's textfile
collector (written with prometheus_client; write_to_textfile writes a temporary file and renames it, so the
collector never reads half a file). The file name must end in .prom.

Metrics (every one labelled with the site):
- orchestrator_drift{host,phase} 1 drift / 0 in sync, for every host and phase that was checked;
- orchestrator_drift_changes{host,phase} how many things an apply would change there;
- orchestrator_drift_check_failed{host,phase} 1 when the check failed on the host (it could not tell);
- orchestrator_drift_host_unreachable{host} 1 when Ansible could not reach the host, else 0;
- orchestrator_drift_cells{state} host x phase cells per state (in_sync, drift, unreachable, failed, not_run);
- orchestrator_drift_last_run_timestamp_seconds, _duration_seconds, _exit_code: the run itself (also
  written when the spec was invalid: exit code 2 and no per-host metric).

A cell that was not run (or whose host was unreachable) has no orchestrator_drift sample: absent means
unknown, not in sync. Alert on `orchestrator_drift == 1`, on `orchestrator_drift_host_unreachable == 1`, and
on `time() - orchestrator_drift_last_run_timestamp_seconds` growing past two schedule periods.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from prometheus_client import CollectorRegistry, Gauge, generate_latest, write_to_textfile

from orchestrator.drift.report import STATES, CellState, DriftReport

CHECKED = (CellState.IN_SYNC, CellState.DRIFT)


def _run_gauges(
    registry: CollectorRegistry, site: str, finished: datetime, seconds: float, code: int
) -> None:
    for name, doc, value in (
        ("timestamp_seconds", "Unix time the last drift run of the site finished.", finished.timestamp()),
        ("duration_seconds", "Wall time of the last drift run of the site.", seconds),
        (
            "exit_code",
            "Exit code of the last drift run (0 in sync, 2 invalid spec, 3 drift, 4 unreachable).",
            code,
        ),
    ):
        Gauge(f"orchestrator_drift_last_run_{name}", doc, ["site"], registry=registry).labels(site).set(value)


def registry_for(report: DriftReport) -> CollectorRegistry:
    reg = CollectorRegistry()
    site = report.site
    drift = Gauge(
        "orchestrator_drift",
        "1 when an apply would change the host in the phase, 0 when in sync.",
        ["site", "host", "phase"],
        registry=reg,
    )
    changes = Gauge(
        "orchestrator_drift_changes",
        "Changes an apply would make on the host in the phase.",
        ["site", "host", "phase"],
        registry=reg,
    )
    failed = Gauge(
        "orchestrator_drift_check_failed",
        "1 when the check failed on the host in the phase.",
        ["site", "host", "phase"],
        registry=reg,
    )
    unreachable = Gauge(
        "orchestrator_drift_host_unreachable",
        "1 when the last drift run could not reach the host.",
        ["site", "host"],
        registry=reg,
    )
    cells = Gauge(
        "orchestrator_drift_cells",
        "Host x phase cells of the last drift run per state.",
        ["site", "state"],
        registry=reg,
    )
    for cell in report.cells:
        if cell.state in CHECKED:
            drift.labels(site, cell.host, cell.phase).set(1 if cell.state is CellState.DRIFT else 0)
            changes.labels(site, cell.host, cell.phase).set(cell.change_count)
        if cell.state in (*CHECKED, CellState.FAILED):
            failed.labels(site, cell.host, cell.phase).set(1 if cell.state is CellState.FAILED else 0)
    gone = set(report.unreachable_hosts)
    for host in report.hosts:
        unreachable.labels(site, host).set(1 if host in gone else 0)
    for state in STATES:
        cells.labels(site, str(state)).set(len(report.with_state(state)))
    _run_gauges(reg, site, report.finished, report.seconds, report.exit_code)
    return reg


def run_only_registry(site: str, finished: datetime, seconds: float, exit_code: int) -> CollectorRegistry:
    """Only the last-run metrics: for a run that never got to check a host (an invalid spec)."""
    reg = CollectorRegistry()
    _run_gauges(reg, site, finished, seconds, exit_code)
    return reg


def textfile_text(registry: CollectorRegistry) -> str:
    return generate_latest(registry).decode("utf-8")


def write_textfile(registry: CollectorRegistry, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_to_textfile(str(path), registry)
