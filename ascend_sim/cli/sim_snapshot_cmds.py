"""`orchestrator sim snapshot save|restore|rm`: a converged simulated cluster saved once and brought back in
seconds, under the same names and addresses (ascend_sim/snapshot.py; docs/simulator.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli.groups import App
from orchestrator.cli.output import console

snapshot_app = App(
    no_args_is_help=True,
    help="Save a simulated cluster into a folder and restore it (a restored cluster is a rebooted one).",
)
FolderArg = Annotated[Path, typer.Argument(metavar="FOLDER", help="The snapshot's folder.")]


def _print(lines: list[str], verdict: str) -> None:
    out = console()
    for line in lines:
        out.print(f"  {line}", markup=False)
    out.print(verdict, markup=False)


@snapshot_app.command("save")
def save(
    folder: FolderArg,
    name: Annotated[str, typer.Option("--name", metavar="NAME", help="Cluster name.")] = "sim",
) -> None:
    """Stop the cluster and move it into FOLDER (servers committed, inner Docker data, /data, controller
    files); the cluster is gone afterwards, its addresses stay reserved until `snapshot rm`."""
    from ascend_sim import snapshot
    from ascend_sim.cli.sim_cmds import _root, _run, _say

    lines = _run(lambda: snapshot.save(_root(), name, folder, _say))
    _print(
        lines,
        f"sim cluster '{name}' saved in {folder}; bring it back with `orchestrator sim snapshot restore`",
    )


@snapshot_app.command("restore")
def restore(folder: FolderArg) -> None:
    """Bring the cluster saved in FOLDER back (same names, addresses and project root); its servers boot."""
    from ascend_sim import snapshot
    from ascend_sim.cli.sim_cmds import _root, _run, _say

    lines = _run(lambda: snapshot.restore(_root(), folder, _say))
    _print(lines, f"restored from {folder}")


@snapshot_app.command("rm")
def remove(folder: FolderArg) -> None:
    """Remove the snapshot's images and FOLDER (the cluster's addresses become free)."""
    from ascend_sim import snapshot
    from ascend_sim.cli.sim_cmds import _run

    lines = _run(lambda: snapshot.remove(folder))
    _print(
        [f"removed {x}" for x in lines],
        f"snapshot {folder}: " + ("removed" if lines else "nothing to remove"),
    )


@snapshot_app.command("prune")
def prune() -> None:
    """Remove the images and volumes of snapshots whose folder is gone (and that no container runs from)."""
    from ascend_sim import snapshot
    from ascend_sim.cli.sim_cmds import _run

    lines = _run(snapshot.prune)
    _print([f"removed {x}" for x in lines], "pruned" if lines else "no orphaned snapshot")
