"""The module_utils parsers of ascend.npu against the verbatim samples of ascend-samples.md (copied into
tests/unit/sim/fake_samples/) and the real version.info files (tests/fixtures/ascend/version_info/).
Expected values are read off the samples by hand."""

from __future__ import annotations

import pytest
from ansible_collections.ascend.npu.plugins.module_utils import npu_smi, runpkg, version_info

from tests.unit.sim.ascend_fake_helpers import REPO, sample

VI = REPO / "tests" / "fixtures" / "ascend" / "version_info"


def info(name: str) -> dict[str, str]:
    return version_info.parse_kv((VI / name).read_text(encoding="utf-8"))


def test_board_sample_2a() -> None:
    board = npu_smi.parse_board(sample("board_910b.txt"))
    assert board["Software Version"] == "25.5.1"
    assert board["Firmware Version"] == "7.8.0.6.201"
    assert board["Compatibility"] == "OK"
    assert board["PCI Device ID"] == "0xD802"
    assert board["Chip Count"] == "1"


def test_list_sample_4a_and_map_sample_4b() -> None:
    listing = npu_smi.parse_list(sample("list_910b4.txt"))
    assert listing["total"] == 8
    assert [n["npu_id"] for n in listing["npus"]] == list(range(8))
    assert {n["chip_count"] for n in listing["npus"]} == {1}
    chips = npu_smi.parse_map(sample("map_910b4.txt"))
    assert len(chips) == 8  # the 8 Mcu rows are not NPU chips
    assert chips[3] == {"npu_id": 3, "chip_id": 0, "logic_id": 3, "phy_id": None, "name": "Ascend 910B4"}


def test_map_a3_phy_ids() -> None:
    # sample 4b, A3 fixture form (Chip Phy-ID column, Mcu row per card)
    text = (
        "NPU ID                         Chip ID                        Chip Logic ID                  "
        "Chip Phy-ID                    Chip Name\n"
        "0                              0                              0                              "
        "0                              Ascend910\n"
        "0                              1                              1                              "
        "1                              Ascend910\n"
        "0                              2                              -                              "
        "-                              Mcu\n"
        "1                              0                              2                              "
        "2                              Ascend910\n"
    )
    chips = npu_smi.parse_map(text)
    assert [(c["npu_id"], c["chip_id"], c["logic_id"], c["phy_id"]) for c in chips] == [
        (0, 0, 0, 0),
        (0, 1, 1, 1),
        (1, 0, 2, 2),
    ]


def test_health_sample_4c_alarm_with_continuations() -> None:
    text = "\n".join(sample("health_alarm.txt").splitlines()[1:])  # without the command line
    (row,) = npu_smi.parse_health(text)
    assert row["health"] == "Alarm" and row["error_code"] == "A4025021 8C03A000 8C084E00"
    card = "\tNPU ID : 0\n\tChip Count : 2\n\n\tHealth : OK\n\tChip ID : 0\n\n"
    card += "\tHealth : Warning\n\tChip ID : 1\n\n"
    card += "\tHealth : OK\n\tChip Name : MCU\n"
    assert npu_smi.parse_health(card) == [{"chip_id": 0, "health": "OK"}, {"chip_id": 1, "health": "Warning"}]


def test_processes_and_health_of_the_main_table_sample_1a() -> None:
    table = sample("npu_smi_910b2_tp4.txt")
    procs = npu_smi.parse_processes(table)
    assert len(procs) == 7
    assert procs[3] == {"npu_id": 0, "chip": 0, "pid": 4285, "name": "VLLMWorker_TP", "memory_mb": 59543}
    assert {p["npu_id"] for p in procs} == {0, 1, 2, 3}
    health = npu_smi.parse_table_health(table)
    assert [(h["npu_id"], h["name"], h["health"]) for h in health] == [(i, "910B2", "OK") for i in range(8)]
    assert npu_smi.parse_processes(sample("npu_smi_910b4_idle.txt")) == []


def test_main_table_a3_and_310p() -> None:
    a3 = npu_smi.parse_table_health(sample("npu_smi_a3_node.txt"))
    assert len(a3) == 16 and {h["name"] for h in a3} == {"Ascend910"}  # two dies per NPU, 8 NPUs
    assert len(npu_smi.parse_processes(sample("npu_smi_a3_node.txt"))) == 4
    duo = npu_smi.parse_table_health(sample("npu_smi_310p_duo.txt"))
    assert {h["name"] for h in duo} == {"310P3"} and {h["health"] for h in duo} == {"OK"}


