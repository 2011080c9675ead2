"""`orchestrator` entry point."""

from __future__ import annotations

import json
import os
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli import exits
from orchestrator.cli.apply_cmd import apply_command
from orchestrator.cli.bench_cmd import bench_command
from orchestrator.cli.common import (
    EXIT_INVALID,
    Format,
    MaxFindings,
    MaxSpecSize,
    SiteArg,
    load,
    render_into,
    resolve,
)
from orchestrator.cli.doctor_cmd import doctor_command
from orchestrator.cli.drift_cmd import drift_app
from orchestrator.cli.findings_json import result_json
from orchestrator.cli.history_cmd import history_command
from orchestrator.cli.output import DEFAULT_MAX_FINDINGS, console, print_findings, print_plan, summary_line
from orchestrator.cli.phase_lines import phase_head
from orchestrator.cli.plan_cmd import plan_command
from orchestrator.cli.rollback_cmd import rollback_command
from orchestrator.cli.show_cmd import show_command
from orchestrator.cli.sim_cmds import sim_app
from orchestrator.cli.sites import ROOT_ENV, example_sites, set_root
from orchestrator.cli.status_cmd import status_command
from orchestrator.cli.weights_cmd import weights_app
from orchestrator.doctor.troubleshooting import troubleshooting_reference
from orchestrator.planning.phases import plan_phases
from orchestrator.render import render_texts
from orchestrator.spec.docs import spec_reference
from orchestrator.spec.limits import DEFAULT_MAX_BYTES, LoadLimits
from orchestrator.spec.site import SiteSpec
from orchestrator.validation import validate_file

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Declarative Ascend NPU + vLLM-Ascend deployment: validate, render and apply a site spec.",
)

app.add_typer(sim_app, name="sim")
app.add_typer(weights_app, name="weights")
app.add_typer(drift_app, name="drift")
app.command("apply")(apply_command)
app.command("rollback")(rollback_command)
app.command("plan")(plan_command)
app.command("history")(history_command)
app.command("show")(show_command)
app.command("status")(status_command)
app.command("doctor")(doctor_command)
app.command("bench")(bench_command)


def _version() -> str:
    try:
        return version("ascend-orchestrator")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _show_version(value: bool) -> None:
    if value:
        print(f"orchestrator {_version()}")
        raise typer.Exit(exits.OK)


@app.callback()
def _global(
    root: Annotated[
        Path | None,
        typer.Option(
            "--root",
            envvar=ROOT_ENV,
            help="Project root holding inventories/ and .orchestrator/ (default: the nearest folder at or "
            "above the current one that has inventories/).",
        ),
    ] = None,
    show_version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    set_root(root)


@app.command()
def validate(
    site: SiteArg,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
    fmt: Annotated[
        Format, typer.Option("--format", help="text (people) or json (tools: every finding, no plan).")
    ] = Format.text,
    max_spec_size: MaxSpecSize = DEFAULT_MAX_BYTES,
    max_findings: MaxFindings = DEFAULT_MAX_FINDINGS,
) -> None:
    """Check the spec (structure, cross-field rules, capacity) and print the derived plan."""
    if fmt is Format.json:
        result = validate_file(resolve(site), LoadLimits(max_bytes=max_spec_size))
        print(result_json(result))
        raise typer.Exit(exits.OK if result.ok else EXIT_INVALID)
    result = load(site, max_spec_size, max_findings, quiet)
    if not quiet and result.plan is not None:
        print_plan(console(), result.plan)


@app.command("render")
def render_cmd(
    site: SiteArg,
    out: Annotated[Path | None, typer.Option(help="Output folder (default: beside the spec).")] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Replace (or remove) inventory files edited by hand since render wrote them."
        ),
    ] = False,
    max_spec_size: MaxSpecSize = DEFAULT_MAX_BYTES,
    max_findings: MaxFindings = DEFAULT_MAX_FINDINGS,
) -> None:
    """Write the Ansible inventory (hosts.yml, group_vars/, host_vars/) beside the spec.

    Only files render wrote are replaced or removed (recorded in .inventory-manifest.json); your own files
    in the folder (vault.yml, custom group_vars) are left alone.
    """
    result = load(site, max_spec_size, max_findings)
    target = out or Path(result.filename).parent
    outcome = render_into(result, target, force)
    console().print(f"rendered {len(outcome.files)} files into {target}", markup=False)


@app.command()
def phases(
    site: SiteArg,
    max_spec_size: MaxSpecSize = DEFAULT_MAX_BYTES,
    max_findings: MaxFindings = DEFAULT_MAX_FINDINGS,
) -> None:
    """Print the phases an apply runs, the hosts each touches and what it does there."""
    result = load(site, max_spec_size, max_findings)
    if result.spec is None or result.plan is None:  # _load exits on an invalid spec
        raise typer.Exit(EXIT_INVALID)
    out = console()
    for i, ph in enumerate(plan_phases(result.spec, result.plan), 1):
        out.print(f"{i:>2}. {phase_head(ph)}\n      {ph.summary}", markup=False)


