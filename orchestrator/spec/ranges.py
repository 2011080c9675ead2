"""The allowed range of a numeric field, in words, from its pydantic constraints (for docs and fixes)."""

from __future__ import annotations

import typing
from collections.abc import Iterable
from typing import Any, get_args, get_origin

import annotated_types as at
from pydantic.fields import FieldInfo


def _num(value: Any) -> str:
    """1,024; 0.98; and machine-word limits as powers of two (2^31-1, -2^63)."""
    if not isinstance(value, int):
        return f"{value:g}"
    for k in range(31, 129):
        for v, text in ((1 << k, f"2^{k}"), ((1 << k) - 1, f"2^{k}-1"), (-(1 << k), f"-2^{k}")):
            if value == v:
                return text
    return f"{value:,}"


def describe(constraints: Iterable[Any]) -> str | None:
    """'1 to 65,535', 'at least 0', 'more than 0 and at most 10,000', or None when unbounded."""
    low: tuple[bool, Any] | None = None  # (inclusive, bound)
    high: tuple[bool, Any] | None = None
    for c in constraints:
        if isinstance(c, at.Ge):
            low = (True, c.ge)
        elif isinstance(c, at.Gt):
            low = (False, c.gt)
        elif isinstance(c, at.Le):
            high = (True, c.le)
        elif isinstance(c, at.Lt):
            high = (False, c.lt)
    if low is not None and high is not None and low[0] and high[0]:
        return f"{_num(low[1])} to {_num(high[1])}"
    parts = []
    if low is not None:
        parts.append(f"{'at least' if low[0] else 'more than'} {_num(low[1])}")
    if high is not None:
        parts.append(f"{'at most' if high[0] else 'less than'} {_num(high[1])}")
    return " and ".join(parts) or None


def annotation_range(annotation: Any) -> str | None:
    """The range of an Annotated[int, Field(ge=..)] type (list items, dict values), if any."""
    if get_origin(annotation) is not typing.Annotated:
        return None
    constraints: list[Any] = []
    for meta in get_args(annotation)[1:]:
        constraints += meta.metadata if isinstance(meta, FieldInfo) else [meta]
    return describe(constraints)


def field_range(field: FieldInfo) -> str | None:
    return describe(field.metadata)
