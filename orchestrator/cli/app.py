"""`orchestrator` entry point."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli.output import console, print_findings, print_plan, summary_line
from orchestrator.cli.sim_cmds import sim_app
from orchestrator.cli.sites import SiteNotFound, example_sites, resolve_site
from orchestrator.planning.phases import plan_phases
from orchestrator.render import RenderConflict, RenderOutcome, render_inventory
from orchestrator.spec.docs import spec_reference
from orchestrator.spec.site import SiteSpec
from orchestrator.validation import ValidationResult, validate_file

EXIT_INVALID = 2
EXIT_USAGE = 64
EXIT_CANTCREAT = 73  # sysexits EX_CANTCREAT: the output folder holds files render must not overwrite

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Declarative Ascend NPU + vLLM-Ascend deployment: validate, render and apply a site spec.",
)

app.add_typer(sim_app, name="sim")

SiteArg = Annotated[str, typer.Argument(help="Site spec file, a folder with site.yaml, or a site name.")]


def _load(site: str) -> ValidationResult:
    try:
        path = resolve_site(site)
    except SiteNotFound as exc:
        console(stderr=True).print(str(exc), markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    return validate_file(path)


def _report(result: ValidationResult, quiet: bool = False) -> None:
    err = console(stderr=True)
    print_findings(err, result)
    if not result.ok:
        err.print(summary_line(result), markup=False, style="bold red")
        raise typer.Exit(EXIT_INVALID)
    if not quiet:
        console().print(summary_line(result), markup=False, style="green")


@app.command()
def validate(site: SiteArg, quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False) -> None:
    """Check the spec (structure, cross-field rules, capacity) and print the derived plan."""
    result = _load(site)
    _report(result, quiet)
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
) -> None:
    """Write the Ansible inventory (hosts.yml, group_vars/, host_vars/) beside the spec.

    Only files render wrote are replaced or removed (recorded in .inventory-manifest.json); your own files
    in the folder (vault.yml, custom group_vars) are left alone.
    """
    result = _load(site)
    _report(result, quiet=True)
    target = out or Path(result.filename).parent
    outcome = _render_into(result, target, force)
    console().print(f"rendered {len(outcome.files)} files into {target}", markup=False)


def _render_into(result: ValidationResult, target: Path, force: bool = False) -> RenderOutcome:
    err = console(stderr=True)
    try:
        outcome = render_inventory(result, target, force)
    except RenderConflict as exc:
        err.print(str(exc), markup=False, style="bold red")
        raise typer.Exit(EXIT_CANTCREAT) from None
    for rel in outcome.forced:
        err.print(f"warning: {target / rel} was edited by hand; replaced or removed (--force)", markup=False)
    return outcome


@app.command()
def phases(site: SiteArg) -> None:
    """Print the phases an apply runs, the hosts each touches and what it does there."""
    result = _load(site)
    _report(result, quiet=True)
    assert result.spec is not None and result.plan is not None
    out = console()
    for i, ph in enumerate(plan_phases(result.spec, result.plan), 1):
        hosts = ", ".join(ph.hosts) if ph.hosts else "skipped"
        out.print(f"{i:>2}. {ph.name:<10} [{hosts}]\n      {ph.summary}", markup=False)


@app.command()
def schema() -> None:
    """Print the JSON Schema of the site spec (for editor completion)."""
    print(json.dumps(SiteSpec.model_json_schema(), indent=2, sort_keys=True))


@app.command()
def docs(
    write: Annotated[Path | None, typer.Option(help="Write the reference to this file.")] = None,
    check: Annotated[Path | None, typer.Option(help="Fail if this file is not up to date.")] = None,
) -> None:
    """Print (or write, or check) the spec reference generated from the models."""
    text = spec_reference()
    if check is not None:
        if not check.is_file() or check.read_text(encoding="utf-8") != text:
            console(stderr=True).print(
                f"{check} is stale: run 'orchestrator docs --write {check}'", markup=False
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
    out: Annotated[
        Path | None, typer.Option(help="Render into OUT/<site>/ instead of beside each spec.")
    ] = None,
) -> None:
    """Validate and render every site under inventories/, then print each one's phases."""
    failed = 0
    for path in example_sites():
        result = validate_file(path)
        con = console()
        con.rule(str(path))
        print_findings(console(stderr=True), result)
        if not result.ok or result.spec is None or result.plan is None:
            failed += 1
            con.print(summary_line(result), markup=False)
            continue
        target = out / path.parent.name if out else path.parent
        written = _render_into(result, target).files
        print_plan(con, result.plan)
        con.print(f"rendered {len(written)} files into {target}; phases:", markup=False)
        for i, ph in enumerate(plan_phases(result.spec, result.plan), 1):
            con.print(
                f"  {i:>2}. {ph.name:<10} [{', '.join(ph.hosts) or 'skipped'}] {ph.summary}", markup=False
            )
    if failed:
        raise typer.Exit(EXIT_INVALID)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # a user never sees a stack trace unless they ask for it
        if os.environ.get("ORCHESTRATOR_DEBUG"):
            raise
        print(
            f"orchestrator: internal error: {type(exc).__name__}: {exc}\n"
            "This is a bug; run again with ORCHESTRATOR_DEBUG=1 for the traceback and report it.",
            file=sys.stderr,
        )
        sys.exit(70)


if __name__ == "__main__":
    main()
