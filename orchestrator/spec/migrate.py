"""Rewrite a site spec of an older format in the current one, keeping its comments, key order and quoting.

One step per format (STEPS[n] turns format n into n + 1), applied in order to ruamel.yaml's round-trip
tree; the text ruamel writes back is read again with the spec loader and must hold exactly the old data
with the steps' changes, or nothing is rewritten (ruamel.yaml reads YAML 1.2 and the loader YAML 1.1:
a value they read differently, such as 910_93, would otherwise change silently).
"""

from __future__ import annotations

import copy
import difflib
import io
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import YAMLError
from ruamel.yaml.scalarstring import ScalarString

from orchestrator.spec.findings import Finding, Position, SpecPath, error, format_path
from orchestrator.spec.limits import DEFAULT_LIMITS, LoadLimits
from orchestrator.spec.loader import Document, parse_text
from orchestrator.spec.version import RENAMED_VALUES, SPEC_VERSION, UNVERSIONED, read_version

_REMOVED = object()
"""Change.value of a key the step removed."""


@dataclass(frozen=True)
class Change:
    """One edit of a step: the field, what happened to it (one line for people) and its new value."""

    path: SpecPath
    what: str
    value: Any = field(default=None, compare=False)

    def line(self) -> str:
        return f"{format_path(self.path)}: {self.what}"


@dataclass(frozen=True)
class Migration:
    """What migrating a spec does: from which format to which, each change, and the new text."""

    from_version: int
    to_version: int
    changes: tuple[Change, ...]
    text: str
    reformatted: tuple[int, ...] = ()
    """Lines of the original that ruamel.yaml wrote differently without a change of this migration there
    (spacing, `~` for null, ...): their values are the same (checked), their text is not."""

    @property
    def needed(self) -> bool:
        return self.from_version != self.to_version


class MigrateError(Exception):
    """The spec cannot be migrated: a sentence, its fix and, when known, where in the file."""

    def __init__(self, message: str, fix: str, position: Position | None = None, path: SpecPath = ()) -> None:
        super().__init__(message)
        self.message, self.fix, self.position, self.path = message, fix, position, path

    @classmethod
    def of(cls, finding: Finding) -> MigrateError:
        fix = finding.fix or "fix the file at that position"
        return cls(finding.message, fix, finding.position, finding.path)

    def finding(self) -> Finding:
        return error(self.path, self.message, self.fix, code="migrate").at(self.position)


# ------------------------------------------------------------------------------------------------ steps
def _format_0_to_1(data: CommentedMap) -> list[Change]:
    """spec_version: 1 first (in place of a schema_version key, never read, that format 0 allowed), then
    the values format 1 renamed (RENAMED_VALUES)."""
    changes = _add_version(data)
    for path, renamed in RENAMED_VALUES.items():
        parent = _mapping_at(data, path[:-1])
        key = path[-1]
        old = parent.get(key) if parent is not None else None
        if not isinstance(old, str) or old not in renamed:
            continue
        new = renamed[old]
        parent[key] = type(old)(new.target) if isinstance(old, ScalarString) else new.target
        note = f" ({new.note})" if new.note else ""
        changes.append(Change(path, f"'{old}' -> '{new.target}'{note}", new.target))
    return changes


STEPS: dict[int, Callable[[CommentedMap], list[Change]]] = {0: _format_0_to_1}
"""Format n -> the step that turns it into format n + 1 (docs/spec.md lists them)."""


def _add_version(data: CommentedMap) -> list[Change]:
    if "schema_version" in data:  # format 0 accepted it and read nothing from it: its line becomes ours
        at = list(data).index("schema_version")
        comment = data.ca.items.pop("schema_version", None)
        del data["schema_version"]
        data.insert(at, "spec_version", SPEC_VERSION)
        if comment is not None:
            data.ca.items["spec_version"] = comment
        return [
            Change(("schema_version",), "removed (never read); spec_version takes its line", _REMOVED),
            Change(("spec_version",), f"set to {SPEC_VERSION}, where schema_version was", SPEC_VERSION),
        ]
    if "spec_version" in data:  # an explicit 0
        data["spec_version"] = SPEC_VERSION
        return [Change(("spec_version",), f"0 -> {SPEC_VERSION}", SPEC_VERSION)]
    data.insert(0, "spec_version", SPEC_VERSION)
    return [Change(("spec_version",), f"added as the first key: {SPEC_VERSION}", SPEC_VERSION)]


def _mapping_at(data: CommentedMap, path: SpecPath) -> Any:
    node: Any = data
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


# ---------------------------------------------------------------------------------------------- migrate
def migrate_text(text: str, filename: str = "site.yaml", limits: LoadLimits = DEFAULT_LIMITS) -> Migration:
    doc, findings = parse_text(text, filename, limits)
    if doc is None:
        raise MigrateError.of(findings[0])
    return migrate_document(doc)


