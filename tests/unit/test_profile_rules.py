"""Hardware profiles against the chip catalog: memory per device, devices per card, cards per server.

The expected allowed values are the hardware facts, written here independently of the catalog: an A3
(910_93) card has two dies of 64 GB, a 910B3 one die of 64 GB, a 910B4 one die of 32 or 64 GB, an Atlas
300I card one (Pro) or two (Duo) 310P3 chips of 24 or 48 GB, and a server holds at most 8 cards.
"""

from __future__ import annotations

import dataclasses

import pytest

from orchestrator.catalog import ChipFacts, get_chip
from orchestrator.spec.findings import Position
from orchestrator.spec.hardware import HardwareProfile
from orchestrator.spec.site import SiteSpec
from orchestrator.validation.profile_rules import check as check_profiles
from orchestrator.validation.profile_rules import check_profile
from tests.spec_text import check, described, printed

SERVING = """\
serving:
  parallelism: {tp: 8}
  max_num_seqs: 32
  replicas:
    - {name: r1, servers: [npu-01]}
"""


def _profile(lines: str) -> str:
    return (
        "site: lab\nprofiles:\n  p:\n"
        + lines
        + "servers:\n  - {name: npu-01, address: 10.0.0.11, profile: p, roles: [npu, build, monitoring]}\n"
    )


def test_a3_profile_with_128_gb_per_die_is_refused_at_hbm_gb() -> None:
    result = check(_profile('    chip: "910_93"\n    hbm_gb: 128\n'), SERVING)
    found = [f for f in result.errors if f.code == "profile"]
    assert [(f.path, f.position) for f in found] == [(("profiles", "p", "hbm_gb"), Position(5, 13))]
    assert found[0].message == (
        "hbm_gb 128 is not a memory size of 910_93 (Atlas 800T A3): the chip catalog knows 64 GB per device"
    )
    assert found[0].fix == "set hbm_gb: 64, or leave it out (default 64)"
    assert found[0].code == "profile"
    assert result.plan is None


def test_a3_card_has_two_dies() -> None:
    result = check(_profile('    chip: "910_93"\n    devices_per_card: 1\n'), SERVING)
    found = [f for f in result.errors if f.code == "profile"]
    assert [f.path for f in found] == [("profiles", "p", "devices_per_card")]
    assert found[0].message == (
        "devices_per_card 1 does not exist on 910_93 (Atlas 800T A3): a card has 2 device(s) (dies or chips)"
    )
    assert found[0].fix == "set devices_per_card: 2, or leave it out (default 2)"
    assert found[0].code == "profile"


@pytest.mark.parametrize(
    ("chip", "field", "value", "allowed"),
    [
        ("910B3", "hbm_gb", 32, "64 GB"),
        ("910B3", "devices_per_card", 2, "1"),
        ("910B4", "hbm_gb", 48, "32 GB or 64 GB"),
        ("310P3", "hbm_gb", 32, "24 GB or 48 GB"),
    ],
)
def test_values_outside_the_chip_are_refused_naming_the_allowed_ones(
    chip: str, field: str, value: int, allowed: str
) -> None:
    profile = HardwareProfile.model_validate({"chip": chip, field: value})
    (found,) = check_profile("p", profile, get_chip(chip))
    assert found.path == ("profiles", "p", field)
    assert allowed in found.message


@pytest.mark.parametrize(
    "fields",
    [
        {"chip": "910B4", "hbm_gb": 32},
        {"chip": "910B4", "hbm_gb": 64},
        {"chip": "910_93", "hbm_gb": 64, "devices_per_card": 2},
        {"chip": "310P3", "devices_per_card": 1, "hbm_gb": 24},
        {"chip": "310P3", "devices_per_card": 2, "hbm_gb": 48},
        {"chip": "910B3", "cards": 8},
        {"chip": "910B3"},
    ],
)
def test_real_configurations_are_accepted(fields: dict[str, object]) -> None:
    profile = HardwareProfile.model_validate(fields)
    assert list(check_profile("p", profile, get_chip(str(fields["chip"])))) == []


def test_more_cards_than_the_server_holds() -> None:
    four_slot = dataclasses.replace(get_chip("910B3"), max_cards=4)
    profile = HardwareProfile.model_validate({"chip": "910B3", "cards": 5})
    (found,) = check_profile("p", profile, four_slot)
    assert found.path == ("profiles", "p", "cards")
    assert found.message == "cards 5 is more than one 910B3 (Atlas 800T A2) server holds: at most 4 cards"
    assert (found.fix, found.code) == ("set cards to at most 4", "profile")
    assert (
        list(check_profile("p", HardwareProfile.model_validate({"chip": "910B3", "cards": 4}), four_slot))
        == []
    )


def test_a_valid_spec_with_explicit_profile_values_stays_valid() -> None:
    result = check(
        _profile("    chip: 910B3\n    cards: 8\n    devices_per_card: 1\n    hbm_gb: 64\n"), SERVING
    )
    assert result.ok, printed(result)


def test_a_chip_missing_from_the_catalog_is_reported_and_the_other_profiles_still_checked() -> None:
    result = check(
        'site: lab\nprofiles:\n  old:\n    chip: 910B1\n  a3:\n    chip: "910_93"\n    hbm_gb: 96\n'
        "servers:\n  - {name: npu-01, address: 10.0.0.11, profile: a3, roles: [npu, build, monitoring]}\n",
        SERVING,
    )
    spec = result.spec
    assert isinstance(spec, SiteSpec)

    def catalog_without_910b1(name: str) -> ChipFacts:
        if name == "910B1":
            raise KeyError(name)
        return get_chip(name)

    found = [described(f) for f in check_profiles(spec, catalog_without_910b1)]
    assert found == [
        (
            "profiles.old.chip",
            "chip 910B1 is not in the chip catalog",
            "use a chip the catalog knows (see docs/spec.md, profiles)",
            "profile",
            [],
        ),
        (
            "profiles.a3.hbm_gb",
            "hbm_gb 96 is not a memory size of 910_93 (Atlas 800T A3): the chip catalog knows 64 GB "
            "per device",
            "set hbm_gb: 64, or leave it out (default 64)",
            "profile",
            [],
        ),
    ]


def test_three_allowed_values_are_listed_with_commas_and_or() -> None:
    many = dataclasses.replace(get_chip("910B4"), hbm_gb_allowed=(32, 64, 96))
    (found,) = check_profile("p", HardwareProfile.model_validate({"chip": "910B4", "hbm_gb": 48}), many)
    assert found.message.endswith("the chip catalog knows 32 GB, 64 GB or 96 GB per device")
    assert found.fix == "set hbm_gb: 32, 64 or 96, or leave it out (default 32)"
