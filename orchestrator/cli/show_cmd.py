"""`orchestrator show RUN [--format table|json]`: one recorded run in detail (phases, per-host counts,
failures, the command that resumes, where its artifacts are). RUN is a run id or a unique prefix of one."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from orchestrator.cli import exits
from orchestrator.cli.common import Format, FormatOption
from orchestrator.cli.history_view import print_detail
from orchestrator.cli.output import console
from orchestrator.cli.sites import project_root
from orchestrator.history import db


def show_command(
    run: Annotated[
        str, typer.Argument(metavar="RUN", help="Run id, or a unique prefix of one (`orchestrator history`).")
    ],
    fmt: FormatOption = Format.table,
) -> None:
    """Print one recorded run: phases, per-host counts, failures, resume command, artifacts.

    Exit codes: 0 printed, 66 no such run (or several match the prefix).
    """
    root = project_root()
    try:
        if not db.db_path(root).is_file():  # reading never creates the database
            raise db.NoSuchRun(f"no run '{run}': nothing is recorded in {db.db_path(root)} yet.")
        with db.connect(root) as conn:
            record = db.find(conn, run.strip())
    except db.HistoryError as exc:
        console(stderr=True).print(str(exc), markup=False)
        raise typer.Exit(exits.NO_SITE) from None
    if fmt is Format.json:
        print(json.dumps(record.as_dict()))
        return
    print_detail(console(), record)
