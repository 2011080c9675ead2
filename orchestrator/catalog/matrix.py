"""Compatibility matrix: vllm-ascend releases (data/vllm_ascend.yaml) and HDK/CANN (data/hdk.yaml)."""

from __future__ import annotations

import datetime
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from orchestrator.catalog._data import CatalogDataError, Confidence, Row, load, rows
from orchestrator.catalog.chips import CHIP_FAMILIES, ChipFacts
from orchestrator.catalog.version import Version

IMAGE_REPO = "quay.io/ascend/vllm-ascend"
CANN_IMAGE_REPO = "quay.io/ascend/cann"
_RELEASES_FILE = "vllm_ascend.yaml"
_HDK_FILE = "hdk.yaml"


@dataclass(frozen=True)
class VllmAscendRelease:
    """One row of the vllm-ascend compatibility matrix."""

    version: str
    released: str
    vllm: str
    python_min: str
    python_max_exclusive: str
    image_python: str
    cann: str
    torch: str
    torch_npu: str
    triton_ascend: str
    chips: tuple[str, ...]
    min_driver: str
    cann_image_overrides: tuple[tuple[str, str], ...] = ()
    confidence: Confidence = "sourced"

    @property
    def is_final(self) -> bool:
        """False for release candidates (released == "")."""
        return bool(self.released)

    def _require(self, chip: ChipFacts) -> None:
        if chip.family not in self.chips:
            raise ValueError(
                f"vllm-ascend {self.version} has no image for {chip.product} ({chip.family}); "
                f"it supports {', '.join(self.chips)}"
            )

    def cann_image_tag(self, chip: ChipFacts) -> str:
        """The CANN version part of the base image tag for this chip, lower-case ('8.3.rc2', '9.1.0')."""
        self._require(chip)
        return dict(self.cann_image_overrides).get(chip.family, self.cann).lower()

    def cann_base_image(self, chip: ChipFacts, base_os: str = "ubuntu22.04") -> str:
        """The CANN base image the release's Dockerfile builds on, e.g.
        ``quay.io/ascend/cann:9.1.0-910b-ubuntu22.04-py3.12``; ValueError if the release lacks the chip."""
        tag = self.cann_image_tag(chip)
        return f"{CANN_IMAGE_REPO}:{tag}-{chip.cann_image_chip}-{base_os}-py{self.image_python}"

    def image_tag(self, chip: ChipFacts, *, openeuler: bool = False) -> str:
        """The published vllm-ascend image, e.g. ``quay.io/ascend/vllm-ascend:v0.23.0-a3``."""
        self._require(chip)
        return f"{IMAGE_REPO}:{self.version}{chip.image_suffix}{'-openeuler' if openeuler else ''}"


@dataclass(frozen=True)
class DriverSeries:
    """An HDK driver release line and the firmware range it accepts (inclusive)."""

    series: str
    firmware_min: str
    firmware_max: str
    confidence: str
    known_pairs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class CannRequirement:
    """What a CANN release needs from the HDK driver."""

    version: str
    min_driver: str
    full_graph_min_driver: str
    confidence: Confidence


# ---------------------------------------------------------------------------------------------- hdk.yaml


def _series_row(row: Row) -> DriverSeries:
    pairs: list[tuple[str, str]] = []
    for pair in row.items("known_pairs"):
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
            raise row.error(f"known_pairs entries must be [driver, firmware] strings, got {pair!r}")
        pairs.append((pair[0], pair[1]))
    s = DriverSeries(
        series=row.version("series"),
        firmware_min=row.version("firmware_min"),
        firmware_max=row.version("firmware_max"),
        confidence=row.confidence(),
        known_pairs=tuple(pairs),
    )
    row.done()
    if Version(s.firmware_min) > Version(s.firmware_max):
        raise row.error(f"firmware_min {s.firmware_min} is above firmware_max {s.firmware_max}")
    for driver, firmware in s.known_pairs:
        try:
            inside = Version(s.firmware_min) <= Version(firmware) <= Version(s.firmware_max)
            ok = Version(driver).matches_series(s.series) and inside
        except ValueError as exc:
            raise row.error(f"known_pairs: {exc}") from None
        if not ok:
            raise row.error(f"known pair driver {driver} + firmware {firmware} contradicts the row")
    return s


