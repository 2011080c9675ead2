"""The one path from a spec file to printed findings and an exit code, shared by every command that loads
a spec (and by the tests that must see what the CLI sees, without a subprocess)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from orchestrator.cli import exits
from orchestrator.cli.output import DEFAULT_MAX_FINDINGS, print_findings, summary_line
from orchestrator.spec.limits import DEFAULT_LIMITS, LoadLimits
from orchestrator.validation import ValidationResult, validate_file

EXIT_OK = exits.OK
EXIT_INVALID = exits.INVALID_SPEC


def check_file(
    path: Path,
    err: Console,
    limits: LoadLimits = DEFAULT_LIMITS,
    max_findings: int = DEFAULT_MAX_FINDINGS,
) -> tuple[ValidationResult, int]:
    """Validate the spec at path, print its findings (capped) and, when invalid, the summary, to err.

    Returns the result and the exit code: EXIT_OK, or EXIT_INVALID for a spec that must not be used.
    """
    result = validate_file(path, limits)
    print_findings(err, result, max_findings)
    if not result.ok:
        err.print(summary_line(result), markup=False, style="bold red")
        return result, EXIT_INVALID
    return result, EXIT_OK
