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
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
import yaml
from rich.console import Console

from orchestrator.cli import exits
from orchestrator.cli.apply_view import LiveProgress, PlainProgress, print_outcome
from orchestrator.cli.common import (
    Format,
    MaxFindings,
    MaxSpecSize,
    RunFormat,
    SiteArg,
    Yes,
    load,
    render_into,
)
from orchestrator.cli.locking import hold_site_lock
from orchestrator.cli.output import DEFAULT_MAX_FINDINGS, console
from orchestrator.cli.sites import project_root
from orchestrator.history.lock import SiteLock
from orchestrator.history.record import recorded_run
from orchestrator.planning.phases import PHASE_NAMES, plan_phases
from orchestrator.render import render_texts
from orchestrator.runner.apply import ApplyRequest, PhaseChoice, apply
from orchestrator.runner.cancel import Cancel, cancel_on_signals
from orchestrator.runner.model import Run, RunResult
from orchestrator.runner.project import Content, ContentMissing, content, new_run_id, not_implemented_message
from orchestrator.spec.limits import DEFAULT_MAX_BYTES

EXIT_CODES = {
    RunResult.OK: exits.OK,
    RunResult.FAILED: exits.HOSTS_FAILED,
    RunResult.UNREACHABLE: exits.HOSTS_UNREACHABLE,
    RunResult.INTERRUPTED: exits.INTERRUPTED,
}


def exit_code(run: Run) -> int:
    return EXIT_CODES[run.result]


def _names(value: str) -> list[str]:
    return list(dict.fromkeys(n.strip() for n in value.split(",") if n.strip()))


def select_phases(phases: str | None, from_phase: str | None, code: Content) -> tuple[set[str], bool]:
    """The phases to run and whether they were listed explicitly; usage errors name the fix."""
    known = ", ".join(PHASE_NAMES)
    if phases is not None and from_phase is not None:
        raise typer.BadParameter("use either --phases or --from-phase, not both", param_hint="--phases")
    wanted = _names(phases) if phases is not None else [from_phase] if from_phase is not None else []
    hint = "--phases" if phases is not None else "--from-phase"
    if phases is not None and not wanted:
        raise typer.BadParameter(f"name at least one phase ({known})", param_hint=hint)
    for name in wanted:
        if name not in PHASE_NAMES:
            raise typer.BadParameter(f"no phase '{name}'; the phases are {known}", param_hint=hint)
        if not code.implemented(name):
            ready = ", ".join(p for p in PHASE_NAMES if code.implemented(p))
            raise typer.BadParameter(
                f"phase {name} is {not_implemented_message(name)}; phases that run today: {ready}",
                param_hint=hint,
            )
    if phases is not None:
        return set(wanted), True
    if from_phase is not None:
        return set(PHASE_NAMES[PHASE_NAMES.index(from_phase) :]), False
    return set(PHASE_NAMES), False


def _group_hosts(groups: dict[str, Any], name: str, seen: set[str]) -> set[str]:
    node = groups.get(name) or {}
    hosts = set(node.get("hosts") or {})
    for child in node.get("children") or {}:
        if child not in seen:
            hosts |= _group_hosts(groups, child, seen | {child})
    return hosts


def resolve_limit(limit: str | None, hosts_yml: str, hosts: Iterable[str]) -> frozenset[str] | None:
    """--limit: host and group names of the rendered inventory, comma-separated."""
    if limit is None:
        return None
    groups = (yaml.safe_load(hosts_yml) or {}).get("all", {}).get("children") or {}
    known = set(hosts)
    chosen: set[str] = set()
    for name in _names(limit):
        if name in known:
            chosen.add(name)
        elif name in groups:
            chosen |= _group_hosts(groups, name, {name})
        else:
            raise typer.BadParameter(
                f"'{name}' is neither a host nor a group of this site; hosts: {', '.join(sorted(known))}; "
                f"groups: {', '.join(sorted(groups))}",
                param_hint="--limit",
            )
    if not chosen:
        raise typer.BadParameter("selects no host", param_hint="--limit")
    return frozenset(chosen)


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
    phases: Annotated[
        str | None,
        typer.Option("--phases", metavar="P,...", help=f"Only these phases ({', '.join(PHASE_NAMES)})."),
    ] = None,
    from_phase: Annotated[
        str | None, typer.Option("--from-phase", metavar="P", help="This phase and every later one.")
    ] = None,
    limit: Annotated[
        str | None,
        typer.Option("--limit", metavar="HOSTS", help="Host and group names, comma-separated."),
    ] = None,
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
    fmt: RunFormat = Format.text,
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
    result = load(site, max_spec_size, max_findings)
    if result.spec is None or result.plan is None:  # load exits on an invalid spec
        raise typer.Exit(exits.INVALID_SPEC)
    run_id = new_run_id()
    with hold_site_lock(root, result.spec.site, run_id, "apply", err) as lock:
        inventory_dir = Path(result.filename).parent
        hosts = resolve_limit(limit, render_texts(result)["hosts.yml"], (h.name for h in result.plan.hosts))
        render_into(result, inventory_dir)
        choices = [
            PhaseChoice(p.name, p.issue, p.hosts, p.name in selected, code.implemented(p.name))
            for p in plan_phases(result.spec, result.plan)
            if p.name in selected  # not implemented ones too (reported as such), unless --phases lists phases
        ]
        if not check and not yes:
            _confirm(choices, hosts)
        req = ApplyRequest(
            site=result.spec.site,
            site_arg=site,
            project_root=root,
            inventory_dir=inventory_dir.resolve(),
            content=code,
            phases=choices,
            hosts=hosts,
            limit_arg=limit,
            check=check,
            explicit_phases=explicit,
            extra_vars={"model_weights_verify_full": True} if verify_weights else {},
        )
        run_and_report(req, fmt, err, kind="apply", lock=lock, spec_file=Path(result.filename))


def ansible_content(root: Path, err: Console) -> Content:
    """The playbooks and roles to run, or exit NO_SITE saying where they were looked for."""
    try:
        return content(root)
    except ContentMissing as exc:
        err.print(str(exc), markup=False)
        raise typer.Exit(exits.NO_SITE) from None


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
    if fmt is Format.text and out.is_terminal:
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
    raise typer.Exit(rc)
