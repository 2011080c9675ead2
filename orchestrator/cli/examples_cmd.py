"""`orchestrator examples`: validate every site under inventories/ and check its committed inventory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli.common import (
    EXIT_INVALID,
    MaxFindings,
    MaxSpecSize,
    render_into,
)
from orchestrator.cli.output import DEFAULT_MAX_FINDINGS, console, print_findings, print_plan, summary_line
from orchestrator.cli.sites import example_sites
from orchestrator.spec.limits import DEFAULT_MAX_BYTES, LoadLimits


def examples_command(
    write: Annotated[
        bool, typer.Option("--write", help="Re-render the committed inventories in place (deliberate).")
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(metavar="OUT", help="Render into OUT/<site>/ instead (nothing committed changes)."),
    ] = None,
    max_spec_size: MaxSpecSize = DEFAULT_MAX_BYTES,
    max_findings: MaxFindings = DEFAULT_MAX_FINDINGS,
) -> None:
    """Validate every site under inventories/, print its plan and phases, and check that its committed
    inventory is what render writes today (exit 1 when stale). Writes nothing unless --write or --out."""
    from orchestrator.cli.phase_lines import print_phases
    from orchestrator.pipeline import validate_file
    from orchestrator.planning.phases import plan_phases
    from orchestrator.render import as_input, render_texts

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
            changed = _stale_files(path.parent, render_texts(as_input(result)))
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
        print_phases(con, plan_phases(result.spec, result.plan), indent="  ")
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
