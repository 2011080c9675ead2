"""Version ranges as Huawei's version.info files write them, and the key=value format of those files.

A driver's ``/usr/local/Ascend/driver/version.info`` names the firmware it accepts
(``compatible_version_fw=[7.0.0,7.5.99]``); a firmware's ``/usr/local/Ascend/firmware/version.info`` names
the drivers it accepts (``compatible_version_drv=[23.0.0,23.0.0.],[24.0,24.0.],[24.1,24.1.]``). Both are
lists of inclusive ``[low,high]`` intervals; a bound written with a trailing ``.`` is a prefix: ``24.1.``
stands for every version that starts with 24.1 (24.1.rc3, 24.1.0.3). Bounds are compared with
:class:`Version` ordering, and a version that starts with the low bound is inside even when it sorts before
it (24.1.rc3 is in ``[24.1,24.1.]`` although 24.1.rc3 < 24.1 as a version).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from orchestrator.catalog.version import Version

_INTERVAL = re.compile(r"\[\s*([^,\[\]\s]+)\s*,\s*([^,\[\]\s]+)\s*\]")


@dataclass(frozen=True)
class VersionRange:
    """One inclusive interval; ``low_prefix``/``high_prefix`` mark bounds written as prefixes."""

    low: str
    high: str
    high_prefix: bool = False

    def __contains__(self, version: object) -> bool:
        if not isinstance(version, str | Version):
            return False
        v = version if isinstance(version, Version) else Version(version)
        low, high = Version(self.low), Version(self.high)
        above = v >= low or v.matches_series(self.low)
        below = v <= high or (self.high_prefix and v.matches_series(self.high))
        return above and below

    def __str__(self) -> str:
        return f"[{self.low},{self.high}{'.' if self.high_prefix else ''}]"


@dataclass(frozen=True)
class VersionRanges:
    """A list of intervals as one version.info value; a version is accepted when any interval holds it."""

    ranges: tuple[VersionRange, ...]

    def accepts(self, version: str) -> bool:
        return any(version in r for r in self.ranges)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.ranges)


def at_least(version: str, bound: str) -> bool:
    """``version >= bound`` where the bound is a series prefix: at_least("25.0.rc1.1", "25.0") is True."""
    v = Version(version)
    return v >= Version(bound) or v.matches_series(bound)


def parse_ranges(text: str) -> VersionRanges:
    """Parse ``[7.0.0,7.2.99]`` or ``[23.0.0,23.0.0.],[24.0,24.0.]``; ValueError names the bad text."""
    stripped = text.strip()
    found = list(_INTERVAL.finditer(stripped))
    rebuilt = ",".join(m.group(0) for m in found)
    if not found or rebuilt.replace(" ", "") != stripped.replace(" ", ""):
        raise ValueError(
            f"invalid version range list {text!r}: expected [low,high] intervals separated by ','"
        )
    out: list[VersionRange] = []
    for m in found:
        low, high = m.group(1), m.group(2)
        prefix = high.endswith(".")
        low = low.rstrip(".")
        high = high.rstrip(".")
        try:
            if Version(low) > Version(high) and not Version(low).matches_series(high):
                raise ValueError(f"invalid version range {m.group(0)!r}: low bound above high bound")
        except ValueError as exc:
            raise ValueError(f"invalid version range {m.group(0)!r} in {text!r}: {exc}") from None
        out.append(VersionRange(low, high, prefix))
    return VersionRanges(tuple(out))


def parse_version_info(text: str) -> dict[str, str]:
    """The ``key=value`` lines of a version.info file (surrounding blanks removed, first '=' splits)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key:
            out[key.strip()] = value.strip()
    return out
