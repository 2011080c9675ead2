"""`orchestrator weights manifest DIR`: the sha256 manifest the servers verify their weights against."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from orchestrator.cli import exits
from orchestrator.cli.groups import App
from orchestrator.cli.output import console
from orchestrator.weights.manifest import MANIFEST_NAME, ManifestError, list_files, write_manifest

weights_app = App(no_args_is_help=True, help="Model weights: the manifest the servers verify against.")


@weights_app.command("manifest")
def manifest_command(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="The weights directory.")],
    out: Annotated[
        Path | None,
        typer.Option(
            "-o", "--output", metavar="FILE", help=f"Where to write it (default DIR/{MANIFEST_NAME})."
        ),
    ] = None,
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", min=1, max=256, metavar="N", help="Files hashed at once.")
    ] = min(8, os.cpu_count() or 1),
) -> None:
    """Write the sha256 manifest of every file under DIR (path, size, sha256; JSON sorted by path) and print
    its own sha256: the value of model.source.manifest_sha256 in the site spec."""
    err = console(stderr=True)
    try:
        files = list_files(directory)
        total = sum(p.stat().st_size for _, p in files)
        with Progress(
            TextColumn("hashing"),
            BarColumn(),
            DownloadColumn(binary_units=True),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=err,
            transient=True,
        ) as bar:
            task = bar.add_task("hash", total=total)
            path, sha, entries = write_manifest(
                directory, out, jobs=jobs, progress=lambda n: bar.advance(task, n)
            )
    except (ManifestError, OSError) as exc:
        err.print(f"error: {exc}", markup=False)
        raise typer.Exit(exits.NO_SITE) from None
    size = sum(e.size for e in entries)
    err.print(f"{len(entries)} files, {size} bytes: manifest {path}", markup=False)
    print(sha)
