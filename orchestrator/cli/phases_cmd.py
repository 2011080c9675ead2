"""`orchestrator phases SITE`: the phases an apply runs, the hosts each touches and what it does there."""

from __future__ import annotations

import json

import typer

from orchestrator.cli.common import (
    EXIT_INVALID,
    Format,
    FormatOption,
    MaxFindings,
    MaxSpecSize,
    SiteArg,
    load,
)
from orchestrator.cli.output import DEFAULT_MAX_FINDINGS, console
from orchestrator.spec.limits import DEFAULT_MAX_BYTES


def phases_command(
    site: SiteArg,
    fmt: FormatOption = Format.table,
    max_spec_size: MaxSpecSize = DEFAULT_MAX_BYTES,
    max_findings: MaxFindings = DEFAULT_MAX_FINDINGS,
) -> None:
    """Print the phases an apply runs, in order, the hosts each touches and what it does there."""
    from orchestrator.cli.phase_lines import phases_json, print_phases
    from orchestrator.planning.phases import plan_phases

    result = load(site, max_spec_size, max_findings)
    if result.spec is None or result.plan is None:  # _load exits on an invalid spec
        raise typer.Exit(EXIT_INVALID)
    phases = plan_phases(result.spec, result.plan)
    if fmt is Format.json:
        print(json.dumps(phases_json(result.spec.site, phases)))
        return
    print_phases(console(), phases)
