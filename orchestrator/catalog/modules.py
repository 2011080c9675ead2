"""Parameters of host RDMA/NIC kernel modules (``modinfo -p``) — data/kernel_modules.yaml."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from orchestrator.catalog._data import CatalogDataError, load, rows

_FILE = "kernel_modules.yaml"
_NAME = re.compile(r"[a-z0-9_]+")


def _normal(module: str) -> str:
    # modprobe treats '-' and '_' in module names alike (ib-ipoib == ib_ipoib).
    return module.strip().replace("-", "_")


def validate_modules(data: Mapping[str, Any], filename: str = _FILE) -> Mapping[str, frozenset[str]]:
    """Check a parsed kernel-modules file; raises CatalogDataError (a ValueError) naming the row."""
    table: dict[str, frozenset[str]] = {}
    for row in rows(data, "modules", filename):
        name = row.text("name")
        sourced = row.texts("options", allow_empty=True)
        inferred = row.texts("inferred_options", allow_empty=True)
        confidence = row.confidence()
        row.done()
        if not _NAME.fullmatch(name) or name in table:
            raise row.error(f"module name {name!r} must be lower-case [a-z0-9_] and listed once")
        params = [*sourced, *inferred]
        bad = [p for p in params if not _NAME.fullmatch(p)]
        if bad or len(set(params)) != len(params):
            raise row.error(f"options must be distinct [a-z0-9_] names; check {bad or params}")
        if inferred and confidence != "inferred":
            raise row.error("confidence must be 'inferred' when inferred_options is not empty")
        table[name] = frozenset(params)
    return MappingProxyType(table)


@functools.cache
def _table() -> Mapping[str, frozenset[str]]:
    return validate_modules(load(_FILE))


def known_module(module: str) -> bool:
    """True when the module is in the table (its parameters are known, possibly none)."""
    return _normal(module) in _table()


def unknown_options(module: str, options: Iterable[str]) -> list[str]:
    """The options (``name`` or ``name=value``) the module does not have, in the given order.

    Every option is unknown for a module that is not in the table.
    """
    params = _table().get(_normal(module), frozenset())
    return [opt for opt in options if opt.split("=", 1)[0].strip() not in params]


if TYPE_CHECKING:
    KNOWN_MODULE_OPTIONS: Mapping[str, frozenset[str]]


def __getattr__(name: str) -> object:
    # Lazy module constant (PEP 562): the data file is read on first use, not at import.
    if name == "KNOWN_MODULE_OPTIONS":
        return _table()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["KNOWN_MODULE_OPTIONS", "CatalogDataError", "known_module", "unknown_options", "validate_modules"]
