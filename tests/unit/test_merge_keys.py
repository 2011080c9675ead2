"""YAML merge keys (`<<: *defaults`): merged as YAML 1.1 defines them, located where written."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.pipeline import validate_text
from orchestrator.spec.findings import Position
from orchestrator.spec.loader import parse_text
from tests.hostile import assert_refused, cli, only_error, startup_cpu


@pytest.fixture(scope="module")
def startup_s(tmp_path_factory: pytest.TempPathFactory) -> float:
    return startup_cpu(tmp_path_factory.mktemp("startup"))


# ------------------------------------------------------------------------------------- merge keys


MERGE = """\
site: lab
profiles:
  base: &base
    chip: 910B3
    cards: 9
  big:
    <<: *base
    hbm_gb: 64
  small:
    <<: [{cards: 2}, *base]
  own:
    <<: *base
    cards: 4
"""


def test_merge_keys_merge_and_locate_inside_the_merged_content() -> None:
    doc, findings = parse_text(MERGE, "s.yaml")
    assert findings == [] and doc is not None
    profiles = doc.data["profiles"]
    assert profiles["big"] == {"hbm_gb": 64, "chip": "910B3", "cards": 9}
    assert profiles["small"] == {"cards": 2, "chip": "910B3"}  # earlier sources win
    assert profiles["own"] == {"cards": 4, "chip": "910B3"}  # explicit keys win
    smap = doc.source_map
    assert smap.locate(("profiles", "big", "cards")) == Position(5, 12)  # where 'cards: 9' is written
    assert smap.locate_key(("profiles", "big", "cards")) == Position(5, 5)
    assert smap.locate(("profiles", "big", "hbm_gb")) == Position(8, 13)
    assert smap.locate(("profiles", "small", "cards")) == Position(10, 18)
    assert smap.locate(("profiles", "own", "cards")) == Position(13, 12)


def test_merge_key_findings_point_at_the_line_the_user_wrote() -> None:
    result = validate_text(MERGE)
    cards = {f.path: f.position for f in result.errors if f.path[-1:] == ("cards",)}
    assert cards == {
        ("profiles", "base", "cards"): Position(5, 12),
        ("profiles", "big", "cards"): Position(5, 12),
    }


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ("site: lab\nprofiles:\n  p:\n    <<: 3\n", Position(4, 9)),
        ("site: lab\nprofiles:\n  p:\n    <<: [{a: 1}, 2]\n", Position(4, 18)),
        ("site: lab\nprofiles:\n  p:\n    <<: {a: 1}\n    <<: {b: 1}\n", Position(5, 5)),
    ],
    ids=["scalar", "list-with-scalar", "two-merge-keys"],
)
def test_bad_merge_keys_are_located_errors(text: str, position: Position) -> None:
    f = only_error(validate_text(text))
    assert f.position == position and f.fix


def test_merge_key_crash_of_the_old_loader_is_gone(tmp_path: Path, startup_s: float) -> None:
    spec = tmp_path / "site.yaml"
    spec.write_text(MERGE, encoding="utf-8")
    run = cli("validate", str(spec))
    assert_refused(
        run, startup_s, f"{spec}:5:12", "profiles.base.cards: Input should be less than or equal to 8"
    )
    assert f"{spec}:5:12: error: profiles.big.cards" in run.stderr
