"""`orchestrator drift SITE`: the apply's phases in check + diff mode, read as drift (made for
schedules: it asks nothing, changes nothing on the hosts, and exits with a code a scheduler acts on).

Exit codes (orchestrator/drift/report.py has the rule): 0 no drift; 3 drift found, or a check failed on a
host (drift wins over unreachable hosts: the report lists both); 4 hosts unreachable and no drift found on
the others; 2 invalid spec (nothing ran); 130 interrupted; 64 usage; 66 no such site. With the spec's
drift.fail_on_drift false, drift alone exits 0 (4 with unreachable hosts); a failed check still exits 3.
The report also goes to the spec's drift.outputs (orchestrator/drift/deliver.py).

`orchestrator drift SITE ...` is short for `orchestrator drift check SITE ...`; `orchestrator drift schedule`
installs a systemd timer (or prints a cron line) that runs it.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from orchestrator.cli import exits
from orchestrator.cli.apply_view import LiveProgress, PlainProgress
from orchestrator.cli.common import Format, MaxFindings, MaxSpecSize, SiteArg, load, render_into, resolve
from orchestrator.cli.drift_schedule_cmd import schedule_command
from orchestrator.cli.groups import App, HelpGroup
from orchestrator.cli.heal_cmd import HEAL_PHASES, heal
from orchestrator.cli.locking import hold_site_lock
from orchestrator.cli.output import DEFAULT_MAX_FINDINGS, console
from orchestrator.cli.reach import reach_lines
from orchestrator.cli.site_run import Limit, Phases, SiteRun, ansible_content, select_phases
from orchestrator.cli.sites import project_root
from orchestrator.drift.deliver import deliver
from orchestrator.drift.outputs_json import report_json
from orchestrator.drift.outputs_junit import junit_text, write_junit
from orchestrator.drift.outputs_prometheus import (
    registry_for,
    run_only_registry,
    textfile_text,
    write_textfile,
)
from orchestrator.drift.outputs_table import print_table
from orchestrator.drift.report import EXIT_DRIFT, EXIT_UNREACHABLE, Cell, CellState, DriftReport, build_report
from orchestrator.history.record import recorded_run
from orchestrator.runner.apply import apply
from orchestrator.runner.cancel import Cancel, cancel_on_signals
from orchestrator.runner.project import new_run_id
from orchestrator.spec.limits import DEFAULT_MAX_BYTES
from orchestrator.validation.controller import DRIFT

DEFAULT_COMMAND = "check"


class DriftFormat(StrEnum):
    table = "table"
    json = "json"
    junit = "junit"
    prometheus = "prometheus"


class DriftGroup(HelpGroup):
    """`drift SITE ...` runs the check command; `drift schedule ...` and `drift check ...` are named."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = [DEFAULT_COMMAND, *args]
        return super().parse_args(ctx, args)


drift_app = App(
    cls=DriftGroup,
    no_args_is_help=True,
    help="Check the site for drift (every phase in check + diff mode) or schedule that check. "
    "`orchestrator drift SITE` is short for `orchestrator drift check SITE`.",
)


def _write_invalid(site: str, textfile: Path | None, started: float) -> None:
    """An invalid spec still leaves its exit code in the textfile (dashboards see that the check broke)."""
    if textfile is None:
        return
    try:
        label = resolve(site).parent.name
    except typer.Exit:
        return
    reg = run_only_registry(label, datetime.now(UTC), time.monotonic() - started, exits.INVALID_SPEC)
    write_textfile(reg, textfile)


def _emit(report: DriftReport, fmt: DriftFormat, junit: Path | None, textfile: Path | None) -> None:
    if junit is not None:
        write_junit(report, junit)
    if textfile is not None:
        write_textfile(registry_for(report), textfile)
    if report.artifacts:
        (Path(report.artifacts) / "drift.json").write_text(report_json(report, indent=2) + "\n", "utf-8")
    if fmt is DriftFormat.json:
        print(report_json(report))
    elif fmt is DriftFormat.junit:
        print(junit_text(report), end="")
    elif fmt is DriftFormat.prometheus:
        print(textfile_text(registry_for(report)), end="")
    else:
        print_table(console(), report)