def validate_hdk(
    data: Mapping[str, Any], filename: str = _HDK_FILE
) -> tuple[tuple[DriverSeries, ...], tuple[CannRequirement, ...]]:
    """Check a parsed hdk file; raises CatalogDataError (a ValueError) naming the row."""
    series: list[DriverSeries] = []
    for row in rows(data, "driver_series", filename):
        s = _series_row(row)
        if any(Version(o.series) == Version(s.series) for o in series):
            raise row.error(f"duplicate driver series {s.series}")
        series.append(s)
    canns: list[CannRequirement] = []
    for row in rows(data, "cann", filename):
        c = CannRequirement(
            version=row.version("version"),
            min_driver=row.version("min_driver"),
            full_graph_min_driver=row.version("full_graph_min_driver", allow_empty=True),
            confidence=row.confidence(),
        )
        row.done()
        if canns and Version(c.version) <= Version(canns[-1].version):
            raise row.error(
                f"CANN rows must be in ascending version order ({c.version} after {canns[-1].version})"
            )
        canns.append(c)
    return tuple(series), tuple(canns)


@functools.cache
def _hdk() -> tuple[tuple[DriverSeries, ...], tuple[CannRequirement, ...]]:
    return validate_hdk(load(_HDK_FILE))


def driver_series(driver: str) -> DriverSeries | None:
    """The most specific known series the driver version belongs to, or None. ValueError on a bad version."""
    v = Version(driver)
    matches = [s for s in _hdk()[0] if v.matches_series(s.series)]
    return max(matches, key=lambda s: Version(s.series).depth, default=None)


def firmware_compatible(driver: str, firmware: str) -> bool | None:
    """Whether the driver accepts the firmware; None when the driver's series is unknown."""
    s = driver_series(driver)
    if s is None:
        return None
    return Version(s.firmware_min) <= Version(firmware) <= Version(s.firmware_max)


def cann_requirement(cann: str) -> CannRequirement | None:
    """The row for a CANN release: exact version, else the longest row it extends (9.1.0-beta.1 -> 9.1.0)."""
    v = Version(cann)
    table = _hdk()[1]
    exact = next((c for c in table if Version(c.version) == v), None)
    if exact is not None:
        return exact
    matches = [c for c in table if v.matches_series(c.version)]
    return max(matches, key=lambda c: Version(c.version).depth, default=None)


def min_driver_for_cann(cann: str) -> str | None:
    """Minimum HDK driver for a CANN release ('8.5.0' -> '25.5.0'); None when the CANN is not in the table."""
    req = cann_requirement(cann)
    return req.min_driver if req else None


def full_graph_min_driver(cann: str) -> str | None:
    """HDK driver needed for FULL / FULL_AND_PIECEWISE graph mode with this CANN; None if not applicable."""
    req = cann_requirement(cann)
    return (req.full_graph_min_driver or None) if req else None


# -------------------------------------------------------------------------------------- vllm_ascend.yaml


