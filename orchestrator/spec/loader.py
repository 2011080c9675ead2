"""YAML loading that remembers the line and column of every key and value."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.constructor import DuplicateKeyError
from ruamel.yaml.error import MarkedYAMLError

from orchestrator.spec.findings import Finding, Position, SpecPath, error


@dataclass(frozen=True)
class SourceMap:
    """Maps spec paths to positions in the YAML text (1-based line and column)."""

    root: Any

    def _walk(self, path: SpecPath) -> tuple[Any, Position, SpecPath]:
        node: Any = self.root
        pos = Position(1, 1)
        walked: SpecPath = ()
        for part in path:
            if isinstance(node, CommentedMap) and isinstance(part, str) and part in node:
                line, col = node.lc.value(part)
                if line is None:
                    line, col = node.lc.key(part)
                pos = Position(line + 1, col + 1)
                node = node[part]
            elif isinstance(node, CommentedSeq) and isinstance(part, int) and 0 <= part < len(node):
                line, col = node.lc.item(part)
                pos = Position(line + 1, col + 1)
                node = node[part]
            else:
                break
            walked = (*walked, part)
        return node, pos, walked

    def locate(self, path: SpecPath) -> Position:
        """Position of the value at path, or of the deepest parent that exists."""
        return self._walk(path)[1]

    def locate_key(self, path: SpecPath) -> Position:
        """Position of the key at the end of path (for unknown keys), else like locate()."""
        if not path:
            return Position(1, 1)
        parent, _, walked = self._walk(path[:-1])
        last = path[-1]
        if len(walked) == len(path) - 1 and isinstance(parent, CommentedMap) and last in parent:
            line, col = parent.lc.key(last)
            return Position(line + 1, col + 1)
        return self.locate(path)


@dataclass(frozen=True)
class Document:
    filename: str
    text: str
    sha256: str
    data: Any
    source_map: SourceMap


def _plain(node: Any) -> Any:
    """Convert ruamel round-trip nodes into plain Python values (bool stays bool, ints stay int)."""
    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    if isinstance(node, bool) or node is None:
        return node
    if type(node).__name__ == "ScalarBoolean":
        return bool(node)
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        return str(node)
    return str(node)


def parse_text(text: str, filename: str) -> tuple[Document | None, list[Finding]]:
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    try:
        root = yaml.load(text)
    except DuplicateKeyError as exc:
        return None, [_mark_finding(exc, "duplicate key", "remove or rename one of the two keys")]
    except MarkedYAMLError as exc:
        return None, [_mark_finding(exc, "YAML syntax error", "fix the YAML syntax at that position")]
    digest = hashlib.sha256(text.encode()).hexdigest()
    if root is None:
        root = CommentedMap()
    if not isinstance(root, CommentedMap):
        return None, [
            error(
                (),
                "the site spec must be a YAML mapping (key: value pairs) at the top level",
                "start the file with 'site: <name>' and the other sections",
            ).at(Position(1, 1))
        ]
    return Document(filename, text, digest, _plain(root), SourceMap(root)), []


_DUPLICATE = re.compile(r'found duplicate key "(?P<key>[^"]*)"')


def _mark_finding(exc: MarkedYAMLError, what: str, fix: str) -> Finding:
    mark = exc.problem_mark or exc.context_mark
    pos = Position(mark.line + 1, mark.column + 1) if mark is not None else Position(1, 1)
    detail = " ".join(str(p) for p in (exc.context, exc.problem) if p)
    dup = _DUPLICATE.search(detail)
    if dup is not None:  # ruamel quotes both values, which may be secrets: name the key only
        return error(
            (), f'duplicate key "{dup["key"]}": it appears twice in the same mapping', fix, "yaml"
        ).at(pos)
    return error((), f"{what}: {detail}".strip().rstrip(":"), fix, code="yaml").at(pos)


def load_file(path: Path) -> tuple[Document | None, list[Finding]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, [error((), f"no such file: {path}", "check the path to the site spec", code="io")]
    except (OSError, UnicodeDecodeError) as exc:
        return None, [error((), f"cannot read {path}: {exc}", "make the file readable UTF-8 text", code="io")]
    return parse_text(text, str(path))
