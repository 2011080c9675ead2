"""Versioned facts the pipeline checks a site against: chips, models, the vllm-ascend/CANN/HDK compatibility
matrix, `vllm serve` flags and host RDMA module parameters.

The facts live in package data files (``orchestrator/catalog/data/*.yaml``, each with ``schema_version`` and
its sources); this package is the small typed layer that loads, validates and queries them. Files are read
lazily on first use and cached; the constants below (``CHIP_NAMES``, ``RELEASES``, ...) are computed on first
access. Every ``validate_*`` function raises ``CatalogDataError`` (a ``ValueError``) naming file and row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator.catalog._data import CatalogDataError
from orchestrator.catalog.chips import (
    CHIP_FAMILIES,
    ChipFacts,
    ChipFamily,
    chips_for_pci_device,
    chips_of_family,
    get_chip,
    validate_chips,
)
from orchestrator.catalog.flags import (
    FlagSpec,
    FlagTable,
    RemovedFlag,
    flag_table,
    nearest_table,
    removed_flag,
    suggest_flag,
    table_versions,
    validate_removed,
)
from orchestrator.catalog.hdk import (
    CannRequirement,
    DriverSeries,
    FirmwareLine,
    HdkTable,
    cann_requirement,
    driver_series,
    firmware_compatible,
    firmware_line,
    full_graph_min_driver,
    min_driver_for_cann,
    pair_problem,
    paired_firmware,
    validate_hdk,
)
from orchestrator.catalog.matrix import VllmAscendRelease, get_release, validate_releases
from orchestrator.catalog.models import ModelArch, get_model, validate_models
from orchestrator.catalog.modules import known_module, unknown_options, validate_modules
from orchestrator.catalog.ranges import VersionRanges, at_least, parse_ranges, parse_version_info
from orchestrator.catalog.version import Version

if TYPE_CHECKING:
    from collections.abc import Mapping

    CHIP_NAMES: tuple[str, ...]
    MODEL_NAMES: tuple[str, ...]
    RELEASES: tuple[VllmAscendRelease, ...]
    DEFAULT_RELEASE: str
    KNOWN_MODULE_OPTIONS: Mapping[str, frozenset[str]]

_LAZY = {
    "CHIP_NAMES": "chips",
    "MODEL_NAMES": "models",
    "RELEASES": "matrix",
    "DEFAULT_RELEASE": "matrix",
    "KNOWN_MODULE_OPTIONS": "modules",
}


def __getattr__(name: str) -> object:
    # Data-backed constants are resolved on first access (PEP 562) so importing the package reads no files.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "CHIP_FAMILIES",
    "CHIP_NAMES",
    "DEFAULT_RELEASE",
    "KNOWN_MODULE_OPTIONS",
    "MODEL_NAMES",
    "RELEASES",
    "CannRequirement",
    "CatalogDataError",
    "ChipFacts",
    "ChipFamily",
    "DriverSeries",
    "FirmwareLine",
    "FlagSpec",
    "FlagTable",
    "HdkTable",
    "ModelArch",
    "RemovedFlag",
    "Version",
    "VersionRanges",
    "VllmAscendRelease",
    "at_least",
    "cann_requirement",
    "chips_for_pci_device",
    "chips_of_family",
    "driver_series",
    "firmware_compatible",
    "firmware_line",
    "flag_table",
    "full_graph_min_driver",
    "get_chip",
    "get_model",
    "get_release",
    "known_module",
    "min_driver_for_cann",
    "nearest_table",
    "pair_problem",
    "paired_firmware",
    "parse_ranges",
    "parse_version_info",
    "removed_flag",
    "suggest_flag",
    "table_versions",
    "unknown_options",
    "validate_chips",
    "validate_hdk",
    "validate_models",
    "validate_modules",
    "validate_releases",
    "validate_removed",
]
