"""How `orchestrator status` prints: the last run of each phase, then one row per replica."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from orchestrator.history.last_runs import PhaseRun
from orchestrator.status.fleet import FleetState


def _yes(value: bool | None) -> str:
    return "-" if value is None else "yes" if value else "NO"


def print_status(out: Console, site: str, phases: list[PhaseRun], fleet: FleetState) -> None:
    table = Table(title=f"{site}: last run per phase", title_justify="left", title_style="bold")
    for col in ("phase", "status", "run", "kind", "run result", "ended (UTC)"):
        table.add_column(col, no_wrap=True)
    for p in phases:
        r = p.run
        if r is None:
            table.add_row(p.phase, "never run", "-", "-", "-", "-", style="dim")
            continue
        when = (r.ended or r.started).replace("T", " ").rstrip("Z")
        style = None if p.status == "ok" else "red"
        table.add_row(p.phase, p.status, r.run_id, r.kind, r.shown_result, when, style=style)
    out.print(table)
    reps = Table(title=f"{site}: replicas (live)", title_justify="left", title_style="bold")
    for col in ("replica", "head", "healthy", "release", "image", "since", "running", "in gateway", "url"):
        reps.add_column(col, no_wrap=True)
    for s in fleet.replicas:
        image = (s.image_id or "-").removeprefix("sha256:")[:12]
        running = "-" if s.requests_running is None else f"{s.requests_running:g}"
        bad = not s.healthy or s.in_gateway is False
        reps.add_row(
            s.replica,
            s.head,
            _yes(s.healthy),
            s.release or "-",
            image,
            (s.since or "-").replace("T", " ").rstrip("Z"),
            running,
            _yes(s.in_gateway),
            s.url,
            style="red" if bad else None,
        )
    out.print(reps if fleet.replicas else "no replicas in this site's inventory")
    for s in fleet.replicas:
        if not s.healthy:
            out.print(f"{s.replica}: not healthy: GET {s.url}/health: {s.health}", markup=False, style="red")
        if s.note:
            out.print(f"{s.replica}: {s.note}", markup=False)
    if fleet.gateway_error:
        out.print(f"gateway: {fleet.gateway_error}", markup=False, style="red")
    for host, message in sorted({**fleet.unreachable, **fleet.failed}.items()):
        where = host or "playbooks/status.yml"
        out.print(
            f"{where}: release records not read: {message.splitlines()[0] if message else ''}", markup=False
        )
