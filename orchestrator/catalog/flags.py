"""`vllm serve` flags the upstream vLLM parser accepts or has removed (vLLM ~v0.23) — data/vllm_flags.yaml."""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from orchestrator.catalog._data import CatalogDataError, Confidence, load, rows
from orchestrator.catalog.version import Version

_FILE = "vllm_flags.yaml"
_LONG = re.compile(r"--[a-z0-9]+(?:-[a-z0-9]+)*")
_SHORT = re.compile(r"-[A-Za-z]+")


@dataclass(frozen=True)
class RemovedFlag:
    """A flag vLLM's parser no longer accepts, why, and what to use instead."""

    flag: str
    message: str
    removed_in: str
    confidence: Confidence

    def removed_for(self, vllm_version: str) -> bool:
        """True when ``vllm_version`` (e.g. 'v0.23.0') is at or after the removal."""
        return Version(vllm_version) >= Version(self.removed_in)


@dataclass(frozen=True)
class _Flags:
    known: frozenset[str]
    aliases: Mapping[str, str]
    removed: Mapping[str, RemovedFlag]


def validate_flags(data: Mapping[str, Any], filename: str = _FILE) -> _Flags:
    """Check a parsed flags file; raises CatalogDataError (a ValueError) naming the row."""
    known: set[str] = set()
    for row in rows(data, "known", filename):
        row.text("name")
        row.confidence()
        for flag in row.texts("flags"):
            if not _LONG.fullmatch(flag):
                raise row.error(f"{flag!r} is not a long flag (--lower-case-words)")
            if flag in known:
                raise row.error(f"duplicate flag {flag}")
            known.add(flag)
        row.done()
    raw_aliases = data.get("aliases")
    if not isinstance(raw_aliases, dict):
        raise CatalogDataError(f"{filename}: 'aliases' must be a mapping of short flag -> long flag")
    aliases: dict[str, str] = {}
    for short, target in raw_aliases.items():
        if not (isinstance(short, str) and _SHORT.fullmatch(short)) or target not in known:
            raise CatalogDataError(
                f"{filename}: aliases: {short!r} -> {target!r} must map a short flag to a known flag"
            )
        aliases[short] = target
    removed: dict[str, RemovedFlag] = {}
    for row in rows(data, "removed", filename):
        item = RemovedFlag(
            flag=row.text("flag"),
            message=row.text("message"),
            removed_in=row.text("removed_in"),
            confidence=row.confidence(),
        )
        row.done()
        if not _LONG.fullmatch(item.flag) or item.flag in known or item.flag in removed:
            raise row.error(f"{item.flag!r} must be a long flag listed once and not also under 'known'")
        try:
            Version(item.removed_in)
        except ValueError as exc:
            raise row.error(f"removed_in: {exc}") from None
        removed[item.flag] = item
    return _Flags(frozenset(known), MappingProxyType(aliases), MappingProxyType(removed))


@functools.cache
def _flags() -> _Flags:
    return validate_flags(load(_FILE))


def canonical_flag(flag: str) -> str:
    """The long form of a flag: drops '=value', resolves aliases ('-tp=4' -> '--tensor-parallel-size')."""
    name = flag.split("=", 1)[0].strip()
    return _flags().aliases.get(name, name)


def removed_flag(flag: str) -> RemovedFlag | None:
    """Details of a removed flag (message, removed_in, confidence), or None."""
    return _flags().removed.get(canonical_flag(flag))


def suggest_flag(flag: str) -> str | None:
    """The closest known flag ('--tensor-parallel' -> '--tensor-parallel-size'); None if nothing is close."""
    name = flag.split("=", 1)[0].strip()
    flags = _flags()
    if name in flags.aliases:
        return flags.aliases[name]
    if name.startswith("-") and not name.startswith("--"):
        name = "-" + name  # '-tensor-parallel-size' -> '--tensor-parallel-size'
    name = name.lower().replace("_", "-")
    if name in flags.known and name != flag:
        return name
    close = difflib.get_close_matches(name, sorted(flags.known), n=1, cutoff=0.75)
    return close[0] if close else None


if TYPE_CHECKING:
    KNOWN_SERVE_FLAGS: frozenset[str]
    REMOVED_SERVE_FLAGS: Mapping[str, str]
    SERVE_FLAG_ALIASES: Mapping[str, str]


def __getattr__(name: str) -> object:
    # Lazy module constants (PEP 562): the data file is read on first use, not at import.
    if name == "KNOWN_SERVE_FLAGS":
        return _flags().known
    if name == "REMOVED_SERVE_FLAGS":
        return _removed_messages()
    if name == "SERVE_FLAG_ALIASES":
        return _flags().aliases
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _removed_messages() -> Mapping[str, str]:
    return MappingProxyType({flag: item.message for flag, item in _flags().removed.items()})
