"""`orchestrator docs`: the spec reference (or the troubleshooting guide), printed, written or checked."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli.output import console


def docs_command(
    write: Annotated[
        Path | None, typer.Option(metavar="FILE", help="Write the reference to this file.")
    ] = None,
    check: Annotated[
        Path | None, typer.Option(metavar="FILE", help="Fail if this file is not up to date.")
    ] = None,
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
    if troubleshooting:
        from orchestrator.doctor.troubleshooting import troubleshooting_reference

        text = troubleshooting_reference()
    else:
        from orchestrator.spec.docs import spec_reference

        text = spec_reference()
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
