"""HDK driver <-> firmware compatibility (both directions) and the driver range of each CANN release
(data/hdk.yaml)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from orchestrator.catalog._data import Confidence, Row, load, rows
from orchestrator.catalog.ranges import VersionRange, VersionRanges, at_least, parse_ranges
from orchestrator.catalog.version import Version

_FILE = "hdk.yaml"
_T = TypeVar("_T")


@dataclass(frozen=True)
class DriverSeries:
    """An HDK driver release line and the firmware it accepts (its version.info compatible_version_fw)."""

    series: str
    compatible_version_fw: VersionRanges
    confidence: Confidence
    known_pairs: tuple[tuple[str, str], ...] = ()

    @property
    def firmware_min(self) -> str:
        """Lowest bound of compatible_version_fw (the simulator writes one [min,max] interval)."""
        return min((r.low for r in self.compatible_version_fw.ranges), key=Version)

    @property
    def firmware_max(self) -> str:
        return max((r.high for r in self.compatible_version_fw.ranges), key=Version)


@dataclass(frozen=True)
class FirmwareLine:
    """A firmware build and the drivers it accepts (its version.info compatible_version_drv)."""

    version: str
    package_version: str
    compatible_version_drv: VersionRanges
    confidence: Confidence


@dataclass(frozen=True)
class CannRequirement:
    """The HDK driver range a CANN release supports (inclusive, series-prefix bounds)."""

    version: str
    min_driver: str
    max_driver: str  # "" when no source gives an upper end
    paired_driver: str
    full_graph_min_driver: str
    confidence: Confidence

    def driver_supported(self, driver: str) -> bool:
        """Whether the driver lies in min_driver..max_driver (both series prefixes; no max: any newer)."""
        if self.max_driver:
            return driver in VersionRange(self.min_driver, self.max_driver, high_prefix=True)
        return at_least(driver, self.min_driver)

    def driver_too_old(self, driver: str) -> bool:
        return not at_least(driver, self.min_driver)

    def describe_range(self) -> str:
        return (
            f"{self.min_driver}.x to {self.max_driver}.x"
            if self.max_driver
            else f"{self.min_driver}.x or newer"
        )


@dataclass(frozen=True)
class HdkTable:
    drivers: tuple[DriverSeries, ...]
    firmware: tuple[FirmwareLine, ...]
    canns: tuple[CannRequirement, ...]


def _ranges(row: Row, key: str) -> VersionRanges:
    try:
        return parse_ranges(row.text(key))
    except ValueError as exc:
        raise row.error(f"field '{key}': {exc}") from None


def _pairs(row: Row) -> tuple[tuple[str, str], ...]:
    pairs: list[tuple[str, str]] = []
    for pair in row.items("known_pairs"):
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
            raise row.error(f"known_pairs entries must be [driver, firmware] strings, got {pair!r}")
        for v in pair:
            try:
                Version(v)
            except ValueError as exc:
                raise row.error(f"known_pairs: {exc}") from None
        pairs.append((pair[0], pair[1]))
    return tuple(pairs)


def _series_row(row: Row) -> DriverSeries:
    s = DriverSeries(
        series=row.version("series"),
        compatible_version_fw=_ranges(row, "compatible_version_fw"),
        confidence=row.confidence(),
        known_pairs=_pairs(row),
    )
    row.done()
    return s


def _firmware_row(row: Row) -> FirmwareLine:
    f = FirmwareLine(
        version=row.version("version"),
        package_version=row.version("package_version"),
        compatible_version_drv=_ranges(row, "compatible_version_drv"),
        confidence=row.confidence(),
    )
    row.done()
    return f


def _cann_row(row: Row) -> CannRequirement:
    c = CannRequirement(
        version=row.version("version"),
        min_driver=row.version("min_driver"),
        max_driver=row.version("max_driver", allow_empty=True),
        paired_driver=row.version("paired_driver"),
        full_graph_min_driver=row.version("full_graph_min_driver", allow_empty=True),
        confidence=row.confidence(),
    )
    row.done()
    if c.max_driver and Version(c.max_driver) < Version(c.min_driver):
        raise row.error(f"max_driver {c.max_driver} is below min_driver {c.min_driver}")
    if not c.driver_supported(c.paired_driver):
        raise row.error(f"paired_driver {c.paired_driver} is outside {c.describe_range()}")
    return c


def _most_specific(items: list[tuple[str, _T]], version: str) -> _T | None:
    v = Version(version)
    matches = [(key, item) for key, item in items if v.matches_series(key)]
    if not matches:
        return None
    return max(matches, key=lambda m: Version(m[0]).depth)[1]


def validate_hdk(data: Mapping[str, Any], filename: str = _FILE) -> HdkTable:
    """Check a parsed hdk file; raises CatalogDataError (a ValueError) naming the row."""
    drivers: list[DriverSeries] = []
    for row in rows(data, "driver_series", filename):
        s = _series_row(row)
        if any(Version(o.series) == Version(s.series) for o in drivers):
            raise row.error(f"duplicate driver series {s.series}")
        drivers.append(s)
    firmware = [_firmware_row(row) for row in rows(data, "firmware", filename)]
    canns: list[CannRequirement] = []
    for row in rows(data, "cann", filename):
        c = _cann_row(row)
        if canns and Version(c.version) <= Version(canns[-1].version):
            raise row.error(
                f"CANN rows must be in ascending version order ({c.version} after {canns[-1].version})"
            )
        canns.append(c)
    table = HdkTable(tuple(drivers), tuple(firmware), tuple(canns))
    for row, s in zip(rows(data, "driver_series", filename), drivers, strict=True):
        for driver, fw in s.known_pairs:
            problem = pair_problem(table, driver, fw)
            if not Version(driver).matches_series(s.series) or problem:
                raise row.error(
                    f"known pair driver {driver} + firmware {fw} contradicts the table: "
                    f"{problem or 'driver is not in this series'}"
                )
    return table


@functools.cache
def _table() -> HdkTable:
    return validate_hdk(load(_FILE))


def driver_series(driver: str, table: HdkTable | None = None) -> DriverSeries | None:
    """The most specific known series the driver belongs to, or None. ValueError on a bad version."""
    t = table or _table()
    return _most_specific([(s.series, s) for s in t.drivers], driver)


def firmware_line(firmware: str, table: HdkTable | None = None) -> FirmwareLine | None:
    """The firmware row whose version the firmware starts with, or None when its version.info is unknown."""
    t = table or _table()
    return _most_specific([(f.version, f) for f in t.firmware], firmware)


def _range_source(confidence: Confidence, key: str, series: str) -> str:
    """Where a compatibility range comes from: the package's own version.info, or the catalog's inference."""
    if confidence == "sourced":
        return f"its version.info {key}"
    return (
        f"no published version.info of {series} was found: orchestrator/catalog/data/hdk.yaml infers the "
        "range from the nearest release whose version.info is known"
    )


def pair_problem(table: HdkTable | None, driver: str, firmware: str) -> str | None:
    """Why the driver and the firmware refuse each other (either side's version.info), or None."""
    s = driver_series(driver, table)
    if s is not None and not s.compatible_version_fw.accepts(firmware):
        where = _range_source(s.confidence, "compatible_version_fw", f"driver {s.series}")
        return f"driver {driver} accepts firmware {s.compatible_version_fw} ({where}), not {firmware}"
    f = firmware_line(firmware, table)
    if f is not None and not f.compatible_version_drv.accepts(driver):
        where = _range_source(f.confidence, "compatible_version_drv", f"firmware {f.version}")
        return f"firmware {firmware} accepts drivers {f.compatible_version_drv} ({where}), not {driver}"
    return None


def paired_firmware(driver: str, table: HdkTable | None = None) -> str | None:
    """The firmware the catalog saw installed with exactly this driver (known_pairs: the same HDK release),
    or None."""
    s = driver_series(driver, table)
    if s is None:
        return None
    v = Version(driver)
    return next((fw for d, fw in s.known_pairs if Version(d) == v), None)


def firmware_compatible(driver: str, firmware: str) -> bool | None:
    """Whether driver and firmware accept each other; None when neither side's version.info is known."""
    if driver_series(driver) is None and firmware_line(firmware) is None:
        return None
    return pair_problem(None, driver, firmware) is None


def cann_requirement(cann: str) -> CannRequirement | None:
    """The row for a CANN release: exact version, else the longest row it extends (9.1.0-beta.2 -> 9.1.0)."""
    v = Version(cann)
    table = _table().canns
    exact = next((c for c in table if Version(c.version) == v), None)
    if exact is not None:
        return exact
    return _most_specific([(c.version, c) for c in table], cann)


def min_driver_for_cann(cann: str) -> str | None:
    """Lowest HDK driver (series) for a CANN release ('9.1.0' -> '25.2'); None when the CANN is unknown."""
    req = cann_requirement(cann)
    return req.min_driver if req else None


def full_graph_min_driver(cann: str) -> str | None:
    """HDK driver needed for FULL / FULL_AND_PIECEWISE graph mode with this CANN; None if not applicable."""
    req = cann_requirement(cann)
    return (req.full_graph_min_driver or None) if req else None


def driver_table() -> tuple[DriverSeries, ...]:
    """Every driver series, in file order."""
    return _table().drivers


def cann_table() -> tuple[CannRequirement, ...]:
    return _table().canns
