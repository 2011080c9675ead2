"""Loading and checking the catalog's package data files (orchestrator/catalog/data/*.yaml).

Every file is a YAML mapping with ``schema_version: 1`` and one list (or mapping) of rows. Files are read
lazily, once per process (``functools.cache``), with PyYAML's safe loader (libyaml's when PyYAML has it:
every validate reads them, and the pure-Python parser takes ten times as long). The :class:`Row` helper
gives typed access to one row and turns every problem into a :class:`CatalogDataError` that names the file
and the row.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from importlib import resources
from typing import Any, Literal

import yaml

from orchestrator.catalog.version import Version

SCHEMA_VERSION = 1
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
Confidence = Literal["sourced", "inferred"]
CONFIDENCES: tuple[Confidence, ...] = ("sourced", "inferred")


class CatalogDataError(ValueError):
    """A catalog data file is malformed; the message names the file, the row and the field."""


def read_text(filename: str) -> str:
    """The text of one packaged data file."""
    return resources.files("orchestrator.catalog").joinpath("data", filename).read_text(encoding="utf-8")


@functools.cache
def load(filename: str) -> Mapping[str, Any]:
    """Parse a packaged data file and check its header. Cached: each file is read once per process."""
    try:
        text = read_text(filename)
    except FileNotFoundError as exc:
        raise CatalogDataError(f"{filename}: catalog data file is missing from the package") from exc
    return parse(text, filename)


def parse(text: str, filename: str) -> Mapping[str, Any]:
    """Parse YAML text as a catalog file (used by :func:`load` and by tests with hand-made text)."""
    try:
        data = yaml.load(text, Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        raise CatalogDataError(f"{filename}: not valid YAML: {exc}") from exc
    return check_header(data, filename)


def check_header(data: object, filename: str) -> Mapping[str, Any]:
    if not isinstance(data, dict):
        raise CatalogDataError(f"{filename}: top level must be a mapping, got {type(data).__name__}")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise CatalogDataError(f"{filename}: schema_version must be {SCHEMA_VERSION}, got {version!r}")
    return data


def rows(data: Mapping[str, Any], key: str, filename: str) -> list[Row]:
    """The list under ``key`` as :class:`Row` objects (each must be a mapping)."""
    raw = data.get(key)
    if not isinstance(raw, list) or not raw:
        raise CatalogDataError(f"{filename}: '{key}' must be a non-empty list of rows")
    out: list[Row] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise CatalogDataError(
                f"{filename}: {key}[{i}]: row must be a mapping, got {type(item).__name__}"
            )
        label = item.get("name") or item.get("version") or item.get("series") or item.get("flag") or ""
        where = f"{key}[{i}]" + (f" ({label})" if label else "")
        out.append(Row(item, filename, where))
    return out


class Row:
    """Typed, checked access to one row of a data file. Call :meth:`done` to reject unknown keys."""

    def __init__(self, raw: Mapping[str, Any], filename: str, where: str) -> None:
        self._raw = raw
        self._seen: set[str] = set()
        self.filename = filename
        self.where = where

    def error(self, message: str) -> CatalogDataError:
        return CatalogDataError(f"{self.filename}: {self.where}: {message}")

    def _get(self, key: str, default: object = ...) -> object:
        self._seen.add(key)
        if key not in self._raw:
            if default is ...:
                raise self.error(f"missing field '{key}'")
            return default
        return self._raw[key]

    def text(self, key: str, *, allow_empty: bool = False, default: str | None = None) -> str:
        value = self._get(key, ... if default is None else default)
        if not isinstance(value, str):
            # Unquoted YAML numbers are not strings: 3.10 would silently become 3.1.
            raise self.error(f"field '{key}' must be a string (quote numbers), got {value!r}")
        if not value and not allow_empty:
            raise self.error(f"field '{key}' must not be empty")
        return value

    def version(self, key: str, *, allow_empty: bool = False) -> str:
        """A string field that must parse as a :class:`Version` (or be empty when allowed)."""
        text = self.text(key, allow_empty=allow_empty)
        if text:
            try:
                Version(text)
            except ValueError as exc:
                raise self.error(f"field '{key}': {exc}") from None
        return text

    def choice(self, key: str, choices: tuple[str, ...], *, default: str | None = None) -> str:
        value = self.text(key, default=default)
        if value not in choices:
            raise self.error(f"field '{key}' must be one of {', '.join(choices)}; got {value!r}")
        return value

    def integer(self, key: str, *, minimum: int | None = None) -> int:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"field '{key}' must be an integer, got {value!r}")
        if minimum is not None and value < minimum:
            raise self.error(f"field '{key}' must be >= {minimum}, got {value}")
        return value

    def number(self, key: str, *, minimum: float | None = None) -> float:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(f"field '{key}' must be a number, got {value!r}")
        if minimum is not None and value < minimum:
            raise self.error(f"field '{key}' must be >= {minimum}, got {value}")
        return float(value)

    def flag(self, key: str) -> bool:
        value = self._get(key)
        if not isinstance(value, bool):
            raise self.error(f"field '{key}' must be true or false, got {value!r}")
        return value

    def items(self, key: str, *, default: list[Any] | None = None) -> list[Any]:
        value = self._get(key, ... if default is None else default)
        if not isinstance(value, list):
            raise self.error(f"field '{key}' must be a list, got {value!r}")
        return value

    def mapping(self, key: str, *, default: dict[str, Any] | None = None) -> dict[str, Any]:
        value = self._get(key, ... if default is None else default)
        if not isinstance(value, dict):
            raise self.error(f"field '{key}' must be a mapping, got {value!r}")
        return value

    def texts(
        self, key: str, *, allow_empty: bool = False, default: list[Any] | None = None
    ) -> tuple[str, ...]:
        items = self.items(key, default=default)
        if not items and not allow_empty:
            raise self.error(f"field '{key}' must not be empty")
        for item in items:
            if not isinstance(item, str) or not item:
                raise self.error(f"field '{key}' must hold non-empty strings, got {item!r}")
        return tuple(items)

    def confidence(self) -> Confidence:
        value = self.choice("confidence", CONFIDENCES)
        return "sourced" if value == "sourced" else "inferred"

    def done(self, *ignored: str) -> None:
        """Reject keys the loader did not read (typos); ``ignored`` keys are documentation only."""
        unknown = set(self._raw) - self._seen - set(ignored) - {"source", "note"}
        if unknown:
            raise self.error(f"unknown field(s): {', '.join(sorted(unknown))}")
