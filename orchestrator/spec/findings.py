"""Findings: what validation says about a spec, with the field path, the YAML position and a fix."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

PathPart = str | int
SpecPath = tuple[PathPart, ...]
Severity = Literal["error", "warning"]


@dataclass(frozen=True, order=True, slots=True)
class Position:
    line: int
    column: int


@dataclass(frozen=True)
class Related:
    """Another node a finding is about, e.g. the first definition of a value that must be unique."""

    path: SpecPath
    note: str = "first defined"
    position: Position | None = None


@dataclass(frozen=True)
class Finding:
    severity: Severity
    path: SpecPath
    message: str
    fix: str | None = None
    code: str = "spec"
    position: Position | None = None
    related: tuple[Related, ...] = ()

    def at(self, position: Position | None) -> Finding:
        return replace(self, position=position)

    @property
    def is_error(self) -> bool:
        return self.severity == "error"


def error(
    path: SpecPath,
    message: str,
    fix: str | None = None,
    code: str = "spec",
    related: tuple[Related, ...] = (),
) -> Finding:
    return Finding("error", path, message, fix, code, related=related)


def warning(path: SpecPath, message: str, fix: str | None = None, code: str = "spec") -> Finding:
    return Finding("warning", path, message, fix, code)


def format_path(path: SpecPath) -> str:
    """Render a path the way a user writes it: serving.replicas[0].servers[1], sysctls["vm.swappiness"]."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part and all(c.isalnum() or c in "_-" for c in part):
            out += f".{part}" if out else part
        else:
            out += f'["{part}"]'
    return out or "(document)"


def format_finding(finding: Finding, filename: str) -> str:
    pos = finding.position
    where = f"{filename}:{pos.line}:{pos.column}" if pos else filename
    text = f"{where}: {finding.severity}: {format_path(finding.path)}: {finding.message}"
    for rel in finding.related:
        at = f"{filename}:{rel.position.line}:{rel.position.column} " if rel.position else ""
        text += f"\n    {rel.note} at {at}({format_path(rel.path)})"
    if finding.fix:
        text += f"\n    fix: {finding.fix}"
    return text


def path_key(path: SpecPath) -> tuple[tuple[int, int, str], ...]:
    """Order paths as the file does: servers[9] before servers[10], indices before names."""
    return tuple((0, part, "") if isinstance(part, int) else (1, 0, part) for part in path)


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Errors first, then by position in the file (line, column), then by path (numerically), message."""

    def key(f: Finding) -> tuple[int, int, int, tuple[tuple[int, int, str], ...], str]:
        pos = f.position or Position(0, 0)
        return (0 if f.is_error else 1, pos.line, pos.column, path_key(f.path), f.message)

    return sorted(findings, key=key)
