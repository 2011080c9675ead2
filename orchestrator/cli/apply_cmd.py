"""`orchestrator apply SITE`: validate, render, confirm, run the phase playbooks, summarize.

Exit codes (exits.py): 0 every selected host finished every phase; 2 invalid spec (nothing run);
3 a host failed, or a phase stopped early or could not run; 4 hosts were unreachable and nothing failed
(3 wins over 4: a failure needs a person, an unreachable host may only need a retry); 130 interrupted;
75 another run holds the site's lock (nothing run; the holder is named);
64 usage (bad --phases/--from-phase/--limit, or no --yes without a terminal); 66 no such site;
73 render refused to overwrite a file it does not own; 1 declined at the prompt.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console

from orchestrator.cli import exits
from orchestrator.cli.apply_view import LiveProgress, PlainProgress, print_outcome
from orchestrator.cli.common import (
    Format,
    FormatOption,
    MaxFindings,
    MaxSpecSize,
    SiteArg,
    Yes,
    load,
    render_into,
)
from orchestrator.cli.locking import hold_site_lock
from orchestrator.cli.output import DEFAULT_MAX_FINDINGS, console
from orchestrator.cli.reach import reach_lines
from orchestrator.cli.site_run import FromPhase, Limit, Phases, SiteRun, ansible_content, select_phases
from orchestrator.cli.sites import project_root
from orchestrator.cli.worker_opt import WorkerOption, parse_worker
from orchestrator.history.lock import SiteLock
from orchestrator.history.record import recorded_run
from orchestrator.runner.apply import ApplyRequest, PhaseChoice, apply
from orchestrator.runner.cancel import Cancel, cancel_on_signals
from orchestrator.runner.model import Run, RunResult
from orchestrator.runner.project import new_run_id
from orchestrator.spec.limits import DEFAULT_MAX_BYTES

EXIT_CODES = {
    RunResult.OK: exits.OK,
    RunResult.FAILED: exits.HOSTS_FAILED,
    RunResult.UNREACHABLE: exits.HOSTS_UNREACHABLE,
    RunResult.INTERRUPTED: exits.INTERRUPTED,
}


def exit_code(run: Run) -> int:
    return EXIT_CODES[run.result]


def _confirm(choices: list[PhaseChoice], hosts: frozenset[str] | None) -> None:
    err = console(stderr=True)
    if not sys.stdin.isatty():
        raise typer.BadParameter(
            "apply changes hosts and asks first, but stdin is not a terminal. Fix: pass --yes to run "
            "without the question (or --check for a dry run).",
            param_hint="--yes",
        )
    err.print("orchestrator apply will run:", markup=False)
    for c in choices:
        if c.selected and c.implemented:
            on = [h for h in c.hosts if hosts is None or h in hosts]
            err.print(f"  {c.name:<10} on {', '.join(on) or 'no host (skipped)'}", markup=False)
    if not typer.confirm("Apply?", default=False, err=True):
        err.print("nothing was run", markup=False)
        raise typer.Exit(exits.DECLINED)


def apply_command(
    site: SiteArg,
    phases: Phases = None,
    from_phase: FromPhase = None,
    limit: Limit = None,
    check: Annotated[
        bool, typer.Option("--check", help="Dry run (ansible --check --diff): report, change nothing.")
    ] = False,
    yes: Yes = False,
    verify_weights: Annotated[
        bool,
        typer.Option(
            "--verify-weights",
            help="weights phase: hash every weight file again (default: only files whose size or mtime "
            "changed since their last verification).",
        ),
    ] = False,
    worker: WorkerOption = None,
    fmt: FormatOption = Format.table,
    max_spec_size: MaxSpecSize = DEFAULT_MAX_BYTES,
    max_findings: MaxFindings = DEFAULT_MAX_FINDINGS,
) -> None:
    """Validate, render, and run the phase playbooks (preflight, drivers, host, network, ...) on the site.

    Exit codes: 0 ok, 2 invalid spec, 3 a host failed (or a phase stopped), 4 hosts unreachable and
    none failed, 130 interrupted (the resume command is printed), 75 another run holds the site's lock,
    64 usage, 1 declined at the prompt.
    """
    err = console(stderr=True)
    root = project_root()
    code = ansible_content(root, err)
    selected, explicit = select_phases(phases, from_phase, code)
    site_run = SiteRun.of(site, root, code, load(site, max_spec_size, max_findings), limit)
    site_run.require_controller(selected, err)
    remote = parse_worker(worker, site_run.spec)
    run_id = new_run_id()
    with hold_site_lock(root, site_run.spec.site, run_id, "apply", err) as lock:
        render_into(site_run.result, site_run.inventory_dir)
        # not implemented phases too (reported as such), unless --phases lists phases
        choices = site_run.choices(selected, implemented_only=False)
        if not check and not yes:
            _confirm(choices, site_run.hosts)
        req = site_run.request(
            choices,
            check=check,
            explicit=explicit,
            extra_vars={"model_weights_verify_full": True} if verify_weights else {},
            worker=remote,
        )
        run_and_report(req, fmt, err, kind="apply", lock=lock, spec_file=site_run.spec_file)


def run_and_report(
    req: ApplyRequest,
    fmt: Format,
    err: Console,
    resume: bool = True,
    *,
    kind: str = "apply",
    lock: SiteLock | None = None,
    spec_file: Path | None = None,
) -> NoReturn:
    """Run the request's phases with live progress (stderr when the output is JSON), Ctrl-C stopping the
    running playbook, then print the summary (or one JSON object) and exit with the run's code. resume=False:
    the run prints no resume command (a rollback is resumed by rolling back again, not by an apply).

    The run is recorded in the history (kind: apply or rollback) under the run id of `lock`, the site's
    lock the caller holds; without one it takes the lock itself (or exits LOCKED)."""
    if lock is None or lock.run_id is None:
        with hold_site_lock(req.project_root, req.site, new_run_id(), kind, err) as held:
            _run_and_report(req, fmt, err, resume, kind, str(held.run_id), spec_file)
    _run_and_report(req, fmt, err, resume, kind, lock.run_id, spec_file)


def _run_and_report(
    req: ApplyRequest, fmt: Format, err: Console, resume: bool, kind: str, run_id: str, spec_file: Path | None
) -> NoReturn:
    out = console()
    view: PlainProgress = PlainProgress(err) if fmt is Format.json else PlainProgress(out)
    if fmt is Format.table and out.is_terminal:
        view = LiveProgress(out)
    cancel = Cancel()
    cancel.on_request = lambda signum: err.print(
        "interrupted: stopping the running phase (its playbook is killed); the run is recorded", markup=False
    )
    with recorded_run(
        kind,
        req.site,
        req.project_root,
        spec_path=spec_file,
        content_root=req.content.root,
        check=req.check,
        run_id=run_id,
        say=lambda line: err.print(line, markup=False, highlight=False),
    ) as rec:
        with cancel_on_signals(cancel):
            run = apply(req, rec.observer(view), cancel, run_id=run_id)
        if not resume:
            run.resume = None
        rc = exit_code(run)
        rec.finish_run(run, rc)
    if fmt is Format.json:
        print(json.dumps(run.as_dict()))
    else:
        print_outcome(out, run, rc)
        gone = {f.host for f in run.failures if f.unreachable and f.host}
        for line in reach_lines(req.inventory_dir, gone):
            out.print(line, style="magenta", markup=False, highlight=False)
    raise typer.Exit(rc)
