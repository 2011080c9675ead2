"""Printing log diagnoses: aligned lines for people, one JSON object for tools."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from orchestrator.doctor.logscan import CodeLine, KeyLine, Match, Scan
from orchestrator.doctor.rules import BY_ID, log_rules


@dataclass(frozen=True)
class LogResult:
    """The scan of one --log FILE, as the user named it."""

    file: str
    scan: Scan


def _code_text(c: CodeLine) -> str:
    return f"{c.code.code} ({c.code.kind}) on line {c.line_no}"


def _related(m: Match) -> str:
    return ", ".join(f"{r} ({BY_ID[r].title})" for r in m.rule.related)


def print_results(out: Console, results: Sequence[LogResult]) -> None:
    """Per file: the known cause (rule, line, first code, cause, fix, sources), or 'no known cause' with the
    first error code and the first lines that read as errors (no guess is printed)."""

    def say(text: str) -> None:
        out.print(text, markup=False, highlight=False)

    for n, res in enumerate(results):
        if n:
            out.print("")
        s, m = res.scan, res.scan.match
        if m is None:
            say(f"{res.file}: no known cause found ({s.lines} lines against {len(log_rules())} rules)")
            if s.first_code is None:
                say("  first error code: none seen")
            else:
                say(f"  first error code: {_code_text(s.first_code)}: {s.first_code.line.strip()}")
            if s.codes:
                say(f"  codes: {', '.join(c.code.code for c in s.codes)}")
            if s.key_lines:
                say("  lines that matter (the first that read as errors):")
                for k in s.key_lines:
                    say(f"    {k.line_no}: {_clip(k.line.strip())}")
            else:
                say("  lines that matter: none read as errors")
            continue
        r = m.rule
        say(f"{res.file}: known cause {r.id}: {r.title}")
        rows = [
            ("line", f"{m.line_no}: {m.line.strip()}"),
            ("first code", _code_text(s.first_code) if s.first_code else "none seen"),
            ("codes", ", ".join(c.code.code for c in s.codes) or "none"),
        ]
        if m.hint:
            rows.append(("this log", m.hint))
        if r.generic:
            rows.append(("generic", "several causes print this line and no more specific one was found"))
        rows += [("cause", r.cause), ("fix", r.fix), ("check early", r.preflight.value)]
        if r.related:
            rows.append(("see also", _related(m)))
        if r.inferred:
            rows.append(("inferred", r.inferred))
        rows += [("sources", "\n               ".join(r.sources))]
        for key, value in rows:
            say(f"  {key + ':':<12} {value}")


KEY_LINE_CHARS = 300
"""Characters of a key line printed in the table (the JSON has the whole line)."""


def _clip(text: str) -> str:
    return text if len(text) <= KEY_LINE_CHARS else text[: KEY_LINE_CHARS - 1] + "…"


def _key_json(k: KeyLine) -> dict[str, Any]:
    return {"line": k.line_no, "text": k.line}


def _code_json(c: CodeLine | None, with_text: bool = True) -> dict[str, Any] | None:
    if c is None:
        return None
    out: dict[str, Any] = {"code": c.code.code, "kind": c.code.kind, "line": c.line_no}
    if with_text:
        out["text"] = c.line
    return out


def _match_json(m: Match | None) -> dict[str, Any] | None:
    if m is None:
        return None
    r = m.rule
    return {
        "rule": r.id,
        "area": r.area,
        "title": r.title,
        "line": m.line_no,
        "text": m.line,
        "details": m.details,
        "hint": m.hint,
        "cause": r.cause,
        "fix": r.fix,
        "preflight": r.preflight.value,
        "generic": r.generic,
        "related": list(r.related),
        "inferred": r.inferred or None,
        "sources": list(r.sources),
    }


def results_json(results: Sequence[LogResult], exit_code: int) -> str:
    """One JSON object: a diagnosis per file, how many files have a known cause, the exit code."""
    files = [
        {
            "file": res.file,
            "lines": res.scan.lines,
            "diagnosis": _match_json(res.scan.match),
            "first_code": _code_json(res.scan.first_code),
            "codes": [_code_json(c, with_text=False) for c in res.scan.codes],
            "key_lines": [_key_json(k) for k in res.scan.key_lines],
        }
        for res in results
    ]
    known = sum(1 for res in results if res.scan.match is not None)
    return json.dumps({"files": files, "known_causes": known, "exit_code": exit_code}, sort_keys=True)
