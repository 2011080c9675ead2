"""HDK driver/firmware and CANN/driver compatibility against Huawei's own files and tables.

Fixtures: real version.info files (tests/fixtures/ascend/version_info, sources in its README) and the
"CANN and Ascend HDK Version Compatibility" tables of the CANN 8.5.0 / 9.1.0 / 9.2.0 release notes, written
out below as the notes print them. None of these tests reads the catalog to produce its expectation.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.catalog import (
    cann_requirement,
    driver_series,
    firmware_compatible,
    firmware_line,
    parse_ranges,
    parse_version_info,
)

VERSION_INFO = Path(__file__).resolve().parents[1] / "fixtures" / "ascend" / "version_info"


def info(name: str) -> dict[str, str]:
    return parse_version_info((VERSION_INFO / name).read_text(encoding="utf-8"))


DRIVERS = sorted(p.name for p in VERSION_INFO.glob("driver_*.info"))
FIRMWARE = sorted(p.name for p in VERSION_INFO.glob("firmware_*.info"))
# driver/firmware installed together on one machine (README "pair" column)
PAIRS = [
    ("driver_24.1.rc1.info", "firmware_7.1.0.11.220.info"),
    ("driver_24.1.rc3.info", "firmware_7.5.0.1.129.info"),
    ("driver_25.0.rc1.1.info", "firmware_7.7.0.1.231.info"),
]


def test_fixtures_are_what_the_readme_lists() -> None:
    assert len(DRIVERS) == 5 and len(FIRMWARE) == 4
    readme = (VERSION_INFO / "README.md").read_text(encoding="utf-8")
    assert all(name in readme for name in DRIVERS + FIRMWARE)


# ------------------------------------------------------------------------------------- range syntax


def test_range_syntax_as_version_info_writes_it() -> None:
    fw = parse_ranges("[7.0.0,7.2.99]")
    assert fw.accepts("7.0.0") and fw.accepts("7.1.0.11.220") and fw.accepts("7.2.99")
    assert not fw.accepts("7.3.0.1.231") and not fw.accepts("6.4.12.1.241")
    drv = parse_ranges("[23.0.rc3,23.0.rc3.],[23.0.0,23.0.0.]")
    assert drv.accepts("23.0.rc3") and drv.accepts("23.0.rc3.2") and drv.accepts("23.0.0.1")
    assert not drv.accepts("23.0.rc2") and not drv.accepts("24.1.rc1")
    series = parse_ranges("[24.0,24.0.],[24.1,24.1.]")
    # a release candidate sorts before 24.1, yet starts with it: inside
    assert series.accepts("24.1.rc3") and series.accepts("24.1.0.3") and not series.accepts("25.0.rc1.1")
    assert str(parse_ranges("[23.0.0,23.0.0.],[24.0,24.0.]")) == "[23.0.0,23.0.0.],[24.0,24.0.]"


@pytest.mark.parametrize("bad", ["", "7.0.0,7.2.99", "[7.0.0]", "[7.3.0,7.2.0]", "[7.0.0,7.2.99];[8,9]"])
def test_bad_range_text_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="invalid version range"):
        parse_ranges(bad)


# ------------------------------------------------------------------------- driver side (version.info)


@pytest.mark.parametrize("name", DRIVERS)
def test_catalog_driver_range_is_the_drivers_own(name: str) -> None:
    data = info(name)
    own = parse_ranges(data["compatible_version_fw"])
    series = driver_series(data["Version"])
    assert series is not None, f"driver {data['Version']} has no series in hdk.yaml"
    # firmware at every bound and just outside: the catalog decides exactly as the driver's file does
    probes = {b for r in own.ranges for b in (r.low, r.high)}
    probes |= {"6.4.12.1.241", "7.1.0.7.220", "7.3.0.1.231", "7.5.0.1.129", "7.7.0.1.231", "7.8.0.6.201"}
    probes |= {"8.9.9", "9.0.0.1.1", "7.2.99.1", "7.5.99.1", "7.7.99.1"}
    for fw in sorted(probes):
        assert series.compatible_version_fw.accepts(fw) == own.accepts(fw), (data["Version"], fw)


@pytest.mark.parametrize("name", FIRMWARE)
def test_catalog_knows_what_each_firmware_accepts(name: str) -> None:
    data = info(name)
    own = parse_ranges(data["compatible_version_drv"])
    line = firmware_line(data["Version"])
    assert line is not None, f"firmware {data['Version']} has no row in hdk.yaml"
    for drv in ["23.0.rc2", "23.0.rc3", "23.0.0", "24.0.1", "24.1.rc1", "24.1.rc3", "24.1.0.3", "25.0.rc1.1"]:
        if name.endswith("_b.info") or own.accepts(drv):  # the catalog row is the union of both samples
            assert line.compatible_version_drv.accepts(drv), (data["Version"], drv)
    for drv in ["25.2.0", "25.3.rc1", "25.5.1", "26.0.rc1"]:
        assert not own.accepts(drv) and not line.compatible_version_drv.accepts(drv)


@pytest.mark.parametrize(("drv", "fw"), PAIRS)
def test_pairs_are_judged_by_both_files(drv: str, fw: str) -> None:
    d, f = info(drv), info(fw)
    expected = parse_ranges(d["compatible_version_fw"]).accepts(f["Version"]) and parse_ranges(
        f["compatible_version_drv"]
    ).accepts(d["Version"])
    assert firmware_compatible(d["Version"], f["Version"]) is expected


def test_firmware_side_alone_can_refuse_a_pair() -> None:
    # Ascend/mind-cluster faultdiag sample: driver 24.1.rc1 accepts firmware 7.1.0.11.220, but that
    # firmware (package 23.0.7) names only 23.0.rc3 and 23.0.0 drivers.
    d, f = info("driver_24.1.rc1.info"), info("firmware_7.1.0.11.220.info")
    assert parse_ranges(d["compatible_version_fw"]).accepts(f["Version"])
    assert not parse_ranges(f["compatible_version_drv"]).accepts(d["Version"])
    assert firmware_compatible("24.1.rc1", "7.1.0.11.220") is False
    # 25.3.rc1 accepts firmware up to 8.9.9, but 7.7.0.1.231 (HDK 25.0.RC1.1) stops at 25.0 drivers
    assert parse_ranges(info("driver_25.3.rc1.info")["compatible_version_fw"]).accepts("7.7.0.1.231")
    assert firmware_compatible("25.3.rc1", "7.7.0.1.231") is False


# ---------------------------------------------------------------------------- CANN <-> HDK driver


# Rows as the CANN release notes print them: CANN -> {HDK column: supported}.
# CANN 9.1.0 notes: columns 25.0.X 25.2.X 25.3.X 25.5.X 26.0.RC1/25.7.RC1 26.1.0;
# CANN 9.2.0 notes add 26.1.1 and 26.2.RC1; CANN 8.5.0 notes: 25.5.X 25.3.X 25.2.X 25.0.X.
HDK_COLUMNS = {"25.0.X": "25.0.rc1.1", "25.2.X": "25.2.0", "25.3.X": "25.3.rc1", "25.5.X": "25.5.1"}
HDK_COLUMNS |= {"26.0.RC1": "26.0.rc1", "26.1.0": "26.1.0", "26.1.1": "26.1.1", "26.2.RC1": "26.2.rc1"}
TABLE = {
    "8.5.2": "Y Y Y Y Y Y Y Y",
    "9.0.0": "Y Y Y Y Y Y Y Y",
    "9.0.1": "Y Y Y Y Y Y Y Y",
    "9.1.0": "N Y Y Y Y Y Y Y",
    "9.2.0": "N N Y Y Y Y Y Y",
}


@pytest.mark.parametrize("cann", sorted(TABLE))
def test_cann_driver_range_matches_the_release_notes(cann: str) -> None:
    req = cann_requirement(cann)
    assert req is not None and req.version == cann
    for (column, driver), mark in zip(HDK_COLUMNS.items(), TABLE[cann].split(), strict=True):
        assert req.driver_supported(driver) is (mark == "Y"), (cann, column)
    assert not req.driver_supported("24.1.0.3")  # older than every column
    assert not req.driver_supported("26.3.0")  # newer than every table: the upper end is checked too


def test_cann_850_runs_on_25_0_to_25_5_and_91_pairs_with_26_0_rc1() -> None:
    req = cann_requirement("8.5.0")
    assert req is not None
    assert [req.driver_supported(d) for d in ["24.1.0", "25.0.rc1", "25.3.rc1", "25.5.1", "26.0.rc1"]] == [
        False,
        True,
        True,
        True,
        False,
    ]
    nine_one = cann_requirement("9.1.0")
    assert nine_one is not None and nine_one.paired_driver == "26.0.rc1"
    # vllm-ascend's 310P image; the 9.1.0-beta.3 notes list 25.5.1 .. 26.0.RC1
    beta = cann_requirement("9.1.0-beta.1")
    assert beta is not None and beta.driver_supported("25.5.1") and not beta.driver_supported("25.3.rc1")
