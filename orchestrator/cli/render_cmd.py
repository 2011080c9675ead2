"""`orchestrator render SITE`: write the Ansible inventory beside the spec."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli.common import (
    MaxFindings,
    MaxSpecSize,
    SiteArg,
    load,
    render_into,
)
from orchestrator.cli.output import DEFAULT_MAX_FINDINGS, console
from orchestrator.spec.limits import DEFAULT_MAX_BYTES


def render_command(
    site: SiteArg,
    out: Annotated[
        Path | None, typer.Option(metavar="DIR", help="Output folder (default: beside the spec).")
    ] = None,
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
