"""Diagnose a saved serving log: the rule whose distinctive line comes EARLIEST wins.

vLLM-Ascend wraps the real cause in generic layers (torch_npu's ERR00100, CANN's "EZ9999: Inner Error!",
the engine's "See root cause above", an ERR99999 printed by the API server after the engine died), and the
last traceback line often names the wrong cause. So (research notes, section 0.1):

1. every line is matched without its per-line prefixes (lines.strip_prefix) and generic wrapper lines are
   skipped (lines.is_generic);
2. each rule keeps its first matching line; the rule with the earliest line wins, ties on one line go to
   the higher priority, then to the rule listed first;
3. `generic` rules (a symptom several causes share) win only when no specific rule matched;
4. the first error code of the file (skipping the generic lines) is reported with its line, whatever the
   diagnosis, and so are the first lines that read as errors (`key_lines`: what an operator reads first
   when no rule knows the cause; Python traceback frames and the generic wrappers are left out).

Leading lines starting with "# source:" (the public address a saved fixture came from) are ignored.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.doctor.lines import Code, first_code, is_generic, strip_prefix
from orchestrator.doctor.rule import NEAR_LINES, Rule
from orchestrator.doctor.rules import log_rules

MAX_CODES = 10
"""Distinct error codes listed per file (in the order they first appear)."""

MAX_KEY_LINES = 8
"""Lines that read as errors listed per file (the first ones, distinct texts)."""

_KEY = re.compile(
    r"[A-Z]\w*(?:Error|Exception)\b|\b(?:error|errors|failed|fail|failure|timed out|times out|timeout|cannot|"
    r"can not|invalid|not found|no such file|undefined symbol|refused|denied|abnormal|insufficient)\b",
    re.IGNORECASE,
)
_NOT_KEY = re.compile(r'^(?:File "|raise |[\^~ ]*$)')

_HEADER = "# source:"


@dataclass(frozen=True)
class Match:
    """Where a rule matched: 1-based line number, the line as written, values read from it."""

    rule: Rule
    line_no: int
    line: str
    details: dict[str, str]
    hint: str | None


@dataclass(frozen=True)
class CodeLine:
    """An error code, the 1-based number of the line it first appears on, and that line."""

    code: Code
    line_no: int
    line: str


@dataclass(frozen=True)
class KeyLine:
    """A line that reads as an error: its 1-based number and the line as written."""

    line_no: int
    line: str


@dataclass(frozen=True)
class Scan:
    """The diagnosis of one log: the winning rule (None: no known cause), the first code, the codes, and
    the first lines that read as errors."""

    match: Match | None
    first_code: CodeLine | None
    codes: tuple[CodeLine, ...]
    lines: int
    key_lines: tuple[KeyLine, ...] = ()


class _Matcher:
    """The rules' patterns compiled once, with one combined regex to skip lines no rule can match."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = tuple(rules)
        self.any = re.compile("|".join(f"(?:{pat.regex})" for r in rules for pat in r.patterns))

    def rules_on(self, i: int, cleaned: Sequence[str]) -> list[Rule]:
        text = cleaned[i]
        if self.any.search(text) is None:
            return []
        return [r for r in self.rules if _rule_matches(r, i, cleaned)]


def _rule_matches(rule: Rule, i: int, cleaned: Sequence[str]) -> bool:
    for pat in rule.patterns:
        if pat.compiled().search(cleaned[i]) is None:
            continue
        near, unless = pat.near_compiled(), pat.unless_compiled()
        if near is None and unless is None:
            return True
        window = cleaned[max(0, i - NEAR_LINES) : i + NEAR_LINES + 1]
        if near is not None and not any(near.search(t) for t in window):
            continue
        if unless is not None and any(unless.search(t) for t in window):
            continue
        return True
    return False


def _body(lines: Sequence[str]) -> int:
    """Index of the first line after the leading "# source:" header lines."""
    start = 0
    while start < len(lines) and lines[start].startswith(_HEADER):
        start += 1
    return start


def scan_lines(lines: Sequence[str], rules: Sequence[Rule] | None = None) -> Scan:
    """Diagnose the lines of one log (without line endings)."""
    matcher = _Matcher(log_rules() if rules is None else rules)
    start = _body(lines)
    cleaned = [strip_prefix(line) for line in lines]
    specific: tuple[int, Rule] | None = None
    generic: tuple[int, Rule] | None = None
    codes: dict[str, CodeLine] = {}
    key: dict[str, KeyLine] = {}
    for i in range(start, len(lines)):
        text = cleaned[i]
        if not text or is_generic(text):
            continue
        code = first_code(text)
        if code is not None and code.code not in codes and len(codes) < MAX_CODES:
            codes[code.code] = CodeLine(code, i + 1, lines[i].rstrip())
        if len(key) < MAX_KEY_LINES and text not in key and _is_key(text, code is not None):
            key[text] = KeyLine(i + 1, lines[i].rstrip())
        if specific is not None:
            continue  # only codes are still collected after the earliest specific line
        found = matcher.rules_on(i, cleaned)
        if not found:
            continue
        best = max(found, key=lambda r: (not r.generic, r.priority, -matcher.rules.index(r)))
        if not best.generic:
            specific = (i, best)
        elif generic is None:
            generic = (i, best)
    chosen = specific or generic
    match = None
    if chosen is not None:
        i, rule = chosen
        details, hint = _hint(rule, cleaned[i : i + NEAR_LINES + 1])
        match = Match(rule, i + 1, lines[i].rstrip(), details, hint)
    listed = tuple(codes.values())
    return Scan(match, listed[0] if listed else None, listed, len(lines), tuple(key.values()))


def _is_key(text: str, has_code: bool) -> bool:
    """Whether a (stripped, non-generic) line reads as an error worth showing when no rule matched."""
    if _NOT_KEY.match(text):
        return False
    return has_code or _KEY.search(text) is not None


def _hint(rule: Rule, block: Sequence[str]) -> tuple[dict[str, str], str | None]:
    """The rule's details from the matched line, or else from the first line after it that has them (F3: the
    SocVersion is on the EH9999 line below the 500001 line)."""
    for text in block:
        details, hint = rule.hint_for(text)
        if details:
            return details, hint
    return {}, None


def read_log(path: Path) -> list[str]:
    """The lines of a saved log (any encoding; undecodable bytes are replaced). Raises OSError."""
    return path.read_bytes().decode("utf-8", errors="replace").splitlines()


def scan_file(path: Path) -> Scan:
    """Diagnose a saved log file. Raises OSError when it cannot be read."""
    return scan_lines(read_log(path))