@drift_app.command(DEFAULT_COMMAND)
def drift_command(
    site: SiteArg,
    phases: Phases = None,
    limit: Limit = None,
    fmt: Annotated[
        DriftFormat,
        typer.Option(
            "--format",
            help="stdout: table (people), json, junit (JUnit XML) or prometheus (textfile format).",
        ),
    ] = DriftFormat.table,
    junit: Annotated[
        Path | None,
        typer.Option(
            "--junit", metavar="FILE", help="Also write JUnit XML here (one test case per host x phase)."
        ),
    ] = None,
    textfile: Annotated[
        Path | None,
        typer.Option(
            "--textfile",
            metavar="FILE",
            help="Also write Prometheus metrics here, for node_exporter's textfile collector (*.prom).",
        ),
    ] = None,
    heal_opt: Annotated[
        bool,
        typer.Option(
            "--heal",
            help="Then, when the serve or gateway phase drifted or failed, run `orchestrator heal`: "
            "restart replicas that are down or unhealthy (as units, one at a time, through the gates) and "
            "add missing heads back to the gateway. Nothing else is changed.",
        ),
    ] = False,
    max_spec_size: MaxSpecSize = DEFAULT_MAX_BYTES,
    max_findings: MaxFindings = DEFAULT_MAX_FINDINGS,
) -> None:
    """Run every phase of an apply (or those of --phases) in check + diff mode, changing nothing on the
    hosts, and report drift per host and phase.

    Exit codes: 0 no drift, 3 drift found (or a check failed; drift wins over unreachable hosts), 4 hosts
    unreachable and no drift found, 2 invalid spec, 130 interrupted, 64 usage. With --heal, when a heal
    ran: 0 when it healed and no other phase drifted, 3 otherwise.
    """
    started = time.monotonic()
    err = console(stderr=True)
    if textfile is not None and textfile.suffix != ".prom":
        raise typer.BadParameter(
            f"{textfile} does not end in .prom; node_exporter's textfile collector reads only *.prom files. "
            "Fix: name it e.g. orchestrator_drift_SITE.prom.",
            param_hint="--textfile",
        )
    if heal_opt and fmt is not DriftFormat.table:
        raise typer.BadParameter(
            f"--heal prints the heal's summary after the report, which {fmt.value} output cannot hold. Fix: "
            "leave --format out (table) and take the report from --junit FILE or --textfile FILE.",
            param_hint="--heal",
        )
    root = project_root()
    code = ansible_content(root, err)
    selected, explicit = select_phases(phases, None, code)
    try:
        result = load(site, max_spec_size, max_findings)
    except typer.Exit as exc:
        if exc.exit_code == exits.INVALID_SPEC:
            _write_invalid(site, textfile, started)
        raise
    site_run = SiteRun.of(site, root, code, result, limit)
    try:
        site_run.require_controller(selected | {DRIFT}, err)
    except typer.Exit:
        _write_invalid(site, textfile, started)
        raise
    hosts = site_run.hosts
    # a check run while an apply or rollback changes the hosts would report a half-done state: drift holds
    # the site's lock too (refused with exit 75 naming the holder), from render to record
    run_id = new_run_id()
    with hold_site_lock(root, site_run.spec.site, run_id, "drift", err):
        render_into(result, site_run.inventory_dir)
        choices = site_run.choices(selected, implemented_only=True)
        req = site_run.request(
            choices,
            check=True,
            explicit=explicit,
            extra_vars={"vllm_serve_drift_health": True},  # replica health is fleet drift (roles/vllm_serve)
        )
        out = console()
        progress_to = out if fmt is DriftFormat.table else err
        view = (
            LiveProgress(out) if fmt is DriftFormat.table and out.is_terminal else PlainProgress(progress_to)
        )
        cancel = Cancel()
        cancel.on_request = lambda signum: err.print("interrupted: stopping the running check", markup=False)
        with recorded_run(
            "drift",
            req.site,
            req.project_root,
            spec_path=site_run.spec_file,
            content_root=req.content.root,
            check=True,
            run_id=run_id,
            say=lambda line: err.print(line, markup=False, highlight=False),
        ) as rec:
            with cancel_on_signals(cancel):
                run = apply(req, rec.observer(view), cancel, run_id=run_id)
            planned = {c.name: [h for h in c.hosts if hosts is None or h in hosts] for c in choices}
            report = build_report(run, hosts_by_phase=planned, seconds=time.monotonic() - started)
            rec.finish_run(run, report.exit_code, result=report.verdict)
        _emit(report, fmt, junit, textfile)
        for line in reach_lines(site_run.inventory_dir, report.unreachable_hosts):
            err.print(line, style="magenta", markup=False, highlight=False)
        _deliver(site_run, report, err)
    rc = _exit_code(report, site_run.spec.drift.fail_on_drift, err)
    if heal_opt and heals(report):
        rc = _heal_after(site_run, report, err)
    raise typer.Exit(rc)


def _bad(report: DriftReport) -> list[Cell]:
    return report.with_state(CellState.DRIFT) + report.with_state(CellState.FAILED)


def heals(report: DriftReport) -> bool:
    """Whether the report asks for a heal: drift or a failed check in the serve or gateway phase."""
    return any(c.phase in HEAL_PHASES for c in _bad(report))


def _heal_after(site_run: SiteRun, report: DriftReport, err: Console) -> int:
    """`orchestrator heal` after the check; 0 when it healed and no other phase drifted or failed."""
    err.print("heal: the serve or gateway phase drifted; restarting what is down", markup=False)
    try:
        heal(site_run, Format.table, err)
    except typer.Exit as exc:
        rc = int(exc.exit_code or 0)
    else:  # pragma: no cover - heal always exits with its code
        rc = exits.OK
    others = [c for c in _bad(report) if c.phase not in HEAL_PHASES]
    return rc if rc != exits.OK else (EXIT_DRIFT if others else exits.OK)


def _deliver(site_run: SiteRun, report: DriftReport, err: Console) -> None:
    """The spec's drift.outputs (files, webhooks): a failed delivery warns, the verdict stands."""
    text = report_json(report, indent=2) + "\n"
    for d in deliver(
        text,
        site_run.spec.drift.outputs,
        root=site_run.root,
        spec_dir=site_run.spec_file.parent,
        site=report.site,
        run_id=report.run_id,
    ):
        if d.ok:
            err.print(f"drift report: {d.output}: {d.detail}", markup=False, highlight=False)
        else:
            err.print(
                f"warning: the drift report did not reach {d.output}: {d.detail}. Fix that output in the "
                "spec or its reference; the verdict and exit code are unaffected.",
                markup=False,
                highlight=False,
            )


def _exit_code(report: DriftReport, fail_on_drift: bool, err: Console) -> int:
    """The report's code, except for drift without a failed check when drift.fail_on_drift is false: 0, or
    4 when hosts were unreachable too."""
    if not fail_on_drift and report.exit_code == EXIT_DRIFT and not report.failed_hosts:
        code = EXIT_UNREACHABLE if report.unreachable_hosts else exits.OK
        err.print(
            f"drift found; exit {code} because drift.fail_on_drift is false (the report, its JSON and the "
            "textfile say drift)",
            markup=False,
        )
        return code
    return report.exit_code


drift_app.command("schedule")(schedule_command)
