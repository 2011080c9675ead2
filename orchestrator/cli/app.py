"""`orchestrator` entry point."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli.check import EXIT_INVALID, check_file
from orchestrator.cli.output import DEFAULT_MAX_FINDINGS, console, print_findings, print_plan, summary_line
from orchestrator.cli.sim_cmds import sim_app
from orchestrator.cli.sites import SiteNotFound, example_sites, resolve_site
from orchestrator.planning.phases import plan_phases
from orchestrator.render import render
from orchestrator.spec.docs import spec_reference
from orchestrator.spec.limits import DEFAULT_MAX_BYTES, MAX_SPEC_SIZE_ENV, LoadLimits, parse_size
from orchestrator.spec.site import SiteSpec
from orchestrator.validation import ValidationResult, validate_file

EXIT_USAGE = 64

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Declarative Ascend NPU + vLLM-Ascend deployment: validate, render and apply a site spec.",
)

app.add_typer(sim_app, name="sim")

SiteArg = Annotated[str, typer.Argument(help="Site spec file, a folder with site.yaml, or a site name.")]


def _size(value: str | int) -> int:
    if isinstance(value, int):  # the default
        return value
    try:
        return parse_size(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


MaxSpecSize = Annotated[
    int,
    typer.Option(
        "--max-spec-size",
        parser=_size,
        metavar="SIZE",
        envvar=MAX_SPEC_SIZE_ENV,
        show_default="16MiB",
        help="Refuse spec files larger than this (bytes, or e.g. 64MiB).",
    ),
]
MaxFindings = Annotated[
    int,
    typer.Option("--max-findings", min=0, help="Print at most this many findings per spec; 0 prints all."),
]


def _load(site: str, max_spec_size: int, max_findings: int, quiet: bool = True) -> ValidationResult:
    """Resolve SITE, validate it, print the findings; exit 2 when the spec is invalid."""
    try:
        path = resolve_site(site)
    except SiteNotFound as exc:
        console(stderr=True).print(str(exc), markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    limits = LoadLimits(max_bytes=max_spec_size)
    result, code = check_file(path, console(stderr=True), limits, max_findings)
    if code:
        raise typer.Exit(code)
    if not quiet:
        console().print(summary_line(result), markup=False, style="green")
    return result


@app.command()
def validate(
    site: SiteArg,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
    max_spec_size: MaxSpecSize = DEFAULT_MAX_BYTES,
    max_findings: MaxFindings = DEFAULT_MAX_FINDINGS,
) -> None:
    """Check the spec (structure, cross-field rules, capacity) and print the derived plan."""
    result = _load(site, max_spec_size, max_findings, quiet)
    if not quiet and result.plan is not None:
        print_plan(console(), result.plan)


@app.command("render")
def render_cmd(
    site: SiteArg,
    out: Annotated[Path | None, typer.Option(help="Output folder (default: beside the spec).")] = None,
    max_spec_size: MaxSpecSize = DEFAULT_MAX_BYTES,
    max_findings: MaxFindings = DEFAULT_MAX_FINDINGS,
) -> None:
    """Write the Ansible inventory (hosts.yml, group_vars/, host_vars/) beside the spec."""
    result = _load(site, max_spec_size, max_findings)
    target = out or Path(result.filename).parent
    written = render(result, target)
    console().print(f"rendered {len(written)} files into {target}", markup=False)


@app.command()
def phases(
    site: SiteArg,
    max_spec_size: MaxSpecSize = DEFAULT_MAX_BYTES,
    max_findings: MaxFindings = DEFAULT_MAX_FINDINGS,
) -> None:
    """Print the phases an apply runs, the hosts each touches and what it does there."""
    result = _load(site, max_spec_size, max_findings)
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
    max_spec_size: MaxSpecSize = DEFAULT_MAX_BYTES,
    max_findings: MaxFindings = DEFAULT_MAX_FINDINGS,
) -> None:
    """Validate and render every site under inventories/, then print each one's phases."""
    failed = 0
    for path in example_sites():
        result = validate_file(path, LoadLimits(max_bytes=max_spec_size))
        con = console()
        con.rule(str(path))
        print_findings(console(stderr=True), result, max_findings)
        if not result.ok or result.spec is None or result.plan is None:
            failed += 1
            con.print(summary_line(result), markup=False)
            continue
        target = out / path.parent.name if out else path.parent
        written = render(result, target)
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
