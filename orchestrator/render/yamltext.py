"""The YAML text of one rendered inventory file: PyYAML's output, written by a small emitter of our own.

`pyyaml_dump` is the definition: yaml.dump with the C emitter, block style, insertion order, no aliases,
multi-line strings as literal blocks. Its Python representer and resolver visit every node of every file
(about 600 per host_vars file), which made them 97 % of `render` for a large site. `Emitter.dump` writes the
same bytes for the plain data render builds (dict, list, str, int, float, bool, None) by walking it once:

- structure: block mappings and sequences, two-space indent, sequences inside a mapping not indented
  (`key:` then `- item` at the key's column), `{}` / `[]` for empty ones: what libyaml writes;
- scalars: a string of at most 100 harmless characters (letters, digits, `_./-()=+@,%~`, `:` not before a
  space or last, inner spaces; no indicator first) is written plain, or in single quotes when PyYAML's
  implicit resolvers read it as something else (`'yes'`, `'1.5'`, `'2026-12-06'`, `'null'`); an int as
  str() writes it, a bool as true/false, None as null; any other scalar is rendered by `pyyaml_dump`
  itself, alone in a one-key document, and remembered (per Emitter, so per render: a 1,024-server
  render asks PyYAML about 11 scalars instead of dumping 620,000 nodes).

Whatever it does not handle exactly, it gives to `pyyaml_dump` (the whole file): another type, a scalar
whose YAML spans lines (a literal block, a complex key) or is long enough that libyaml could fold it at the
width of 1,000 columns, nesting deeper than _MAX_DEPTH. tests/unit/test_yamltext.py compares both byte for
byte on every example inventory and on generated hostile data.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

try:  # the C emitter: the one whose output is the definition when PyYAML has libyaml
    from yaml import CSafeDumper as _BaseDumper
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeDumper as _BaseDumper  # type: ignore[assignment]


class _Dumper(_BaseDumper):
    """Block-style YAML, no aliases, stable output."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str_presenter(dumper: _BaseDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str_presenter)


def pyyaml_dump(content: Any) -> str:
    """The YAML of one inventory file as PyYAML writes it: what Emitter.dump must reproduce byte for byte."""
    return yaml.dump(
        content,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        width=1000,
        allow_unicode=True,
        explicit_start=True,
    )


# Plain in block context in libyaml's analysis: printable ASCII; no indicator first (`?:,[]{}#&*!|>'"%@`,
# `- `, `-` alone, `---`); no `: `, `#`, quote, tab or line break; no space first or last.
_HARMLESS = re.compile(
    r"(?!.*: )(?!---)(?:[A-Za-z0-9_/~]|-(?=[-A-Za-z0-9_./()=+@,%~]))"
    r"(?:[-A-Za-z0-9_./ ()=+@,%~:]{0,98}[-A-Za-z0-9_./()=+@,%~])?"
)
_STR_TAG = "tag:yaml.org,2002:str"
_IMPLICIT = _Dumper.yaml_implicit_resolvers  # first character -> [(tag, regexp)]: bool, int, float, null, ...
_LONGEST = 400  # characters of one rendered scalar; keys and values of this length cannot reach column 1000
_MAX_DEPTH = 64  # levels of nesting (two columns each at most)
_NONE: list[tuple[str, re.Pattern[str]]] = []
_BREAKS = ("\n", "\r", "\x85", "\u2028", "\u2029")


class Unhandled(Exception):
    """A value the emitter does not write itself; the file is written by pyyaml_dump instead."""


def _harmless_text(value: str) -> str | None:
    """How a harmless string is written: plain, or single-quoted when a resolver reads it as non-string."""
    if _HARMLESS.fullmatch(value) is None:
        return None
    for tag, regexp in _IMPLICIT.get(value[0], _NONE) + _IMPLICIT.get(None, _NONE):
        if regexp.match(value):
            return value if tag == _STR_TAG else f"'{value}'"
    return value


def _single_line(text: str) -> bool:
    return len(text) <= _LONGEST and not any(b in text for b in _BREAKS)


