"""Host kernels per OS release and sysctls that moved to debugfs (data/kernels.yaml).

``placement(sysctl, distro, version)`` says where a setting lives on that OS's kernel: ``("sysctl", name)``,
``("debugfs", "sched/migration_cost_ns")`` or ``("skip", reason)``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from orchestrator.catalog._data import Row, load, rows
from orchestrator.catalog.chips import OS_DISTROS, OS_VERSIONS
from orchestrator.catalog.version import Version

_FILE = "kernels.yaml"
Where = Literal["sysctl", "debugfs", "skip"]


@dataclass(frozen=True)
class SysctlMove:
    sysctl: str
    debugfs: str
    moved_in: str
    removed_in: str


@dataclass(frozen=True)
class KernelTable:
    os_kernels: Mapping[tuple[str, str], str]
    moves: Mapping[str, SysctlMove]


def _os_row(row: Row) -> tuple[tuple[str, str], str]:
    key = (row.choice("distro", OS_DISTROS), row.choice("version", OS_VERSIONS))
    kernel = row.version("kernel")
    row.confidence()
    row.done()
    return key, kernel


def _move_row(row: Row) -> SysctlMove:
    move = SysctlMove(
        sysctl=row.text("sysctl"),
        debugfs=row.text("debugfs"),
        moved_in=row.version("moved_in"),
        removed_in=row.version("removed_in", allow_empty=True),
    )
    row.confidence()
    row.done()
    if move.debugfs.startswith("/") or ".." in move.debugfs.split("/"):
        raise row.error(f"debugfs must be a path relative to /sys/kernel/debug, got {move.debugfs!r}")
    if move.removed_in and Version(move.removed_in) <= Version(move.moved_in):
        raise row.error("removed_in must be a later kernel than moved_in")
    return move


def validate_kernels(data: Mapping[str, Any], filename: str = _FILE) -> KernelTable:
    """Check a parsed kernels file; raises CatalogDataError (a ValueError) naming the row."""
    kernels: dict[tuple[str, str], str] = {}
    for row in rows(data, "os", filename):
        key, kernel = _os_row(row)
        if key in kernels:
            raise row.error(f"duplicate OS {key[0]} {key[1]}")
        kernels[key] = kernel
    moves: dict[str, SysctlMove] = {}
    for row in rows(data, "sysctl_moves", filename):
        move = _move_row(row)
        if move.sysctl in moves:
            raise row.error(f"duplicate sysctl {move.sysctl}")
        moves[move.sysctl] = move
    return KernelTable(kernels, moves)


@functools.cache
def _table() -> KernelTable:
    return validate_kernels(load(_FILE))


def os_kernel(distro: str, version: str) -> str | None:
    """The kernel line ('5.15') of an OS release, or None when the catalog does not know it."""
    return _table().os_kernels.get((distro, version))


def placement(sysctl: str, kernel: str) -> tuple[Where, str]:
    """Where the setting lives on this kernel: ('sysctl', name), ('debugfs', path) or ('skip', reason)."""
    move = _table().moves.get(sysctl)
    if move is None or Version(kernel) < Version(move.moved_in):
        return "sysctl", sysctl
    if move.removed_in and Version(kernel) >= Version(move.removed_in):
        return "skip", (
            f"{sysctl} left sysctl in Linux {move.moved_in} (debugfs {move.debugfs}) and was removed in "
            f"Linux {move.removed_in}; kernel {kernel} has neither"
        )
    return "debugfs", move.debugfs
