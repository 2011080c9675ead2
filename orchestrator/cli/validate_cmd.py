"""`orchestrator validate SITE`: the findings of the spec and its plan, and what this machine would refuse.

Light to import (`orchestrator validate --help` builds its options from this module alone): the pipeline is
imported by the command when it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from orchestrator.cli import exits
from orchestrator.cli.common import (
    EXIT_INVALID,
    Format,
    MaxFindings,
    MaxSpecSize,
    SiteArg,
    format_option,
    load,
    resolve,
)
from orchestrator.cli.findings_json import result_json
from orchestrator.cli.output import DEFAULT_MAX_FINDINGS, console, print_plan, summary_line
from orchestrator.spec.findings import Finding, format_finding
from orchestrator.spec.limits import DEFAULT_MAX_BYTES, LoadLimits

if TYPE_CHECKING:
    from orchestrator.pipeline import ValidationResult


def validate_command(
    site: SiteArg,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            help="Print only the findings (on stderr), no plan and no verdict line: the exit code says "
            "whether the spec is valid.",
        ),
    ] = False,
    argv: Annotated[
        bool,
        typer.Option(
            "--argv",
            help="After the plan, print every container's `vllm serve` argv and environment (each replica "
            "member's; each DP rank's on a prefill/decode site).",
        ),
    ] = False,
    fmt: Annotated[Format, format_option("for tools: every finding and the verdict, no plan")] = Format.table,
    max_spec_size: MaxSpecSize = DEFAULT_MAX_BYTES,
    max_findings: MaxFindings = DEFAULT_MAX_FINDINGS,
) -> None:
    """Check the spec (structure, cross-field rules, capacity) and print the derived plan."""
    from orchestrator.cli.check import folder_findings
    from orchestrator.pipeline import validate_file

    if fmt is Format.json:
        result = validate_file(resolve(site), LoadLimits(max_bytes=max_spec_size))
        result = result.with_findings([*folder_findings(result), *_controller_warnings(result)])
        print(result_json(result))
        raise typer.Exit(exits.OK if result.ok else EXIT_INVALID)
    result = load(site, max_spec_size, max_findings)  # prints the spec's findings; exits 2 when invalid
    err = console(stderr=True)
    more = _controller_warnings(result)
    for f in more:
        err.print(format_finding(f, result.filename), style="yellow", markup=False)
    if not quiet:  # on stderr with the findings: stdout holds the plan alone, whatever this machine has
        err.print(summary_line(result.with_findings(more)), markup=False, style="green")
    if not quiet and result.plan is not None:
        print_plan(console(), result.plan, argv=argv)


def _controller_warnings(result: ValidationResult) -> list[Finding]:
    """What plan/apply/drift would refuse for on this machine (secrets that do not resolve, missing
    controller files), as warnings: validate may run elsewhere than the controller; then what the spec
    leaves unverified or unmonitored (orchestrator/validation/coverage.py)."""
    from orchestrator.planning.phases import PHASE_NAMES
    from orchestrator.validation.controller import DRIFT, as_warnings, controller_findings, located
    from orchestrator.validation.coverage import coverage_warnings

    if result.spec is None or not result.ok:
        return []
    found = controller_findings(result.spec, Path(result.filename).parent, [*PHASE_NAMES, DRIFT])
    return located([*as_warnings(found), *coverage_warnings(result.spec)], result)