def test_boot_status_lines() -> None:
    # 7b: the driver scripts count lines containing "boot status" and "boot status:16"
    text = (
        "Get device boot status succeed for deviceId(0), boot status:16\n"
        "Get device boot status succeed for deviceId(1), boot status:3\n"
    )
    assert npu_smi.parse_boot_status(text) == {0: 16, 1: 3}


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("24.1.rc3", "24.1.0"),
        ("24.1.0", "24.1.0.3"),
        ("25.0.rc1", "25.0.rc1.3"),
        ("7.7.0.1.231", "7.8.0.6.201"),
        ("8.0.RC3", "8.0.0"),
    ],
)
def test_version_order(older: str, newer: str) -> None:
    assert version_info.compare(older, newer) == -1 and version_info.compare(newer, older) == 1
    assert version_info.same_version("9.1", "9.1.0") and version_info.same_version("25.0.RC1", "25.0.rc1")


def test_real_version_info_pairs_in_both_directions() -> None:
    """The faultdiag pair: driver 24.1.rc1 accepts firmware 7.1.0.11.220, the firmware refuses the driver."""
    pair = version_info.pair_check(info("driver_24.1.rc1.info"), info("firmware_7.1.0.11.220.info"))
    assert pair["driver_accepts_firmware"] is True and pair["firmware_accepts_driver"] is False
    assert pair["ok"] is False and "compatible_version_drv" in pair["problems"][0]
    for drv, fw in (("24.1.rc3", "7.5.0.1.129"), ("25.0.rc1.1", "7.7.0.1.231")):  # installed together
        pair = version_info.pair_check(info(f"driver_{drv}.info"), info(f"firmware_{fw}.info"))
        assert (pair["ok"], pair["driver_accepts_firmware"], pair["firmware_accepts_driver"]) == (True,) * 3
    only_driver = version_info.pair_check(info("driver_25.3.rc1.info"), {}, firmware_version="7.8.0.2.212")
    assert only_driver["ok"] is True and only_driver["firmware_accepts_driver"] is None
    refused = version_info.pair_check(info("driver_24.1.rc2.2.info"), {}, firmware_version="7.5.0.1.129")
    assert refused["ok"] is False and refused["driver_accepts_firmware"] is False  # [7.0.0,7.2.99]


def test_prefix_bounds() -> None:
    ranges = version_info.parse_ranges("[23.0.0,23.0.0.],[24.0,24.0.],[24.1,24.1.]")
    assert version_info.in_ranges("24.1.rc3", ranges) and version_info.in_ranges("24.1.0.3", ranges)
    assert not version_info.in_ranges("24.2.0", ranges) and not version_info.in_ranges("25.0.rc1.1", ranges)
    with pytest.raises(ValueError, match="expected"):
        version_info.parse_ranges("7.0.0-7.2.99")


def test_installer_outcomes_from_the_samples() -> None:
    driver = runpkg.interpret("driver", 0, sample("install_driver.txt"))
    assert driver["ok"] and not driver["reboot_required"]
    firmware = runpkg.interpret("firmware", 0, sample("install_firmware.txt"))
    assert firmware["ok"] and firmware["reboot_required"]
    assert "Reboot now or after driver installation" in firmware["reboot_reason"]
    reboot = runpkg.interpret(
        "driver",
        2,
        "[Driver] [2025-07-17 10:36:24] [INFO]\x1b[32mDriver package upgraded successfully! \x1b[0m"
        "\x1b[31mReboot needed for installation/upgrade to take effect! \x1b[0m\n",
    )
    assert reboot["ok"] and reboot["reboot_required"]
    busy = runpkg.interpret(  # 6e, with its trailing space
        "driver",
        1,
        "[ERROR]The davinci nodes are occupied by some processes, please stop processes and install or "
        "uninstall again, details in : /var/log/ascend_seclog/ascend_install.log \n",
    )
    assert not busy["ok"] and busy["busy"] and "software.stop_serving" in busy["fix"]
    tools = runpkg.interpret("driver", 1, "[ERROR]The list of missing tools: lspci,ifconfig,\n")
    assert tools["missing_tools"] == ["lspci", "ifconfig"] and "net-tools, pciutils" in tools["fix"]
    assert runpkg.check_passed(0, sample("check_driver.txt")) is None
    assert runpkg.check_passed(2, "Error in SHA256 checksums") == "rc 2: Error in SHA256 checksums"
