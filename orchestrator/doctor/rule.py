"""One known cause of a failed vLLM-Ascend replica: how its log shows it, why it happens, how to fix it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum


class Preflight(StrEnum):
    """Whether the cause can be checked before launch (by validate/preflight or a live doctor check)."""

    yes = "yes"
    partly = "partly"
    no = "no"


@dataclass(frozen=True)
class Pattern:
    """A regex for one distinctive log line. `near`: a second regex that must match within `NEAR_LINES`
    lines of it (the same CANN block) for the line to count; `unless`: a regex that must NOT match within
    those lines (the line a neighbouring cause prints beside the same symptom, e.g. an NPU NIC that failed
    to come up before HCCL could listen on its port)."""

    regex: str
    near: str | None = None
    unless: str | None = None

    def compiled(self) -> re.Pattern[str]:
        return _compile(self.regex)

    def near_compiled(self) -> re.Pattern[str] | None:
        return None if self.near is None else _compile(self.near)

    def unless_compiled(self) -> re.Pattern[str] | None:
        return None if self.unless is None else _compile(self.unless)


NEAR_LINES = 50
"""How far (in lines, either side) a Pattern's `near` and `unless` regexes look from the matched line."""


@dataclass(frozen=True)
class Rule:
    """A known cause. `patterns` match the earliest distinctive line (after per-line prefixes are
    stripped); an empty tuple makes a check-before-launch-only rule (no public log line was found).

    `generic` rules (a symptom several causes share) are reported only when no specific rule matched;
    `priority` breaks ties between rules matching the same line (higher wins). `detail` is a regex with
    named groups read from the matched line, `hint` a sentence formatted with them. `example` is a verbatim
    public log line the rule identifies, or with `example_from_code` the message a cited source file prints
    (its format string with example values) when no public report quotes one; `inferred` says which parts
    of cause/fix no source confirmed.
    """

    id: str
    area: str
    title: str
    patterns: tuple[Pattern, ...]
    codes: tuple[str, ...]
    cause: str
    fix: str
    preflight: Preflight
    sources: tuple[str, ...]
    example: str = ""
    inferred: str = ""
    generic: bool = False
    priority: int = 50
    detail: str | None = None
    hint: str | None = None
    related: tuple[str, ...] = field(default_factory=tuple)
    example_from_code: bool = False

    def hint_for(self, line: str) -> tuple[dict[str, str], str | None]:
        """The named groups of `detail` in `line` and the hint formatted with them (None without a match)."""
        if self.detail is None:
            return {}, None
        m = _compile(self.detail).search(line)
        if m is None:
            return {}, None
        values = {k: v for k, v in m.groupdict().items() if v is not None}
        if self.hint is None:
            return values, None
        try:
            return values, self.hint.format(**values)
        except KeyError:
            return values, None


_CACHE: dict[str, re.Pattern[str]] = {}


def _compile(regex: str) -> re.Pattern[str]:
    pat = _CACHE.get(regex)
    if pat is None:
        pat = _CACHE[regex] = re.compile(regex)
    return pat


def p(*regexes: str) -> tuple[Pattern, ...]:
    """Patterns without a `near` condition (the common case in the rule modules)."""
    return tuple(Pattern(r) for r in regexes)