def migrate_document(doc: Document) -> Migration:
    """The migration of a parsed spec (Migration.needed is False when it is at the current format)."""
    version = _version(doc)
    if version == SPEC_VERSION:
        return Migration(version, version, (), doc.text)
    yaml = _round_trip(doc.text)
    try:
        tree = yaml.load(doc.text)
    except YAMLError as exc:  # the loader read it; ruamel's round-trip reader may still refuse
        raise MigrateError(
            f"ruamel.yaml cannot read this file to rewrite it: {str(exc).splitlines()[0]}",
            f"add 'spec_version: {SPEC_VERSION}' as the first key and make the changes docs/spec.md lists "
            '("Migrations") by hand',
        ) from None
    changes: list[Change] = []
    for step in range(version, SPEC_VERSION):
        changes += STEPS[step](tree)
    out = io.StringIO()
    yaml.dump(tree, out)
    text = out.getvalue()
    if "\r\n" in doc.text:
        text = text.replace("\n", "\r\n")
    _verify(doc, text, changes)
    return Migration(version, SPEC_VERSION, tuple(changes), text, _reformatted(doc, text, changes))


def _version(doc: Document) -> int:
    version = read_version(doc.data)
    where = doc.source_map.locate(("spec_version",))
    if version is None or version < UNVERSIONED:
        raise MigrateError(
            f"spec_version is {doc.data['spec_version']!r}, not a spec format (a whole number, "
            f"{UNVERSIONED} to {SPEC_VERSION})",
            f"write the format the spec was written for, e.g. spec_version: {SPEC_VERSION}, or delete the "
            f"line when it predates spec formats (format {UNVERSIONED}) and run `orchestrator migrate SITE` "
            "again",
            where,
            ("spec_version",),
        )
    if version > SPEC_VERSION:
        raise MigrateError(
            f"spec format {version} is newer than this release of orchestrator reads and migrates to "
            f"(spec format {SPEC_VERSION})",
            "upgrade orchestrator to a release that reads this format",
            where,
            ("spec_version",),
        )
    return version


def _round_trip(text: str) -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 1 << 20  # never fold a long line
    mapping, sequence, offset = guess_indent(text)
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    first = next((ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")), "")
    yaml.explicit_start = first.rstrip() == "---" or first.startswith("--- ")
    return yaml


_KEY_LINE = re.compile(r"^(?P<indent> *)(?P<dash>- +)?[^\s#-][^:#]*:(\s|$)")


def guess_indent(text: str) -> tuple[int, int, int]:
    """ruamel's (mapping, sequence, offset) indentation as the file writes it: the indentation of the first
    nested key under a key, and of the first list item ('- ') under a key with the column of its content.
    Default (2, 4, 2): the examples' layout."""
    mapping = sequence = offset = None
    previous: tuple[int, bool] | None = None  # (indent, ends with ':') of the last content line
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        if previous is not None and previous[1] and indent >= previous[0]:
            if stripped.startswith("- "):
                if sequence is None:
                    after = stripped[1:]
                    offset = indent - previous[0]
                    sequence = offset + 1 + len(after) - len(after.lstrip(" "))
            elif mapping is None and indent > previous[0] and _KEY_LINE.match(line):
                mapping = indent - previous[0]
        previous = (indent, stripped.endswith(":"))
        if mapping is not None and sequence is not None:
            break
    mapping = mapping or 2
    if sequence is None or offset is None:
        sequence, offset = mapping + 2, mapping
    return mapping, max(sequence, offset + 2), offset


def _verify(doc: Document, text: str, changes: list[Change]) -> None:
    expected = copy.deepcopy(doc.data)
    for change in changes:
        parent = expected
        for part in change.path[:-1]:
            parent = parent[part]
        if change.value is _REMOVED:
            parent.pop(change.path[-1], None)
        else:
            parent[change.path[-1]] = change.value
    written, _ = parse_text(text, doc.filename)
    if written is not None and written.data == expected:
        return
    differs = _first_difference(expected, written.data if written is not None else None)
    raise MigrateError(
        "the rewritten file would read differently from the original beyond the migration's changes (at "
        f"{differs}): ruamel.yaml, which rewrites it, reads some values unlike the spec loader (e.g. an "
        "unquoted 910_93)",
        f'quote that value (e.g. chip: "910_93") and run `orchestrator migrate SITE` again, or add '
        f"'spec_version: {SPEC_VERSION}' as the first key and make the changes docs/spec.md lists "
        '("Migrations") by hand',
    )


def _reformatted(doc: Document, text: str, changes: list[Change]) -> tuple[int, ...]:
    """Original lines the new text writes differently, other than the lines of the changes themselves."""
    ours = {doc.source_map.locate(c.path).line for c in changes if c.path[-1] in _parent_keys(doc, c.path)}
    old, new = doc.text.splitlines(), text.splitlines()
    out: set[int] = set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            out.update(n for n in range(i1 + 1, i2 + 1) if n not in ours)
        elif tag == "insert" and any(not ln.startswith("spec_version:") for ln in new[j1:j2]):
            out.add(min(i1 + 1, len(old)))
    return tuple(sorted(out))


def _parent_keys(doc: Document, path: SpecPath) -> Any:
    node: Any = doc.data
    for part in path[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else {}


def _first_difference(want: Any, got: Any, path: SpecPath = ()) -> str:
    if isinstance(want, dict) and isinstance(got, dict):
        for key in [*want, *(k for k in got if k not in want)]:
            if want.get(key, _REMOVED) != got.get(key, _REMOVED):
                return _first_difference(want.get(key), got.get(key), (*path, key))
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for i, (a, b) in enumerate(zip(want, got, strict=True)):
            if a != b:
                return _first_difference(a, b, (*path, i))
    return format_path(path)
