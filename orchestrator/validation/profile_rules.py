"""Hardware profiles against the chip catalog: cards, devices per card and memory per device."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from orchestrator.catalog import ChipFacts, get_chip
from orchestrator.spec.findings import Finding, error
from orchestrator.spec.hardware import HardwareProfile
from orchestrator.spec.site import SiteSpec


def _one_of(values: tuple[int, ...], unit: str = "") -> str:
    shown = [f"{v}{unit}" for v in values]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


def check(spec: SiteSpec, chip_of: Callable[[str], ChipFacts] = get_chip) -> Iterator[Finding]:
    for name, profile in spec.profiles.items():
        try:
            chip = chip_of(profile.chip)
        except KeyError:
            yield error(
                ("profiles", name, "chip"),
                f"chip {profile.chip} is not in the chip catalog",
                "use a chip the catalog knows (see docs/spec.md, profiles)",
                "profile",
            )
            continue
        yield from check_profile(name, profile, chip)


def check_profile(name: str, profile: HardwareProfile, chip: ChipFacts) -> Iterator[Finding]:
    """Every profile field the catalog has facts for; a field left out takes the catalog default."""
    what = f"{chip.name} ({chip.product})"
    if profile.cards > chip.max_cards:
        yield error(
            ("profiles", name, "cards"),
            f"cards {profile.cards} is more than one {what} server holds: at most {chip.max_cards} cards",
            f"set cards to at most {chip.max_cards}",
            "profile",
        )
    dpc = profile.devices_per_card
    if dpc is not None and dpc not in chip.devices_per_card_allowed:
        yield error(
            ("profiles", name, "devices_per_card"),
            f"devices_per_card {dpc} does not exist on {what}: a card has "
            f"{_one_of(chip.devices_per_card_allowed)} device(s) (dies or chips)",
            f"set devices_per_card: {_one_of(chip.devices_per_card_allowed)}, or leave it out "
            f"(default {chip.devices_per_card_default})",
            "profile",
        )
    hbm = profile.hbm_gb
    if hbm is not None and hbm not in chip.hbm_gb_allowed:
        yield error(
            ("profiles", name, "hbm_gb"),
            f"hbm_gb {hbm} is not a memory size of {what}: the chip catalog knows "
            f"{_one_of(chip.hbm_gb_allowed, ' GB')} per device",
            f"set hbm_gb: {_one_of(chip.hbm_gb_allowed)}, or leave it out (default {chip.hbm_gb_default})",
            "profile",
        )
