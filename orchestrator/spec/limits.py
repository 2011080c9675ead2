"""Limits on what the spec loader reads: file size, nesting depth, alias expansion, digits of a number.

A site spec is a hand-written file of a few hundred lines (a 20,000-server site is about 3.5 MB), so these
limits never stop a real spec; they stop a hostile or broken file (a "billion laughs" alias bomb, a
multi-gigabyte log passed by mistake, a 5,000-digit number) before it costs minutes and gigabytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MIB = 1024 * 1024
DEFAULT_MAX_BYTES = 16 * MIB
MAX_SPEC_SIZE_ENV = "ORCHESTRATOR_MAX_SPEC_SIZE"
"""Environment variable with the default of --max-spec-size (e.g. 64MiB)."""


@dataclass(frozen=True)
class LoadLimits:
    max_bytes: int = DEFAULT_MAX_BYTES
    """Largest spec file read (bytes of UTF-8)."""
    max_depth: int = 64
    """Deepest nesting of mappings and lists (the site spec itself needs 6 levels)."""
    alias_nodes: int = 10_000
    """Nodes that YAML aliases may add beyond the nodes written in the file (each use of *name counts the
    whole anchored content again, as every later stage walks it once per use)."""
    max_number_digits: int = 100
    """Longest integer literal (digits); no field takes a number anywhere near this long."""


DEFAULT_LIMITS = LoadLimits()

_SIZE = re.compile(r"^\s*(?P<n>[0-9]+)\s*(?P<unit>|b|k|kb|kib|m|mb|mib|g|gb|gib)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1024, "m": MIB, "g": 1024 * MIB}


def parse_size(text: str) -> int:
    """'16MiB', '64M', '500k', '1000000' -> bytes (binary units). ValueError with a sentence otherwise."""
    m = _SIZE.match(text)
    if m is None or len(m["n"]) > 15:
        raise ValueError(f"'{text}' is not a size; write a number of bytes or e.g. 32MiB, 512KiB, 1GiB")
    size = int(m["n"]) * _UNITS[m["unit"][:1].lower()]
    if size < 1:
        raise ValueError("the size must be at least 1 byte")
    return size


def format_size(size: int) -> str:
    if size % MIB == 0:
        return f"{size // MIB} MiB"
    if size % 1024 == 0:
        return f"{size // 1024} KiB"
    return f"{size} bytes"