class Emitter:
    """Writes inventory files as pyyaml_dump does; one instance remembers scalars across a render's files."""

    def __init__(self) -> None:
        self._values: dict[str, str] = {}  # string -> its text as a value (mapping value or sequence item)
        self._keys: dict[str, str] = {}  # string -> its text as a mapping key
        self._others: dict[tuple[type, str], str] = {}  # (type, repr) of a float value or non-string key

    def dump(self, content: Any) -> str:
        """pyyaml_dump(content), byte for byte."""
        text = self.emit(content)
        return pyyaml_dump(content) if text is None else text

    def emit(self, content: Any) -> str | None:
        """pyyaml_dump(content) written by this emitter, or None when it leaves the file to pyyaml_dump."""
        if type(content) is not dict or not content:
            return None
        out = ["---\n"]
        try:
            self._mapping(content, "", "", out, 0)
        except Unhandled:
            return None
        return "".join(out)

    # Values and keys pyyaml_dump has to render: it does, in a one-key document, and its text is kept when
    # it is one short line (the same in every block context).
    def _value_by_pyyaml(self, value: Any) -> str:
        try:
            text = pyyaml_dump({"k": value})
        except Exception as exc:  # the whole file fails the same way in pyyaml_dump
            raise Unhandled from exc
        if not (text.startswith("---\nk: ") and text.endswith("\n")):
            raise Unhandled
        text = text[7:-1]
        if not _single_line(text):
            raise Unhandled
        return text

    def _key_by_pyyaml(self, key: Any) -> str:
        try:
            text = pyyaml_dump({key: None})
        except Exception as exc:
            raise Unhandled from exc
        if not (text.startswith("---\n") and text.endswith(": null\n")) or text.startswith("---\n? "):
            raise Unhandled
        text = text[4:-7]
        if not _single_line(text):
            raise Unhandled
        return text

    def _str_text(self, value: str) -> str:
        text = self._values[value] = _harmless_text(value) or self._value_by_pyyaml(value)
        return text

    def _key_text(self, key: Any) -> str:
        """The text of a key not seen before in this render (`_keys` holds those seen)."""
        if type(key) is str:
            text = _harmless_text(key) or self._key_by_pyyaml(key)
        elif key is None or type(key) in (int, bool, float):
            text = self._key_by_pyyaml(key)  # kept under the key itself: 1, 1.0 and True are equal keys
            self._others[(type(key), repr(key))] = text
            return text
        else:
            raise Unhandled
        self._keys[key] = text
        return text

    def _scalar(self, value: Any) -> str:
        """The text of a scalar value other than a string; Unhandled for another type."""
        kind = type(value)
        if kind is int:
            text = str(value)  # SafeRepresenter: str(data), which always resolves as an int
            if len(text) > _LONGEST:
                raise Unhandled
            return text
        if kind is bool:
            return "true" if value else "false"
        if value is None:
            return "null"
        if kind is float:
            memo = (float, repr(value))  # repr: 0.0 and -0.0 are equal, their texts are not
            known = self._others.get(memo)
            if known is None:
                known = self._others[memo] = self._value_by_pyyaml(value)
            return known
        raise Unhandled

    def _mapping(self, mapping: dict[Any, Any], indent: str, first: str, out: list[str], depth: int) -> None:
        """Write a non-empty mapping: its first key after `first` (the line so far), the rest at `indent`."""
        if depth > _MAX_DEPTH:
            raise Unhandled
        keys, values, others, append = self._keys, self._values, self._others, out.append
        lead = first
        for key, value in mapping.items():
            if type(key) is str:
                ktext = keys.get(key) or self._key_text(key)
            else:
                ktext = others.get((type(key), repr(key))) or self._key_text(key)
            kind = type(value)
            if kind is str:
                append(f"{lead}{ktext}: {values.get(value) or self._str_text(value)}\n")
            elif kind is dict:
                if value:
                    append(f"{lead}{ktext}:\n")
                    inner = indent + "  "
                    self._mapping(value, inner, inner, out, depth + 1)
                else:
                    append(f"{lead}{ktext}: {{}}\n")
            elif kind is list:
                if value:
                    append(f"{lead}{ktext}:\n")
                    self._sequence(value, indent, indent, out, depth + 1)  # not indented under a key
                else:
                    append(f"{lead}{ktext}: []\n")
            else:
                append(f"{lead}{ktext}: {self._scalar(value)}\n")
            lead = indent

    def _sequence(self, items: list[Any], indent: str, first: str, out: list[str], depth: int) -> None:
        """Write a non-empty sequence: item one after `first` (the line so far), the rest at `indent`."""
        if depth > _MAX_DEPTH:
            raise Unhandled
        values, append = self._values, out.append
        lead = first
        for item in items:
            kind = type(item)
            if kind is str:
                append(f"{lead}- {values.get(item) or self._str_text(item)}\n")
            elif kind is dict:
                if item:
                    self._mapping(item, indent + "  ", lead + "- ", out, depth + 1)
                else:
                    append(f"{lead}- {{}}\n")
            elif kind is list:
                if item:
                    self._sequence(item, indent + "  ", lead + "- ", out, depth + 1)
                else:
                    append(f"{lead}- []\n")
            else:
                append(f"{lead}- {self._scalar(item)}\n")
            lead = indent


def dump(content: Any) -> str:
    """The YAML text of one inventory file (pyyaml_dump's bytes)."""
    return Emitter().dump(content)
