"""Chip facts: Ascend 910B1-4 (Atlas A2), 910_93 (Atlas A3) and 310P3 (Atlas 300I) — data/chips.yaml."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from orchestrator.catalog._data import CatalogDataError, Confidence, Row, load, rows

ChipFamily = Literal["910b", "910_93", "310p"]
CHIP_FAMILIES: tuple[ChipFamily, ...] = ("910b", "910_93", "310p")
# debian 12: the simulated servers' OS (docs/simulator.md, "The simulation OS"), only in simulation_only rows
OS_DISTROS = ("ubuntu", "openeuler", "kylin", "debian")
OS_VERSIONS = ("20.04", "22.04", "22.03", "24.03", "v10", "12")
HCCL_OP_EXPANSION_MODES = ("AIV", "AI_CPU", "HOST")
_FILE = "chips.yaml"


@dataclass(frozen=True)
class ChipFacts:
    """What one card of a chip looks like to the host, npu-smi, the HDK installer and the image build."""

    name: str
    family: ChipFamily
    product: str
    soc_version: str
    pci_device_id: str
    npu_smi_name: str
    devices_per_card_default: int
    devices_per_card_allowed: tuple[int, ...]
    hbm_gb_default: int
    hbm_gb_allowed: tuple[int, ...]
    max_cards: int
    has_roce: bool
    supports_bf16: bool
    driver_package_prefix: str
    image_suffix: str
    cann_image_chip: str
    supported_os: tuple[tuple[str, str], ...]
    simulation_os: tuple[tuple[str, str], ...] = ()  # accepted only for simulated servers (os.simulation)
    usable_memory_gib: tuple[tuple[int, float], ...] = ()
    hccl_op_expansion_modes: tuple[str, ...] = ("HOST",)
    hccl_op_expansion_default: str = "HOST"
    hccl_aiv_one_server: bool = False  # AIV AlltoAllV within one server only (A2): no AIV across servers
    confidence: Confidence = "sourced"
    inferred_fields: tuple[str, ...] = ()

    @property
    def max_devices(self) -> int:
        """Logical devices (ranks) in a fully populated server at the default dies per card."""
        return self.max_cards * self.devices_per_card_default

    def usable_gib(self, hbm_gb: int) -> float:
        """Memory one process can allocate on a device of this nominal size (what gpu_memory_utilization
        multiplies); KeyError for a size the chip does not come in."""
        found = dict(self.usable_memory_gib).get(hbm_gb)
        if found is None:
            raise KeyError(f"{self.name} has no {hbm_gb} GB variant; it comes with {self.hbm_gb_allowed} GB")
        return found


def _ints(row: Row, key: str) -> tuple[int, ...]:
    values = row.items(key)
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values):
        raise row.error(f"field '{key}' must be a non-empty list of positive integers, got {values!r}")
    return tuple(values)


def _os_pairs(row: Row) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """(supported OS pairs, pairs accepted only for simulated servers: `simulation_only: true`)."""
    pairs: list[tuple[str, str]] = []
    simulated: list[tuple[str, str]] = []
    for i, entry in enumerate(row.items("supported_os")):
        sub = Row(entry if isinstance(entry, dict) else {}, row.filename, f"{row.where} supported_os[{i}]")
        if not isinstance(entry, dict):
            raise sub.error(f"must be a mapping {{distro, version, confidence}}, got {entry!r}")
        pair = (sub.choice("distro", OS_DISTROS), sub.choice("version", OS_VERSIONS))
        sub.confidence()
        sim_only = sub.flag("simulation_only") if "simulation_only" in entry else False
        sub.done()
        if pair in pairs or pair in simulated:
            raise sub.error(f"duplicate OS {pair[0]} {pair[1]}")
        (simulated if sim_only else pairs).append(pair)
    if not pairs:
        raise row.error("field 'supported_os' must list at least one OS that is not simulation_only")
    return tuple(pairs), tuple(simulated)


def _usable(row: Row) -> tuple[tuple[int, float], ...]:
    raw = row.mapping("usable_memory_gib")
    out: list[tuple[int, float]] = []
    for size, gib in raw.items():
        if not (isinstance(size, int) and isinstance(gib, int | float) and not isinstance(gib, bool)):
            raise row.error(f"usable_memory_gib maps an HBM size in GB to GiB, got {size!r}: {gib!r}")
        if not 0 < gib < size:
            raise row.error(f"usable_memory_gib for {size} GB must be below it, got {gib}")
        out.append((size, float(gib)))
    return tuple(sorted(out))


def _chip(row: Row) -> ChipFacts:
    family = row.choice("family", CHIP_FAMILIES)
    pci = row.text("pci_device_id")
    if len(pci) != 4 or any(c not in "0123456789abcdef" for c in pci):
        raise row.error(f"field 'pci_device_id' must be 4 lower-case hex digits without 0x, got {pci!r}")
    chip = ChipFacts(
        name=row.text("name"),
        family=cast(ChipFamily, family),
        product=row.text("product"),
        soc_version=row.text("soc_version"),
        pci_device_id=pci,
        npu_smi_name=row.text("npu_smi_name"),
        devices_per_card_default=row.integer("devices_per_card_default", minimum=1),
        devices_per_card_allowed=_ints(row, "devices_per_card_allowed"),
        hbm_gb_default=row.integer("hbm_gb_default", minimum=1),
        hbm_gb_allowed=_ints(row, "hbm_gb_allowed"),
        max_cards=row.integer("max_cards", minimum=1),
        has_roce=row.flag("has_roce"),
        supports_bf16=row.flag("supports_bf16"),
        driver_package_prefix=row.text("driver_package_prefix"),
        image_suffix=row.text("image_suffix", allow_empty=True),
        cann_image_chip=row.text("cann_image_chip"),
        supported_os=_os_pairs(row)[0],
        simulation_os=_os_pairs(row)[1],
        usable_memory_gib=_usable(row),
        hccl_op_expansion_modes=row.texts("hccl_op_expansion_modes"),
        hccl_op_expansion_default=row.choice("hccl_op_expansion_default", HCCL_OP_EXPANSION_MODES),
        hccl_aiv_one_server=row.flag("hccl_aiv_one_server"),
        confidence=row.confidence(),
        inferred_fields=row.texts("inferred_fields", allow_empty=True, default=[]),
    )
    row.done()
    if chip.soc_version != chip.soc_version.lower() or not chip.soc_version.startswith("ascend"):
        raise row.error(f"soc_version must be lower-case 'ascend...', got {chip.soc_version!r}")
    if chip.devices_per_card_default not in chip.devices_per_card_allowed:
        raise row.error("devices_per_card_default must be one of devices_per_card_allowed")
    if chip.hbm_gb_default not in chip.hbm_gb_allowed:
        raise row.error("hbm_gb_default must be one of hbm_gb_allowed")
    if {size for size, _ in chip.usable_memory_gib} != set(chip.hbm_gb_allowed):
        raise row.error("usable_memory_gib must give one figure for every size in hbm_gb_allowed")
    bad_modes = [m for m in chip.hccl_op_expansion_modes if m not in HCCL_OP_EXPANSION_MODES]
    if bad_modes or chip.hccl_op_expansion_default not in chip.hccl_op_expansion_modes:
        raise row.error(
            f"hccl_op_expansion_modes must be among {', '.join(HCCL_OP_EXPANSION_MODES)} and include "
            "hccl_op_expansion_default"
        )
    if chip.image_suffix and not chip.image_suffix.startswith("-"):
        raise row.error(f"image_suffix must be empty or start with '-', got {chip.image_suffix!r}")
    known = set(ChipFacts.__dataclass_fields__)
    bad = [f for f in chip.inferred_fields if f not in known]
    if bad:
        raise row.error(f"inferred_fields names unknown field(s): {', '.join(bad)}")
    if (chip.confidence == "inferred") != bool(chip.inferred_fields):
        raise row.error("confidence must be 'inferred' exactly when inferred_fields is non-empty")
    return chip


def validate_chips(data: Mapping[str, Any], filename: str = _FILE) -> dict[str, ChipFacts]:
    """Check a parsed chips file and build the table; CatalogDataError (a ValueError) names the bad row."""
    table: dict[str, ChipFacts] = {}
    for row in rows(data, "chips", filename):
        chip = _chip(row)
        if chip.name.upper() in table:
            raise row.error(f"duplicate chip name {chip.name!r}")
        table[chip.name.upper()] = chip
    return table


@functools.cache
def _table() -> dict[str, ChipFacts]:
    return validate_chips(load(_FILE))


def get_chip(name: str) -> ChipFacts:
    """The chip by name, case-insensitive ('910B3', '910b3', '910_93', '310P3'); KeyError when unknown."""
    chip = _table().get(name.strip().upper())
    if chip is None:
        raise KeyError(f"unknown chip {name!r}; known chips: {', '.join(c.name for c in _table().values())}")
    return chip


def chips_of_family(family: str) -> tuple[ChipFacts, ...]:
    """All chips of a family ('910b' -> 910B1..910B4), in catalog order."""
    return tuple(c for c in _table().values() if c.family == family)


def chips_for_pci_device(device_id: str) -> tuple[ChipFacts, ...]:
    """Chips whose PCI device id (lspci '19e5:d802', '0xD802' or 'd802') matches."""
    key = device_id.strip().lower().removeprefix("19e5:").removeprefix("0x")
    return tuple(c for c in _table().values() if c.pci_device_id == key)


if TYPE_CHECKING:
    CHIP_NAMES: tuple[str, ...]


def __getattr__(name: str) -> object:
    # Lazy module constants (PEP 562): the data file is read on first use, not at import.
    if name == "CHIP_NAMES":
        return tuple(c.name for c in _table().values())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CHIP_FAMILIES",
    "CHIP_NAMES",
    "CatalogDataError",
    "ChipFacts",
    "ChipFamily",
    "chips_for_pci_device",
    "chips_of_family",
    "get_chip",
    "validate_chips",
]