@app.command()
def schema() -> None:
    """Print the JSON Schema of the site spec (for editor completion)."""
    print(json.dumps(SiteSpec.model_json_schema(), indent=2, sort_keys=True))


@app.command()
def docs(
    write: Annotated[Path | None, typer.Option(help="Write the reference to this file.")] = None,
    check: Annotated[Path | None, typer.Option(help="Fail if this file is not up to date.")] = None,
    troubleshooting: Annotated[
        bool,
        typer.Option(
            "--troubleshooting",
            help="The troubleshooting guide (docs/troubleshooting.md, from doctor's rules) instead.",
        ),
    ] = False,
) -> None:
    """Print (or write, or check) the spec reference generated from the models, or with --troubleshooting
    the troubleshooting guide generated from doctor's rules."""
    text = troubleshooting_reference() if troubleshooting else spec_reference()
    if check is not None:
        if not check.is_file() or check.read_text(encoding="utf-8") != text:
            flag = " --troubleshooting" if troubleshooting else ""
            console(stderr=True).print(
                f"{check} is stale: run 'orchestrator docs{flag} --write {check}'", markup=False
            )
            raise typer.Exit(1)
        return
    if write is not None:
        write.parent.mkdir(parents=True, exist_ok=True)
        write.write_text(text, encoding="utf-8")
        return
    print(text)


@app.command()
def examples(
    write: Annotated[
        bool, typer.Option("--write", help="Re-render the committed inventories in place (deliberate).")
    ] = False,
    out: Annotated[
        Path | None, typer.Option(help="Render into OUT/<site>/ instead (nothing committed changes).")
    ] = None,
    max_spec_size: MaxSpecSize = DEFAULT_MAX_BYTES,
    max_findings: MaxFindings = DEFAULT_MAX_FINDINGS,
) -> None:
    """Validate every site under inventories/, print its plan and phases, and check that its committed
    inventory is what render writes today (exit 1 when stale). Writes nothing unless --write or --out."""
    failed = stale = 0
    for path in example_sites():
        result = validate_file(path, LoadLimits(max_bytes=max_spec_size))
        con = console()
        con.rule(str(path))
        print_findings(console(stderr=True), result, max_findings)
        if not result.ok or result.spec is None or result.plan is None:
            failed += 1
            con.print(summary_line(result), markup=False)
            continue
        print_plan(con, result.plan)
        if write or out is not None:
            target = out / path.parent.name if out else path.parent
            written = render_into(result, target).files
            con.print(f"rendered {len(written)} files into {target}", markup=False)
        else:
            changed = _stale_files(path.parent, render_texts(result))
            if changed:
                stale += 1
                con.print(
                    f"STALE: {', '.join(changed)} differ from what render writes; review the change, then "
                    "run `orchestrator examples --write`",
                    markup=False,
                )
            else:
                con.print("committed inventory is up to date", markup=False)
        con.print("phases:", markup=False)
        for i, ph in enumerate(plan_phases(result.spec, result.plan), 1):
            con.print(f"  {i:>2}. {phase_head(ph)} {ph.summary}", markup=False)
    if failed:
        raise typer.Exit(EXIT_INVALID)
    if stale:
        raise typer.Exit(1)


def _stale_files(folder: Path, texts: dict[str, str]) -> list[str]:
    out = []
    for rel, text in sorted(texts.items()):
        target = folder / rel
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            out.append(rel)
    return out


def main(argv: list[str] | None = None) -> None:
    """Run the CLI with the documented exit codes (orchestrator/cli/exits.py); never a stack trace."""
    try:
        rc = app(args=argv, prog_name="orchestrator", standalone_mode=False)
    except typer.TyperException as exc:  # a bad command line (typer's usage errors), shown with the usage
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        else:
            print(f"orchestrator: {exc.format_message()}", file=sys.stderr)
        sys.exit(exits.USAGE)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        print("orchestrator: interrupted", file=sys.stderr)
        sys.exit(exits.INTERRUPTED)
    except Exception as exc:  # a user never sees a stack trace unless they ask for it
        if os.environ.get("ORCHESTRATOR_DEBUG"):
            raise
        print(
            f"orchestrator: internal error: {type(exc).__name__}: {exc}\n"
            "This is a bug; run again with ORCHESTRATOR_DEBUG=1 for the traceback and report it.",
            file=sys.stderr,
        )
        sys.exit(exits.INTERNAL)
    sys.exit(rc if isinstance(rc, int) else exits.OK)


if __name__ == "__main__":
    main()
