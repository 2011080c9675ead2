"""How `orchestrator status` prints: the last run of each phase, then one row per replica."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from orchestrator.cli.output import say
from orchestrator.history.last_runs import PhaseRun
from orchestrator.status.fleet import FleetState, ReplicaState


def _when(value: str | None) -> str:
    return (value or "-").replace("T", " ").rstrip("Z")


def phases_table(site: str, phases: list[PhaseRun]) -> Table:
    """Per phase: its status in the last run that ran it, that run (id whole, kind and result below), when
    it ended."""
    table = Table(title=f"{site}: last run per phase", title_justify="left", title_style="bold")
    table.add_column("phase", no_wrap=True)
    table.add_column("status", overflow="fold")
    table.add_column("run", no_wrap=True)  # never cut: `orchestrator show RUN` needs all of it
    table.add_column("ended (UTC)", overflow="fold")
    for p in phases:
        r = p.run
        if r is None:
            table.add_row(p.phase, "never run", "-", "-", style="dim")
            continue
        table.add_row(
            p.phase,
            p.status.replace("_", " "),
            f"{r.run_id}\n{r.kind}: {r.shown_result}",
            _when(r.ended or r.started),
            style=None if p.status == "ok" else "red",
        )
    return table


def _state(s: ReplicaState) -> str:
    lines = ["healthy" if s.healthy else "NOT healthy"]
    if s.in_gateway is not None:
        lines.append("in gateway" if s.in_gateway else "NOT in gateway")
    if s.requests_running is not None:
        lines.append(f"{s.requests_running:g} running")
    return "\n".join(lines)


def replicas_table(site: str, fleet: FleetState) -> Table:
    """Per replica, in 80 columns: where it runs; healthy, listed by the gateway, requests running; its
    release, image and since when (ids whole); its URL (a PD instance: one per DP rank)."""
    reps = Table(title=f"{site}: replicas (live)", title_justify="left", title_style="bold")
    reps.add_column("replica", overflow="fold")
    reps.add_column("state", overflow="fold")
    reps.add_column("release\nimage\nsince (UTC)", no_wrap=True)  # ids: never cut
    reps.add_column("url", no_wrap=True)  # copied as a whole into curl
    for s in fleet.replicas:
        image = (s.image_id or "-").removeprefix("sha256:")[:12]
        bad = not s.healthy or s.in_gateway is False
        reps.add_row(
            f"{s.replica}\non {s.head}",
            _state(s),
            f"{s.release or '-'}\n{image}\n{_when(s.since)}",
            "\n".join(s.urls or [s.url]),  # a PD instance: every DP rank's API server
            style="red" if bad else None,
        )
    return reps


def print_status(out: Console, site: str, phases: list[PhaseRun], fleet: FleetState) -> None:
    out.print(phases_table(site, phases))
    reps = replicas_table(site, fleet)
    out.print(reps if fleet.replicas else "no replicas in this site's inventory")
    for s in fleet.replicas:
        if not s.healthy:
            where = "rank " if len(s.urls) > 1 else f"GET {s.url}/health: "  # a PD rank's detail names it
            say(out, f"{s.replica}: not healthy: {where}{s.health}", style="red")
        if s.note:
            say(out, f"{s.replica}: {s.note}")
    if fleet.gateway_error:
        say(out, f"gateway: {fleet.gateway_error}", style="red")
    for host, message in sorted({**fleet.unreachable, **fleet.failed}.items()):
        where = host or "playbooks/status.yml"
        say(out, f"{where}: release records not read: {message.splitlines()[0] if message else ''}")
