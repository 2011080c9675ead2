"""Read a `vllm serve` argument list the way one vLLM release's parser reads it.

vLLM's ``FlexibleArgumentParser.parse_args`` first rewrites the list: ``_`` becomes ``-`` in the name of a
``--`` option (up to the first ``.``); ``--name.key value`` sets one key of a JSON option; ``-O3``,
``-O=3`` and ``-O 3`` set the option that ``-O`` stands for in that release. argparse then reads
``--name=value``, unique prefixes of options (vLLM's parsers allow abbreviations), short aliases
(``-tp``), a value glued to a two-character option (``-qascend``), and the values each option takes by its
``nargs``; each value is converted by the option's type and checked against its choices after conversion.

:func:`read_args` returns one :class:`ArgUse` per option (or stray value) with the option it resolves to
and, when the real parser would refuse it, why. The tests check this reader against the probes that
scripts/gen-vllm-flags ran through the real parser of each release.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from orchestrator.catalog.flags import FlagSpec, FlagTable
from orchestrator.catalog.vllm_types import CONVERSION_ERRORS, CONVERTERS

_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")
_NAME = re.compile(r"(?<=--)[^.]*")
_O_LEVELS = frozenset({"0", "1", "2", "3"})


@dataclass(frozen=True)
class ArgUse:
    """One option of the list (or a stray value) as the parser reads it."""

    index: int
    given: str
    option: FlagSpec | None
    spelling: str
    values: tuple[str, ...] = ()
    key: str | None = None
    problem: str | None = None
    late_problem: str | None = None
    abbreviated: bool = False

    @property
    def stray(self) -> bool:
        """A value no option takes (argparse: 'unrecognized arguments')."""
        return not self.given.startswith("-") or bool(_NEGATIVE_NUMBER.match(self.given))


_KIND_WORDS = {
    "int": "an integer",
    "float": "a number",
    "json": "JSON",
    "human_readable_int": "an integer (suffixes k/K, m/M, g/G allowed)",
    "human_readable_int_or_auto": "an integer (k/K, m/M suffixes allowed) or 'auto'",
    "port": "a port number 1024-65535",
}


def convert(spec: FlagSpec, value: str) -> Any:
    """The value as the option's type converts it; ValueError when the parser would refuse it."""
    if spec.optional and value in ("", "None"):
        return None
    converter = CONVERTERS[spec.kind or "str"]
    try:
        return converter(value)
    except CONVERSION_ERRORS as exc:
        raise ValueError(f"{value!r} is not {_KIND_WORDS.get(spec.kind or 'str', 'valid')}") from exc


def allowed_values(spec: FlagSpec, table: FlagTable) -> tuple[str, ...] | None:
    """The values a release accepts: the parser's choices, or for --quantization (which vLLM checks when it
    builds the model config, not in the parser) the registered quantization methods."""
    if spec.choices is not None:
        return tuple(str(c) for c in spec.choices if c != "None")
    if spec.dest == "quantization":
        return table.quantization_methods
    return None


def check_value(spec: FlagSpec, value: str, table: FlagTable) -> str | None:
    """Why the parser of ``table``'s release refuses ``value`` for ``spec`` (type, choices), or None."""
    try:
        converted = convert(spec, value)
    except ValueError as exc:
        return str(exc)
    if spec.choices is not None and converted not in spec.choices:
        return f"{value!r} is not one of {', '.join(allowed_values(spec, table) or ())}"
    return None


def check_late(spec: FlagSpec, value: str, table: FlagTable) -> str | None:
    """Why vLLM refuses a value the parser let through, when it builds its config (unknown quantization
    methods: "Unknown quantization method: ... Must be one of ..."), or None."""
    allowed = allowed_values(spec, table)
    if spec.choices is not None or allowed is None or (spec.optional and value in ("", "None")):
        return None
    return None if value in allowed else f"{value!r} is not one of {', '.join(allowed)}"


def _looks_like_option(token: str, table: FlagTable) -> bool:
    if not token.startswith("-") or token == "-" or _NEGATIVE_NUMBER.match(token):
        return False
    return " " not in token or token.split("=", 1)[0] in table.by_option


@dataclass(frozen=True)
class _Match:
    option: FlagSpec | None
    spelling: str
    glued: str | None = None
    problem: str | None = None
    abbreviated: bool = False


def _resolve(name: str, table: FlagTable) -> _Match:
    """An option name as argparse (Python 3.11) looks it up: exact; for ``--`` names a unique prefix when
    abbreviations are allowed; for ``-`` names a two-character option with its value glued on
    (``-qascend``) or a unique prefix (``-t`` for ``-tp``)."""
    spec = table.get(name)
    if spec is not None:
        return _Match(spec, name)
    found: list[_Match] = []
    if name.startswith("--"):
        if table.allow_abbrev:
            found = [_Match(s, f, abbreviated=True) for f, s in table.by_option.items() if f.startswith(name)]
    elif len(name) > 2:
        found = [
            _Match(s, f, name[2:]) if f == name[:2] else _Match(s, f, abbreviated=True)
            for f, s in table.by_option.items()
            if f == name[:2] or f.startswith(name)
        ]
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        names = sorted(m.spelling for m in found)
        more = f" and {len(names) - 6} more" if len(names) > 6 else ""
        matches = ", ".join(names[:6]) + more
        return _Match(None, name, problem=f"ambiguous option: {name} could match {matches}")
    return _Match(None, name, problem="unrecognized arguments")


