"""Pieces the commands share: the SITE argument, spec-size and findings options, output format, and
loading/rendering a site with the documented exit codes.

Light to import (the options build every command's --help): validation and render are imported by load()
and render_into()."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from orchestrator.cli import exits
from orchestrator.cli.output import console, summary_line
from orchestrator.cli.sites import SiteNotFound, resolve_site
from orchestrator.spec.limits import MAX_SPEC_SIZE_ENV, LoadLimits, parse_size

if TYPE_CHECKING:
    from orchestrator.pipeline import ValidationResult
    from orchestrator.render import RenderOutcome

EXIT_INVALID = exits.INVALID_SPEC
EXIT_CANTCREAT = exits.CANT_CREATE


class Format(StrEnum):
    """--format, one vocabulary for every command: table (for people: tables and plain lines) or json (for
    tools). drift adds junit and prometheus to these two."""

    table = "table"
    json = "json"


FORMAT_ALIASES = {"text": Format.table}
"""Accepted and not shown: what validate, apply and rollback called the format for people before
(`--format text` in a script keeps working)."""


def parse_format(value: str | Format) -> Format:
    if isinstance(value, Format):  # the default
        return value
    word = value.strip().lower()
    try:
        return FORMAT_ALIASES.get(word) or Format(word)
    except ValueError:
        choices = ", ".join(repr(f.value) for f in Format)
        raise typer.BadParameter(f"{value!r} is not one of {choices}.") from None


def format_option(json_help: str = "one object on stdout, nothing else") -> Any:
    """--format table|json; `json_help` says what json prints."""
    return typer.Option(
        "--format",
        parser=parse_format,
        metavar=f"<{'|'.join(Format)}>",
        help=f"table (for people) or json ({json_help}).",
    )


SiteArg = Annotated[
    str, typer.Argument(metavar="SITE", help="Site spec file, a folder with site.yaml, or a site name.")
]


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
        show_default=False,  # typer would show "(16MiB)"
        help="Refuse spec files larger than this (bytes, or e.g. 64MiB; default 16MiB).",
    ),
]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask; required when stdin is not a terminal.")]
FormatOption = Annotated[Format, format_option()]
MaxFindings = Annotated[
    int,
    typer.Option(
        "--max-findings", min=0, metavar="N", help="Print at most this many findings per spec; 0 prints all."
    ),
]


def resolve(site: str) -> Path:
    try:
        return resolve_site(site)
    except SiteNotFound as exc:
        console(stderr=True).print(str(exc), markup=False)
        raise typer.Exit(exits.NO_SITE) from None


def load(site: str, max_spec_size: int, max_findings: int, quiet: bool = True) -> ValidationResult:
    """Resolve SITE, validate it, print the findings; exit 2 when the spec is invalid."""
    from orchestrator.cli.check import check_file

    path = resolve(site)
    result, code = check_file(path, console(stderr=True), LoadLimits(max_bytes=max_spec_size), max_findings)
    if code:
        raise typer.Exit(code)
    if not quiet:
        console().print(summary_line(result), markup=False, style="green")
    return result


def render_into(result: ValidationResult, target: Path, force: bool = False) -> RenderOutcome:
    from orchestrator.render import RenderConflict, as_input, render_inventory

    err = console(stderr=True)
    try:
        outcome = render_inventory(as_input(result), target, force)
    except RenderConflict as exc:
        err.print(str(exc), markup=False, style="bold red")
        raise typer.Exit(EXIT_CANTCREAT) from None
    for rel in outcome.forced:
        err.print(f"warning: {target / rel} was edited by hand; replaced or removed (--force)", markup=False)
    return outcome
