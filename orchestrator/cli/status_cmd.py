"""`orchestrator status SITE [--format table|json]`: the last recorded run of each phase (history) and
the live state of every replica: healthy, release and image, requests running, listed by the gateway.

Read-only: the release records come from the servers through playbooks/status.yml (slurp), the rest from
HTTP GETs of the controller (/health, /metrics, the gateway's /list_workers). Exit codes: 0 every replica
healthy (and listed by the gateway, when the site has one); 3 a replica is not; 4 a server could not be
reached (and every replica that answered is fine); 66 no such site or no rendered inventory.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from orchestrator.cli import exits
from orchestrator.cli.common import Format, FormatOption, SiteArg, resolve
from orchestrator.cli.output import console
from orchestrator.cli.site_run import ansible_content
from orchestrator.cli.sites import project_root
from orchestrator.cli.status_view import print_status
from orchestrator.history import db
from orchestrator.history.last_runs import PhaseRun, last_per_phase
from orchestrator.planning.phases import PHASE_NAMES
from orchestrator.runner.project import facts_dir
from orchestrator.status.fleet import FleetState, InventoryMissing, fleet_state, read_site
from orchestrator.status.releases import Releases, read_releases


def _phases(root: Path, site: str) -> list[PhaseRun]:
    if not db.db_path(root).is_file():  # nothing recorded (reading never creates the database)
        return last_per_phase([], PHASE_NAMES)
    try:
        with db.connect(root) as conn:
            return last_per_phase(db.runs(conn, site), PHASE_NAMES)
    except db.HistoryError as exc:
        console(stderr=True).print(f"warning: {exc}", markup=False)
        return last_per_phase([], PHASE_NAMES)


def exit_code(fleet: FleetState) -> int:
    if any(not r.healthy or r.in_gateway is False for r in fleet.replicas) or fleet.gateway_error:
        return exits.HOSTS_FAILED
    if fleet.unreachable or fleet.failed:
        return exits.HOSTS_UNREACHABLE
    return exits.OK


def status_command(site: SiteArg, fmt: FormatOption = Format.table) -> None:
    """Show the last run of each phase and the live state of every replica (healthy, release, image,
    requests running, listed by the gateway). Read-only.

    Exit codes: 0 all replicas healthy (and in the gateway), 3 a replica is not, 4 a server was unreachable,
    66 no such site or no rendered inventory.
    """
    err = console(stderr=True)
    root = project_root()
    inventory_dir = resolve(site).parent.resolve()
    try:
        info = read_site(inventory_dir)
    except InventoryMissing as exc:
        err.print(str(exc), markup=False)
        raise typer.Exit(exits.NO_SITE) from None
    code = ansible_content(root, err)
    phases = _phases(root, info.name)
    releases = Releases()
    if info.servers:
        releases = read_releases(code, inventory_dir, facts_dir(root, info.name), info.servers)
    fleet = fleet_state(info, releases)
    rc = exit_code(fleet)
    if fmt is Format.json:
        doc = {"site": info.name, "phases": [p.as_dict() for p in phases], **fleet.as_dict(), "exit_code": rc}
        print(json.dumps(doc))
    else:
        print_status(console(), info.name, phases, fleet)
    raise typer.Exit(rc)
