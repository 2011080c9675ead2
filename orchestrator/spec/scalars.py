"""Scalars of the YAML 1.2 core schema: the tag of a scalar event and its Python value, within limits."""

from __future__ import annotations

import math
from typing import Any

from ruamel.yaml.events import ScalarEvent
from ruamel.yaml.resolver import VersionedResolver

Pos = tuple[int, int]
"""1-based line and column."""

CORE = "tag:yaml.org,2002:"
# ruamel's YAML 1.2 implicit resolvers (first character -> [(tag, regexp)]), copied once: calling
# resolver.resolve() per scalar costs more than the parse itself.
_IMPLICIT: dict[str, list[tuple[str, Any]]] = {
    str(k): [(str(tag), rx) for tag, rx in v]
    for k, v in VersionedResolver(version=(1, 2)).versioned_resolver.items()
    if k is not None
}


def resolve_plain(text: str) -> str:
    """The tag YAML 1.2 gives an untagged plain scalar (int, float, bool, null, ...; str otherwise)."""
    for tag, regexp in _IMPLICIT.get(text[:1], ()):
        if regexp.match(text):
            return tag
    return CORE + "str"


def tag_of(event: ScalarEvent) -> tuple[str, bool]:
    """(tag, whether the user wrote it). Quoted and block scalars are strings unless tagged."""
    tag = event.tag
    if tag is None:
        return (resolve_plain(event.value) if event.implicit[0] else CORE + "str"), False
    if tag == "!":  # the non-specific tag: a string
        return CORE + "str", False
    return str(tag), True


class ComposeError(Exception):
    def __init__(self, pos: Pos, message: str, fix: str, code: str = "yaml") -> None:
        super().__init__(message)
        self.pos, self.message, self.fix, self.code = pos, message, fix, code


def show_tag(tag: str) -> str:
    return "!!" + tag[len(CORE) :] if tag.startswith(CORE) else tag


def unsupported_tag(tag: str, pos: Pos) -> ComposeError:
    shown = show_tag(tag)
    return ComposeError(
        pos,
        f"YAML tag '{shown}' is not supported: a site spec holds plain mappings, lists, strings, numbers, "
        "true/false and null",
        f"remove '{shown}' and write the value plainly (quote it to make it a string)",
        code="tag",
    )


def construct(event: ScalarEvent, pos: Pos, max_digits: int) -> Any:
    """The Python value of a scalar: str, int, float, bool or None; ComposeError for anything else."""
    text = str(event.value)
    tag, explicit = tag_of(event)
    if tag in (CORE + "str", CORE + "merge", CORE + "value", CORE + "yaml") or (
        tag == CORE + "timestamp" and not explicit
    ):
        return text  # an unquoted date stays the text the user wrote
    if tag == CORE + "null" and (not explicit or text.lower() in ("", "~", "null")):
        return None
    if tag == CORE + "bool" and text.lower() in ("true", "false"):
        return text.lower() == "true"
    if tag == CORE + "int":
        return _int(text, pos, max_digits)
    if tag == CORE + "float":
        return _float(text, pos)
    if tag in (CORE + "null", CORE + "bool"):
        raise ComposeError(
            pos,
            f"'{text}' is not a {tag[len(CORE) :]} value",
            f"remove '{show_tag(tag)}' or fix the value",
        )
    raise unsupported_tag(tag, pos)


def _int(text: str, pos: Pos, max_digits: int) -> int:
    digits = text.replace("_", "").lstrip("+-")
    base = {"0x": 16, "0o": 8, "0b": 2}.get(digits[:2].lower(), 10)
    body = digits[2:] if base != 10 else digits
    if len(body) > max_digits:
        raise ComposeError(
            pos,
            f"a number with {len(body):,} digits is longer than any field of a site spec takes (it has "
            f"at most {max_digits} digits)",
            "check the value against the field's range in docs/spec.md",
            code="value",
        )
    try:
        value = int(body, base)
    except ValueError:
        raise ComposeError(pos, f"'{text}' is not an integer", "write the number in decimal digits") from None
    return -value if text.lstrip().startswith("-") else value


def _float(text: str, pos: Pos) -> float:
    s = text.replace("_", "").lower()
    special = {".inf": math.inf, "+.inf": math.inf, "-.inf": -math.inf, ".nan": math.nan}
    if s in special:
        return special[s]
    try:
        return float(s)
    except ValueError:
        raise ComposeError(pos, f"'{text}' is not a number", "write the number as e.g. 0.9 or 1e3") from None
