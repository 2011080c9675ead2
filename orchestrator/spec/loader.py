"""YAML loading that remembers the line and column of every key and value, within LoadLimits.

load_file -> bytes (bounded read) -> parse_bytes -> text (UTF-8 checks) -> parse_text -> Document.
Every problem is a Finding: at a line and column, or at a byte offset when the file is not text.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml.error import MarkedYAMLError, YAMLError

from orchestrator.spec.compose import MapPos, PosTree, SeqPos, compose
from orchestrator.spec.findings import Finding, Position, SpecPath, error
from orchestrator.spec.gcpause import gc_paused
from orchestrator.spec.limits import DEFAULT_LIMITS, LoadLimits
from orchestrator.spec.scalars import ComposeError, Pos
from orchestrator.spec.textfile import check_characters, decode, read_bounded, too_large
from orchestrator.spec.yaml_words import syntax_words


@dataclass(frozen=True)
class SourceMap:
    """Maps spec paths to positions in the YAML text (1-based line and column).

    A path that is not (all) in the file resolves to its nearest written parent; the document itself is
    at its first node, so nothing points at 1:1 unless the file starts there.
    """

    tree: PosTree
    root: Pos = (1, 1)

    def _walk(self, path: SpecPath) -> tuple[PosTree, Pos, int]:
        node, pos, walked = self.tree, self.root, 0
        for part in path:
            if isinstance(node, MapPos) and isinstance(part, str) and part in node.entries:
                _, pos, node = node.entries[part]
            elif isinstance(node, SeqPos) and isinstance(part, int) and 0 <= part < len(node.items):
                pos, node = node.items[part]
            else:
                break
            walked += 1
        return node, pos, walked

    def locate(self, path: SpecPath) -> Position:
        """Position of the value at path, or of the deepest parent that exists."""
        return Position(*self._walk(path)[1])

    def locate_key(self, path: SpecPath) -> Position:
        """Position of the key at the end of path (for unknown keys), else like locate()."""
        if not path:
            return Position(*self.root)
        parent, _, walked = self._walk(path[:-1])
        last = path[-1]
        if walked == len(path) - 1 and isinstance(parent, MapPos) and isinstance(last, str):
            entry = parent.entries.get(last)
            if entry is not None:
                return Position(*entry[0])
        return self.locate(path)


@dataclass(frozen=True)
class Document:
    filename: str
    text: str
    sha256: str
    data: Any
    source_map: SourceMap


def parse_text(
    text: str, filename: str, limits: LoadLimits = DEFAULT_LIMITS
) -> tuple[Document | None, list[Finding]]:
    size = len(text) if len(text) > limits.max_bytes else len(text.encode("utf-8", "surrogatepass"))
    if size > limits.max_bytes:  # (characters: a lower bound of the bytes, and cheap for a huge text)
        return None, [too_large(size, limits, "the spec")]
    bad_char = check_characters(text)
    if bad_char is not None:
        return None, [bad_char]
    try:
        with gc_paused():
            data, tree, root_pos = compose(text, limits)
    except ComposeError as exc:
        return None, [error((), exc.message, exc.fix, code=exc.code).at(Position(*exc.pos))]
    except MarkedYAMLError as exc:
        return None, [_syntax_finding(exc, text)]
    except YAMLError as exc:  # the checks above leave the parser nothing else to refuse; stay a finding
        return None, [error((), f"YAML error: {exc}", "fix the YAML at that position", code="yaml")]
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    root = root_pos if data is not None and root_pos is not None else (1, 1)
    if data is None:  # an empty file or document
        data, tree = {}, MapPos(root)
    if not isinstance(data, dict):
        return None, [
            error(
                (),
                "the site spec must be a YAML mapping (key: value pairs) at the top level",
                "start the file with 'site: <name>' and the other sections",
            ).at(Position(*root))
        ]
    return Document(filename, text, digest, data, SourceMap(tree, root)), []


def _syntax_finding(exc: MarkedYAMLError, text: str) -> Finding:
    mark = exc.problem_mark or exc.context_mark
    pos = Position(mark.line + 1, mark.column + 1) if mark is not None else Position(1, 1)
    words = syntax_words(exc, text)
    message = words.message
    if mark is not None and "tab" not in message and _char_at(text, mark.line, mark.column) == "\t":
        message += " (the character there is a tab, '\\t': YAML indents with spaces, never tabs)"
    return error((), f"YAML syntax error: {message}", words.fix, code="yaml").at(pos)


def _char_at(text: str, line: int, column: int) -> str:
    start = 0
    for _ in range(line):
        start = text.find("\n", start) + 1
        if start == 0:
            return ""
    return text[start + column : start + column + 1]


def parse_bytes(
    raw: bytes, filename: str, limits: LoadLimits = DEFAULT_LIMITS
) -> tuple[Document | None, list[Finding]]:
    if len(raw) > limits.max_bytes:
        return None, [too_large(len(raw), limits, "the file")]
    text, findings = decode(raw)
    if text is None:
        return None, findings
    return parse_text(text, filename, limits)


def load_file(path: Path, limits: LoadLimits = DEFAULT_LIMITS) -> tuple[Document | None, list[Finding]]:
    raw, findings = read_bounded(path, limits)
    if raw is None:
        return None, findings
    return parse_bytes(raw, str(path), limits)
