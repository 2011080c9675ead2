"""Compatibility matrix: vllm-ascend releases (data/vllm_ascend.yaml), checked against data/hdk.yaml."""

from __future__ import annotations

import datetime
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from orchestrator.catalog._data import CatalogDataError, Confidence, Row, load, rows
from orchestrator.catalog.chips import CHIP_FAMILIES, ChipFacts
from orchestrator.catalog.hdk import CannRequirement, cann_table, driver_series
from orchestrator.catalog.version import Version

__all__ = ["IMAGE_REPO", "VllmAscendRelease", "driver_series", "get_release", "validate_releases"]
# driver_series is re-exported: ascend_sim.packages imports it from here.

IMAGE_REPO = "quay.io/ascend/vllm-ascend"
CANN_IMAGE_REPO = "quay.io/ascend/cann"
_RELEASES_FILE = "vllm_ascend.yaml"
IMAGE_OS_FAMILIES = ("ubuntu", "openeuler")


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
    image_os: tuple[tuple[str, str], ...] = (("openeuler", "openeuler24.03"), ("ubuntu", "ubuntu22.04"))
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

    def cann_for(self, chip: ChipFacts) -> str:
        """The CANN version of this chip's image as the source writes it ('9.1.0', '9.1.0-beta.1' for 310P
        on v0.21.0rc1..v0.25.1rc1); ValueError if the release has no image for the chip."""
        self._require(chip)
        return dict(self.cann_image_overrides).get(chip.family, self.cann)

    def cann_image_tag(self, chip: ChipFacts) -> str:
        """The CANN version part of the base image tag for this chip, lower-case ('8.3.rc2', '9.1.0')."""
        return self.cann_for(chip).lower()

    def container_os(self, os_family: str) -> str:
        """The OS part of the image tags ('ubuntu' -> 'ubuntu22.04'; 'openeuler' -> 'openeuler22.03' on
        v0.9.1, 'openeuler24.03' later); ValueError for an OS the release ships no Dockerfile for."""
        found = dict(self.image_os).get(os_family)
        if found is None:
            have = ", ".join(dict(self.image_os))
            raise ValueError(f"vllm-ascend {self.version} has no {os_family} image; it has {have}")
        return found

    def cann_base_image(self, chip: ChipFacts, os_family: str = "ubuntu") -> str:
        """The FROM line of the release's Dockerfile for this chip and OS, e.g.
        ``quay.io/ascend/cann:9.1.0-910b-ubuntu22.04-py3.12``; ValueError if the release lacks either."""
        tag, os_tag = self.cann_image_tag(chip), self.container_os(os_family)
        return f"{CANN_IMAGE_REPO}:{tag}-{chip.cann_image_chip}-{os_tag}-py{self.image_python}"

    def image_tag(self, chip: ChipFacts, os_family: str = "ubuntu") -> str:
        """The published vllm-ascend image, e.g. ``quay.io/ascend/vllm-ascend:v0.23.0-a3-openeuler``."""
        self._require(chip)
        self.container_os(os_family)
        suffix = "-openeuler" if os_family == "openeuler" else ""
        return f"{IMAGE_REPO}:{self.version}{chip.image_suffix}{suffix}"


# -------------------------------------------------------------------------------------- vllm_ascend.yaml


def _release(row: Row, canns: tuple[CannRequirement, ...]) -> VllmAscendRelease:
    chips = row.texts("chips")
    overrides = row.mapping("cann_image_overrides", default={})
    if not all(isinstance(v, str) for v in overrides.values()):
        raise row.error("cann_image_overrides must map chip family to a CANN image tag string")
    image_os = row.mapping("image_os")
    if set(image_os) - set(IMAGE_OS_FAMILIES) or not all(isinstance(v, str) for v in image_os.values()):
        raise row.error(f"image_os must map {' / '.join(IMAGE_OS_FAMILIES)} to a tag part like 'ubuntu22.04'")
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
        image_os=tuple(sorted((str(k), str(v)) for k, v in image_os.items())),
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
    # Per-chip CANN overrides (310P) are checked against the site's driver by the software rules.
    req = next((c for c in canns if Version(c.version) == Version(rel.cann)), None)
    if req is not None and req.driver_too_old(rel.min_driver):
        raise row.error(
            f"min_driver {rel.min_driver} is below {req.min_driver}, "
            f"which hdk.yaml requires for CANN {rel.cann}"
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
    return validate_releases(load(_RELEASES_FILE), canns=cann_table())


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
