"""`orchestrator history SITE [--last N] [--format table|json]`: the site's recorded runs, newest first
(apply, plan, drift, rollback, heal; from .orchestrator/history.sqlite3 of the project root)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
import yaml

from orchestrator.cli import exits
from orchestrator.cli.common import Format, format_option
from orchestrator.cli.history_view import runs_table
from orchestrator.cli.output import console
from orchestrator.cli.sites import SiteNotFound, project_root, resolve_site
from orchestrator.history import db


def site_name(arg: str) -> str:
    """SITE as a site name; a spec file or folder (or a site under inventories/) stands for the site it
    names (its `site:` key)."""
    try:
        spec = resolve_site(arg)
    except SiteNotFound:
        return arg
    try:
        data = yaml.safe_load(spec.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return arg
    name = data.get("site") if isinstance(data, dict) else None
    return name if isinstance(name, str) and name else arg


def read_history(root: Path, site: str, last: int | None) -> list[db.RunRecord]:
    if not db.db_path(root).is_file():  # nothing recorded yet (reading never creates the database)
        return []
    try:
        with db.connect(root) as conn:
            return db.runs(conn, site, last)
    except db.HistoryError as exc:
        console(stderr=True).print(str(exc), markup=False)
        raise typer.Exit(exits.NO_SITE) from None


def history_command(
    site: Annotated[str, typer.Argument(metavar="SITE", help="Site name (or its spec file / folder).")],
    last: Annotated[int, typer.Option("--last", min=1, metavar="N", help="Only the newest N runs.")] = 20,
    fmt: Annotated[Format, format_option("one list of runs on stdout, nothing else")] = Format.table,
) -> None:
    """List the site's recorded runs (apply, plan, drift, rollback, heal), newest first: run id, kind, start,
    duration, result, exit code, who, phases. `orchestrator show RUN` prints one in detail."""
    name = site_name(site)
    root = project_root()
    records = read_history(root, name, last)
    if fmt is Format.json:
        print(json.dumps([r.as_dict() for r in records]))
        return
    out = console()
    if not records:
        out.print(f"no runs of site {name} recorded in {db.db_path(root)}", markup=False)
        return
    out.print(runs_table(name, records))
