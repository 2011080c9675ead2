"""`orchestrator plan SITE`: what an apply would change, per host and phase, without changing anything.

Validates and renders like apply, then runs the selected phases' playbooks in check + diff mode (one
ansible-runner job per phase, orchestrator.runner.apply with check=True) and prints the changes they report:
a table for people, one JSON object for tools (the Change records). A phase with changes does not stop the
run; a phase check mode cannot evaluate on a host because an earlier phase would still change it says
"unknown until <phase> is applied".

Exit codes: 0 the plan ran (with changes or without), 2 invalid spec, 3 the check failed on a host (a real
failure, not an unknown), 4 hosts unreachable (and none failed), 130 interrupted, 64 usage, 66 no such site.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console

from orchestrator.cli import exits
from orchestrator.cli.apply_view import LiveProgress, PlainProgress
from orchestrator.cli.common import (
    Format,
    FormatOption,
    MaxFindings,
    MaxSpecSize,
    SiteArg,
    load,
    render_into,
)
from orchestrator.cli.locking import hold_site_lock
from orchestrator.cli.output import DEFAULT_MAX_FINDINGS, console
from orchestrator.cli.plan_view import print_plan_report
from orchestrator.cli.reach import reach_lines
from orchestrator.cli.site_run import FromPhase, Limit, Phases, SiteRun, ansible_content, select_phases
from orchestrator.cli.sites import project_root
from orchestrator.history.record import recorded_run
from orchestrator.runner.apply import ApplyRequest, apply
from orchestrator.runner.cancel import Cancel, cancel_on_signals
from orchestrator.runner.plan_report import UNREACHABLE, PlanReport, plan_report
from orchestrator.runner.project import new_run_id
from orchestrator.spec.limits import DEFAULT_MAX_BYTES

EXIT_CODES = {
    "ok": exits.OK,
    "failed": exits.HOSTS_FAILED,
    "unreachable": exits.HOSTS_UNREACHABLE,
    "interrupted": exits.INTERRUPTED,
}


def exit_code(report: PlanReport) -> int:
    return EXIT_CODES[report.result]


def plan_command(
    site: SiteArg,
    phases: Phases = None,
    from_phase: FromPhase = None,
    limit: Limit = None,
    fmt: FormatOption = Format.table,
    max_spec_size: MaxSpecSize = DEFAULT_MAX_BYTES,
    max_findings: MaxFindings = DEFAULT_MAX_FINDINGS,
) -> None:
    """Show what apply would change, per host and phase (check + diff mode; nothing on the hosts changes).

    Exit codes: 0 the plan ran (changes or not), 2 invalid spec, 3 the check failed on a host, 4 hosts
    unreachable and none failed, 130 interrupted, 64 usage.
    """
    err = console(stderr=True)
    root = project_root()
    code = ansible_content(root, err)
    selected, explicit = select_phases(phases, from_phase, code)
    site_run = SiteRun.of(site, root, code, load(site, max_spec_size, max_findings), limit)
    site_run.require_controller(selected, err)
    # a check run while an apply or rollback changes the hosts would report a half-done state: the plan
    # holds the site's lock too (refused with exit 75 naming the holder), from render to record
    run_id = new_run_id()
    with hold_site_lock(root, site_run.spec.site, run_id, "plan", err):
        render_into(site_run.result, site_run.inventory_dir)
        # a phase without a playbook has nothing to check
        choices = site_run.choices(selected, implemented_only=True)
        req = site_run.request(choices, check=True, explicit=explicit)
        run_plan(req, fmt, err, run_id=run_id, spec_file=site_run.spec_file)


def run_plan(
    req: ApplyRequest,
    fmt: Format,
    err: Console,
    *,
    run_id: str | None = None,
    spec_file: Path | None = None,
) -> NoReturn:
    """Run the request's phases in check mode with progress on stderr (a live table on a terminal), then
    print the plan (or one JSON object) and exit with its code."""
    out = console()
    view: PlainProgress = PlainProgress(err)
    if fmt is Format.table and out.is_terminal:
        view = LiveProgress(out)
    cancel = Cancel()
    cancel.on_request = lambda signum: err.print(
        "interrupted: stopping the running check (nothing was changed)", markup=False
    )
    run_id = run_id or new_run_id()
    with recorded_run(
        "plan",
        req.site,
        req.project_root,
        spec_path=spec_file,
        content_root=req.content.root,
        check=True,
        run_id=run_id,
        say=lambda line: err.print(line, markup=False, highlight=False),
    ) as rec:
        with cancel_on_signals(cancel):
            run = apply(req, rec.observer(view), cancel, run_id=run_id)
        run.resume = None  # a plan is not resumed: run it again
        report = plan_report(run)
        rc = exit_code(report)
        rec.finish_run(run, rc)
    data = {**report.as_dict(), "exit": rc}
    (Path(run.artifacts) / "plan.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    if fmt is Format.json:
        print(json.dumps(data))
    else:
        print_plan_report(out, report, rc)
        for line in reach_lines(req.inventory_dir, report.hosts_in(UNREACHABLE)):
            out.print(line, style="magenta", markup=False, highlight=False)
    raise typer.Exit(rc)