def _normalise(token: str) -> str:
    if token.startswith("--"):
        key, eq, value = token.partition("=")
        return _NAME.sub(lambda m: m.group(0).replace("_", "-"), key, count=1) + eq + value
    return token


def _count(spec: FlagSpec) -> tuple[int, int | None]:
    """(minimum, maximum) number of values; maximum None = unbounded."""
    nargs = spec.nargs
    if not spec.takes_value:
        return 0, 0
    if nargs is None:
        return 1, 1
    if isinstance(nargs, int):
        return nargs, nargs
    return {"?": (0, 1), "*": (0, None), "+": (1, None)}.get(nargs, (1, 1))


def _take(
    args: Sequence[str], start: int, spec: FlagSpec, inline: str | None, table: FlagTable
) -> tuple[tuple[str, ...], int, str | None]:
    """Values for ``spec`` (inline ``=value`` or the following tokens), the next index and a problem."""
    low, high = _count(spec)
    where = "/".join(spec.flags)
    if inline is not None:
        if high == 0:
            return (), start, f"argument {where}: ignored explicit argument {inline!r}"
        if low > 1:
            return (inline,), start, f"argument {where}: expected {low} arguments"
        return (inline,), start, None
    values: list[str] = []
    i = start
    while i < len(args) and (high is None or len(values) < high) and not _looks_like_option(args[i], table):
        values.append(args[i])
        i += 1
    if len(values) < low:
        need = (
            "one argument"
            if low == 1 and high == 1
            else f"at least {low} argument"
            if high is None
            else (f"{low} arguments")
        )
        return tuple(values), i, f"argument {where}: expected {need}"
    return tuple(values), i, None


def read_args(args: Sequence[str], table: FlagTable) -> list[ArgUse]:
    """Each option of ``args`` (``vllm serve`` arguments after the model) as ``table``'s release reads it."""
    out: list[ArgUse] = []
    i = 0
    while i < len(args):
        token = args[i]
        if token == "--":
            out.extend(
                ArgUse(j, a, None, "", problem="unrecognized arguments") for j, a in enumerate(args[i:], i)
            )
            break
        if not _looks_like_option(token, table):
            out.append(ArgUse(i, token, None, "", problem="unrecognized arguments"))
            i += 1
            continue
        shorthand = _o_shorthand(args, i, table)
        if shorthand is not None:
            use, i = shorthand
            out.append(use)
            continue
        use, i = _read_option(args, i, table)
        out.append(use)
    return out


def _o_shorthand(args: Sequence[str], i: int, table: FlagTable) -> tuple[ArgUse, int] | None:
    """``-O3`` / ``-O=3`` / ``-O 3`` in releases where FlexibleArgumentParser rewrites them (v0.13 and
    later: --optimization-level); where ``-O`` is a registered option, argparse reads it like any other."""
    token, short_o = args[i], table.short_o
    if short_o is None or table.get("-O") is not None or not token.startswith("-O"):
        return None
    if token != "-O":
        value = token[3:] if token[2:3] == "=" else token[2:]
        return _with_values(ArgUse(i, token, short_o, short_o.name), (value,), table), i + 1
    if i + 1 < len(args) and args[i + 1] in _O_LEVELS:
        return _with_values(ArgUse(i, token, short_o, short_o.name), (args[i + 1],), table), i + 2
    return None


def _read_option(args: Sequence[str], i: int, table: FlagTable) -> tuple[ArgUse, int]:
    token = args[i]
    given = token.split("=", 1)[0]
    name, eq, inline_value = _normalise(token).partition("=")
    inline = inline_value if eq else None
    if "." in name:  # --name.key value: one key of a JSON option, always followed by its value
        name, _, key = name.partition(".")
        if inline is None:
            inline = args[i + 1] if i + 1 < len(args) else ""
            nxt = i + 2
        else:
            nxt = i + 1
        match = _resolve(name, table)
        if match.option is None:
            return ArgUse(i, given, None, match.spelling, problem=match.problem), nxt
        return ArgUse(
            i, given, match.option, match.spelling, (inline,), key, abbreviated=match.abbreviated
        ), nxt
    match = _resolve(name, table)
    if match.option is None:
        return ArgUse(i, given, None, match.spelling, problem=match.problem), i + 1
    if match.glued is not None and inline is None:
        inline = match.glued
    values, nxt, problem = _take(args, i + 1, match.option, inline, table)
    use = ArgUse(
        i, given, match.option, match.spelling, values, problem=problem, abbreviated=match.abbreviated
    )
    return (use if problem else _with_values(use, values, table)), nxt


def _with_values(use: ArgUse, values: tuple[str, ...], table: FlagTable) -> ArgUse:
    spec = use.option
    if spec is None:
        return use
    problem = next((r for v in values if (r := check_value(spec, v, table))), None)
    late = next((r for v in values if (r := check_late(spec, v, table))), None)
    return replace(use, values=values, problem=problem, late_problem=late)
