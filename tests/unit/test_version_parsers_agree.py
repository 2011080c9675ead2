"""The two HDK version parsers agree on Huawei's own files.

The collection's module_utils/version_info.py runs on managed hosts and must stay installable on its own
(standard library, no import of the orchestrator package), and the orchestrator package does not import
from the collection; so both keep a parser: orchestrator.catalog.version / ranges (the plan) and
ascend.npu's version_info (the npu_info and hdk_package modules, the doctor). This test feeds both the
same versions and ranges, all read from upstream files (the real version.info files of
tests/fixtures/ascend/version_info, whose README names their sources; the CANN versions of the
cann-container-image tags in tests/data/upstream/cann-container-image), and asserts they agree on what
parses, on the order of every pair, on series prefixes and on which ranges accept which version.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from ansible_collections.ascend.npu.plugins.module_utils import version_info as mu

from orchestrator.catalog.ranges import parse_ranges, parse_version_info
from orchestrator.catalog.version import Version

TESTS = Path(__file__).resolve().parents[1]
VERSION_INFO = TESTS / "fixtures" / "ascend" / "version_info"
CANN_IMAGES = TESTS / "data" / "upstream" / "cann-container-image"
_BOUND = re.compile(r"\[\s*([^,\[\]\s]+)\s*,\s*([^,\[\]\s]+)\s*\]")


def _infos() -> list[dict[str, str]]:
    return [parse_version_info(p.read_text(encoding="utf-8")) for p in sorted(VERSION_INFO.glob("*.info"))]


def _range_texts() -> list[str]:
    keys = ("compatible_version_fw", "compatible_version_drv")
    return sorted({info[k] for info in _infos() for k in keys if k in info})


def _versions() -> list[str]:
    """Every version the upstream files write: Version= and package_version= of each version.info, each
    range bound (the low bound, and the high bound without its prefix dot), each CANN image's version."""
    found: set[str] = set()
    for info in _infos():
        found.update(info[k] for k in ("Version", "package_version") if k in info)
    for text in _range_texts():
        for low, high in _BOUND.findall(text):
            found.update((low.rstrip("."), high.rstrip(".")))
    for tag in CANN_IMAGES.glob("*/cann/*"):
        found.add(tag.name.split("-")[0] if "-beta" not in tag.name else "-".join(tag.name.split("-")[:2]))
    return sorted(found)


VERSIONS = _versions()
RANGES = _range_texts()


def test_the_upstream_files_give_enough_to_compare() -> None:
    assert len(VERSIONS) >= 20 and len(RANGES) >= 6, (VERSIONS, RANGES)
    assert {"24.1.rc2.2", "7.7.0.1.231", "23.0.rc3", "9.1.0-beta.1", "8.3.rc2"} <= set(VERSIONS)


@pytest.mark.parametrize("text", [*VERSIONS, "V100R001C18", "24.1.xyz", "", "rc1"])
def test_both_parse_the_same_texts(text: str) -> None:
    def parses(parse: object) -> bool:
        try:
            parse(text)  # type: ignore[operator]
        except ValueError:
            return False
        return True

    assert parses(mu.version_key) == parses(Version), text


def test_both_order_every_pair_the_same_way() -> None:
    for a, b in itertools.product(VERSIONS, repeat=2):
        catalog = (Version(a) > Version(b)) - (Version(a) < Version(b))
        assert mu.compare(a, b) == catalog, (a, b)
        assert mu.same_version(a, b) == (catalog == 0), (a, b)
        assert mu.starts_with(a, b) == Version(a).matches_series(b), (a, b)
    assert sorted(VERSIONS, key=Version) == sorted(VERSIONS, key=mu.version_key)


@pytest.mark.parametrize("text", RANGES)
def test_both_read_each_range_and_accept_the_same_versions(text: str) -> None:
    catalog = parse_ranges(text)
    assert [(r.low, r.high, r.high_prefix) for r in catalog.ranges] == mu.parse_ranges(text)
    for version in VERSIONS:
        assert mu.accepts(text, version) == catalog.accepts(version), (text, version)
