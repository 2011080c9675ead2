"""Version numbers as Huawei (HDK driver/firmware, CANN) and pip (vLLM, torch_npu) write them.

Accepted forms (case-insensitive, a leading ``v`` is ignored): ``24.1.rc3``, ``25.0.rc1.3``, ``23.0.5``,
``7.7.0.1.231``, ``8.0.RC3``, ``9.1.0``, ``9.1.0-beta.1``, ``v0.23.0rc1``, ``2.10.0.post4``,
``3.2.0.dev20260322``, ``2.9.0.post1+git4c901a4``.

Ordering: the version is a list of components compared left to right; a missing component counts as ``0``.
Pre-release components (``dev`` < ``alpha``/``a`` < ``beta``/``b`` < ``rc``) sort before any number at the
same position, so ``24.1.rc3 < 24.1.0`` and ``v0.23.0rc1 < v0.23.0``; a number after an rc extends it, so
``25.0.rc1.3 > 25.0.rc1``. ``postN`` sorts after the release (and before the next number):
``2.10.0 < 2.10.0.post4 < 2.10.0.1``. Trailing zeros do not matter (``9.1 == 9.1.0``). A local label
(``+git...``) sorts after the same version without one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Self

# One component: (0, kind, n) for pre-releases, (1, n, 0) for numbers, (1, 0, n + 1) for postN.
_Part = tuple[int, int, int]
_ZERO: _Part = (1, 0, 0)
_MAX_PARTS = 16
_PRE_KINDS = {"dev": 0, "a": 1, "alpha": 1, "b": 2, "beta": 2, "rc": 3}
_SHAPE = re.compile(r"[0-9][a-z0-9]*(?:[.\-_][a-z0-9]+)*")
_LOCAL = re.compile(r"[a-z0-9]+(?:[.\-_][a-z0-9]+)*")
_TOKEN = re.compile(r"[0-9]+|[a-z]+")
_EXAMPLES = "e.g. 24.1.rc3, 25.0.rc1.3, 7.7.0.1.231, 8.3.RC2, v0.23.0rc1, 2.10.0.post4"


def _parse(text: str) -> tuple[tuple[_Part, ...], str]:
    original = text
    if not isinstance(text, str):  # defensive: YAML may hand us numbers
        raise TypeError(f"version must be a string, got {type(text).__name__}")
    s = text.strip().lower()
    if s.startswith("v"):
        s = s[1:]
    public, plus, local = s.partition("+")
    if not s:
        raise ValueError(f"invalid version {original!r}: empty ({_EXAMPLES})")
    if not _SHAPE.fullmatch(public):
        raise ValueError(
            f"invalid version {original!r}: expected numbers and rc/post/dev/alpha/beta parts separated by "
            f"'.', '-' or '_' ({_EXAMPLES})"
        )
    if plus and not _LOCAL.fullmatch(local):
        raise ValueError(f"invalid version {original!r}: bad local label after '+'")
    tokens = _TOKEN.findall(public)
    parts: list[_Part] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.isdigit():
            parts.append((1, int(tok), 0))
            i += 1
            continue
        if tok not in _PRE_KINDS and tok != "post":
            raise ValueError(
                f"invalid version {original!r}: unknown component {tok!r} "
                f"(allowed words: rc, post, dev, alpha, beta; {_EXAMPLES})"
            )
        number = 0
        if i + 1 < len(tokens) and tokens[i + 1].isdigit():
            number = int(tokens[i + 1])
            i += 1
        i += 1
        parts.append((1, 0, number + 1) if tok == "post" else (0, _PRE_KINDS[tok], number))
    return tuple(parts), local


@dataclass(frozen=True, order=True, init=False, repr=False)
class Version:
    """A parsed version; compares by meaning, prints as written. Frozen and hashable."""

    _key: tuple[tuple[_Part, ...], tuple[int | str, ...]]
    text: str = field(compare=False)
    _parts: tuple[_Part, ...] = field(compare=False)

    def __init__(self, text: str) -> None:
        parts, local = _parse(text)
        if len(parts) > _MAX_PARTS:
            raise ValueError(f"invalid version {text!r}: more than {_MAX_PARTS} components")
        # Padding with zeros to a fixed length makes plain tuple comparison treat a missing component as 0
        # (9.1 == 9.1.0, 7.0.rc1 < 7.0 < 7.0.0.1) and keeps equality and hashing consistent.
        padded = parts + (_ZERO,) * (_MAX_PARTS - len(parts))
        local_key: tuple[int | str, ...] = (1, local) if local else (0,)
        object.__setattr__(self, "_key", (padded, local_key))
        object.__setattr__(self, "text", text.strip())
        object.__setattr__(self, "_parts", parts)

    @classmethod
    def parse(cls, text: str) -> Self:
        """Parse ``text``; raises ValueError naming the text when it is not a version."""
        return cls(text)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Version({self.text!r})"

    @property
    def is_prerelease(self) -> bool:
        """True when any component is rc/dev/alpha/beta (24.1.rc2.2, 8.3.RC2, v0.23.0rc1)."""
        return any(kind == 0 for kind, _, _ in self._parts)

    @property
    def depth(self) -> int:
        """Number of components as written (24.1.rc2.2 -> 4: 24, 1, rc2, 2); more means more specific."""
        return len(self._parts)

    def matches_series(self, series: str) -> bool:
        """True when this version starts with the dotted ``series`` prefix, component by component.

        ``Version("24.1.rc2.2").matches_series("24.1.rc2")`` and ``...("24.1")`` are True;
        ``...("24.1.rc3")`` is False. Raises ValueError when ``series`` is not a version.
        """
        prefix = Version(series)._parts
        return self._parts[: len(prefix)] == prefix
