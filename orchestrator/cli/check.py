"""The one path from a spec file to printed findings and an exit code, shared by every command that loads
a spec (and by the tests that must see what the CLI sees, without a subprocess)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from orchestrator.cli import exits
from orchestrator.cli.output import DEFAULT_MAX_FINDINGS, print_findings, summary_line
from orchestrator.pipeline import ValidationResult, validate_file
from orchestrator.spec.findings import Finding, warning
from orchestrator.spec.limits import DEFAULT_LIMITS, LoadLimits

EXIT_OK = exits.OK
EXIT_INVALID = exits.INVALID_SPEC


def folder_findings(result: ValidationResult) -> list[Finding]:
    """A spec named site.yaml lives in inventories/<site>/: its folder is where render writes the inventory
    and the name plain ansible-playbook users (and `orchestrator apply <folder>`) know it by, while the
    site's lock, history and drift units use `site:`. A mismatch works, but confuses both: warn."""
    path = Path(result.filename)
    if result.spec is None or path.name != "site.yaml" or path.parent.name in ("", result.spec.site):
        return []
    folder = path.parent.name
    return [
        warning(
            ("site",),
            f"site is '{result.spec.site}' but the spec is in the folder '{folder}'; the inventory is "
            f"rendered into '{folder}' while history, locks and drift units use '{result.spec.site}'",
            f"rename the folder to '{result.spec.site}' or set site: {folder}",
        )
    ]


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
    result = result.with_findings(list(folder_findings(result)))
    print_findings(err, result, max_findings)
    if not result.ok:
        err.print(summary_line(result), markup=False, style="bold red")
        return result, EXIT_INVALID
    return result, EXIT_OK