def _release(row: Row, canns: tuple[CannRequirement, ...]) -> VllmAscendRelease:
    chips = row.texts("chips")
    overrides = row.mapping("cann_image_overrides", default={})
    if not all(isinstance(v, str) for v in overrides.values()):
        raise row.error("cann_image_overrides must map chip family to a CANN image tag string")
    rel = VllmAscendRelease(
        version=row.version("version"),
        released=row.text("released", allow_empty=True),
        vllm=row.version("vllm"),
        python_min=row.version("python_min"),
        python_max_exclusive=row.version("python_max_exclusive"),
        image_python=row.version("image_python"),
        cann=row.version("cann"),
        torch=row.version("torch"),
        torch_npu=row.version("torch_npu"),
        triton_ascend=row.version("triton_ascend", allow_empty=True),
        chips=chips,
        min_driver=row.version("min_driver"),
        cann_image_overrides=tuple(sorted((str(k), v) for k, v in overrides.items())),
        confidence=row.confidence(),
    )
    row.done()
    if not rel.version.startswith("v") or not rel.vllm.startswith("v"):
        raise row.error("version and vllm are written with a leading 'v' (v0.23.0)")
    if Version(rel.version).is_prerelease == rel.is_final:
        raise row.error('released must be a date for final releases and "" for release candidates')
    if rel.released:
        try:
            datetime.date.fromisoformat(rel.released)
        except ValueError:
            raise row.error(f"released must be YYYY-MM-DD, got {rel.released!r}") from None
    py_min, py_max, py_img = (
        Version(rel.python_min),
        Version(rel.python_max_exclusive),
        Version(rel.image_python),
    )
    if not py_min <= py_img < py_max:
        raise row.error(
            f"image_python {rel.image_python} is outside >={rel.python_min},<{rel.python_max_exclusive}"
        )
    bad = [c for c in (*chips, *dict(rel.cann_image_overrides)) if c not in CHIP_FAMILIES]
    if bad or len(set(chips)) != len(chips):
        raise row.error(
            f"chips must be distinct families among {', '.join(CHIP_FAMILIES)}; got {list(chips)}"
        )
    floor = next((c.min_driver for c in canns if Version(c.version) == Version(rel.cann)), None)
    if floor is not None and Version(rel.min_driver) < Version(floor):
        raise row.error(
            f"min_driver {rel.min_driver} is below {floor}, which hdk.yaml requires for CANN {rel.cann}"
        )
    return rel


def validate_releases(
    data: Mapping[str, Any], filename: str = _RELEASES_FILE, canns: tuple[CannRequirement, ...] = ()
) -> tuple[tuple[VllmAscendRelease, ...], str]:
    """Check a parsed matrix file; returns (releases in ascending order, default version).

    Raises CatalogDataError (a ValueError) naming the row. ``canns`` (from hdk.yaml) enables the check that a
    release's min_driver is not below what its CANN needs.
    """
    out: list[VllmAscendRelease] = []
    for row in rows(data, "releases", filename):
        rel = _release(row, canns)
        if out and Version(rel.version) <= Version(out[-1].version):
            raise row.error(
                f"releases must be in ascending version order ({rel.version} after {out[-1].version})"
            )
        out.append(rel)
    default = data.get("default")
    match = next((r for r in out if r.version == default), None)
    if match is None or not match.is_final:
        raise CatalogDataError(f"{filename}: default {default!r} must name a final release in the file")
    return tuple(out), match.version


@functools.cache
def _releases() -> tuple[tuple[VllmAscendRelease, ...], str]:
    return validate_releases(load(_RELEASES_FILE), canns=_hdk()[1])


def get_release(version: str) -> VllmAscendRelease:
    """The matrix row for a vllm-ascend version, with or without the leading 'v'; KeyError when unknown."""
    try:
        wanted = Version(version)
    except ValueError:
        wanted = None
    releases = _releases()[0]
    found = next((r for r in releases if wanted is not None and Version(r.version) == wanted), None)
    if found is None:
        known = ", ".join(r.version for r in releases)
        raise KeyError(f"vllm-ascend {version!r} is not in the compatibility matrix; known: {known}")
    return found


if TYPE_CHECKING:
    RELEASES: tuple[VllmAscendRelease, ...]
    DEFAULT_RELEASE: str


def __getattr__(name: str) -> object:
    # Lazy module constants (PEP 562): the data files are read on first use, not at import.
    if name == "RELEASES":
        return _releases()[0]
    if name == "DEFAULT_RELEASE":
        return _releases()[1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
