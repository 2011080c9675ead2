"""The fake npu-smi against the verbatim samples of ascend-samples.md (copied into fake_samples/)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.unit.sim.ascend_fake_helpers import (
    HW_310P,
    HW_910B4,
    HW_A3,
    REFERENCE,
    SAMPLES,
    driver_loaded,
    host,
    put,
    reference_blocks,
    sample,
    tabbed,
    telemetry_from_table,
    tool,
)

TELEMETRY = "/var/lib/ascend-sim/telemetry.json"
PROCESSES = "/var/lib/ascend-sim/processes.json"
HW_910B2 = dict(
    HW_910B4,
    chip="910B2",
    npu_smi_name="910B2",
    hbm_mb=65536,
    bus_ids=[f"0000:{b}:00.0" for b in ("C1", "01", "C2", "02", "81", "41", "82", "42")],
)


def npu_smi(root: Path, *args: str, stdin: str = "") -> tuple[int, list[str]]:
    res = tool(root, "npu_smi.py", *args, stdin=stdin)
    return res.returncode, res.stdout.splitlines()


def test_fixtures_are_verbatim_copies_of_the_reference() -> None:
    blocks = reference_blocks()
    for path in sorted(SAMPLES.glob("*.txt")):
        assert path.read_text(encoding="utf-8") in blocks, f"{path.name} is not a block of {REFERENCE}"


def test_910b4_idle_table_matches_sample_1a_line_for_line(tmp_path: Path) -> None:
    expected = sample("npu_smi_910b4_idle.txt")
    driver_loaded(tmp_path, HW_910B4, "25.0.rc1.1")
    put(tmp_path, TELEMETRY, telemetry_from_table(expected, "910b"))
    assert npu_smi(tmp_path, "info") == (0, expected.splitlines())


def test_910b2_table_with_processes_matches_sample_1a(tmp_path: Path) -> None:
    expected = sample("npu_smi_910b2_tp4.txt")
    driver_loaded(tmp_path, HW_910B2, "24.1.0.3")
    put(tmp_path, TELEMETRY, telemetry_from_table(expected, "910b"))
    worker = [
        {"pid": pid, "name": "VLLMWorker_TP", "memory_mb": mb}
        for pid, mb in ((4286, 117), (4287, 117), (4288, 117), (4285, 59543))
    ]
    rank = {str(i): [{"pid": 4285 + i, "name": "VLLMWorker_TP", "memory_mb": 59799}] for i in (1, 2, 3)}
    put(tmp_path, PROCESSES, {"0": worker, **rank})
    assert npu_smi(tmp_path, "info") == (0, expected.splitlines())


def test_a3_node_table_matches_sample_1b(tmp_path: Path) -> None:
    expected = sample("npu_smi_a3_node.txt")
    driver_loaded(tmp_path, HW_A3, "25.3.rc1")
    put(tmp_path, TELEMETRY, telemetry_from_table(expected, "910_93"))
    procs = {
        str(i): [{"pid": pid, "name": "", "memory_mb": 43266}]
        for i, pid in enumerate((2173027, 2173030, 2173031, 2173032))
    }
    put(tmp_path, PROCESSES, procs)
    rc, lines = npu_smi(tmp_path, "info")
    assert (rc, lines) == (0, expected.splitlines())
    assert {len(line) for line in lines} == {98}
    assert len([line for line in lines if re.match(r"\| \d     Ascend910 ", line)]) == 16
    assert (
        lines[4]
        == "| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |"  # noqa: E501
    )


def test_a3_container_sees_only_its_devices_sample_1b(tmp_path: Path) -> None:
    """Inside a container given /dev/davinci4,5 (NPU 2): hardware.json comes from the /usr/local/dcmi copy."""
    expected = sample("npu_smi_a3_container.txt")
    driver_loaded(tmp_path, HW_A3, "24.1.rc3.7")
    put(tmp_path, "/usr/local/dcmi/ascend-sim-hardware.json", HW_A3)
    (tmp_path / "var/lib/ascend-sim/hardware.json").unlink()
    for i in [*range(4), *range(6, 16)]:
        (tmp_path / f"dev/davinci{i}").unlink()
    put(tmp_path, TELEMETRY, telemetry_from_table(expected, "910_93", ids=[4, 5]))
    assert npu_smi(tmp_path, "info") == (0, expected.splitlines())


def test_310p_duo_table_matches_sample_1c(tmp_path: Path) -> None:
    expected = sample("npu_smi_310p_duo.txt")
    driver_loaded(tmp_path, HW_310P, "25.2.0")
    put(tmp_path, TELEMETRY, telemetry_from_table(expected, "310p"))
    put(
        tmp_path,
        PROCESSES,
        {
            "4": [
                {"pid": 904545, "name": "python3", "memory_mb": 101},
                {"pid": 917047, "name": "mindie_llm_backend", "memory_mb": 101},
            ],
            "5": [{"pid": 904546, "name": "python3", "memory_mb": 100}],
        },
    )
    rc, lines = npu_smi(tmp_path, "info")
    assert (rc, lines) == (0, expected.splitlines())
    assert {len(line) for line in lines} == {106}
    assert len([line for line in lines if re.match(r"\| \d       310P3 ", line)]) == 8


def test_default_live_values_keep_the_layout(tmp_path: Path) -> None:
    """Without telemetry.json the values are generated; every line still has the sample's width."""
    for hw, width in ((HW_910B4, 98), (HW_A3, 98), (HW_310P, 106)):
        root = tmp_path / hw["profile"]
        driver_loaded(root, hw, "25.2.0")
        put(root, PROCESSES, {"1": [{"pid": 7, "name": "a-very-long-process-name", "memory_mb": 20000}]})
        rc, lines = npu_smi(root, "info")
        assert rc == 0 and {len(line) for line in lines} == {width}
        assert any("| a-very-long-pro " in line for line in lines)


def test_unhealthy_npu_shows_alarm_and_sample_4c_details(tmp_path: Path) -> None:
    driver_loaded(tmp_path, HW_910B4, "25.0.rc1.1")
    put(tmp_path, "/var/lib/ascend-sim/faults.json", {"npu_unhealthy": [0], "link_down": []})
    rc, lines = npu_smi(tmp_path, "info")
    assert rc == 0 and lines[6].startswith("| 0     910B4               | Alarm         |")
    assert "| 1     910B4               | OK            |" in "\n".join(lines)
    expected = sample("health_alarm.txt").splitlines()[1:]  # without the command line
    assert npu_smi(tmp_path, "info", "-t", "health", "-i", "0", "-c", "0") == (0, expected)
    assert npu_smi(tmp_path, "info", "-t", "health", "-i", "1", "-c", "0") == (
        0,
        [
            "\tHealth Status                  : OK",
            "\tError Code                     : NA",
            "\tError Information              : NA",
        ],
    )


def test_card_health_lists_chips_then_the_mcu(tmp_path: Path) -> None:
    driver_loaded(tmp_path, HW_A3, "25.3.rc1")
    put(tmp_path, "/var/lib/ascend-sim/faults.json", {"npu_health": {"1": "Critical"}})
    rc, lines = npu_smi(tmp_path, "info", "-t", "health", "-i", "0")
    kv = "\t%-30s : %s"
    assert rc == 0 and lines == [
        kv % ("NPU ID", 0),
        kv % ("Chip Count", 2),
        "",
        kv % ("Health", "OK"),
        kv % ("Chip ID", 0),
        "",
        kv % ("Health", "Critical"),
        kv % ("Chip ID", 1),
        "",
        kv % ("Health", "OK"),
        kv % ("Chip Name", "MCU"),
        "",
    ]


def test_list_and_mapping_match_samples_4a_4b(tmp_path: Path) -> None:
    driver_loaded(tmp_path, HW_910B4, "25.0.rc1.1")
    rc, lines = npu_smi(tmp_path, "info", "-l")
    assert rc == 0 and "\n".join(lines).rstrip("\n") == tabbed(sample("list_910b4.txt"))
    assert npu_smi(tmp_path, "info", "-m") == (0, tabbed(sample("map_910b4.txt")).splitlines())


def test_a3_mapping_has_phy_id_column(tmp_path: Path) -> None:
    driver_loaded(tmp_path, HW_A3, "25.3.rc1")
    rc, lines = npu_smi(tmp_path, "info", "-m")
    assert rc == 0 and lines[0].split() == [
        "NPU",
        "ID",
        "Chip",
        "ID",
        "Chip",
        "Logic",
        "ID",
        "Chip",
        "Phy-ID",
        "Chip",
        "Name",
    ]
    assert [line.split() for line in lines[1:4]] == [
        ["0", "0", "0", "0", "Ascend910"],
        ["0", "1", "1", "1", "Ascend910"],
        ["0", "2", "-", "-", "Mcu"],
    ]
    assert npu_smi(tmp_path, "info", "-l")[1][:5] == [
        "\tTotal Count                    : 8",
        "",
        "\tNPU ID                         : 0",
        "\tChip Count                     : 2",
        "",
    ]


def test_board_matches_sample_2a_and_checks_compatibility(tmp_path: Path) -> None:
    driver_loaded(tmp_path, HW_910B4, "25.5.1", fw_range="[7.7.0,7.8.99]")
    put(tmp_path, "/usr/local/Ascend/firmware/version.info", "Version=7.8.0.6.201\n")
    rc, lines = npu_smi(tmp_path, "info", "-t", "board", "-i", "0")
    expected = tabbed(sample("board_910b.txt")).splitlines()
    assert rc == 0 and len(lines) == len(expected)
    for got, want in zip(lines, expected, strict=True):
        assert re.fullmatch(r"\t.{30} : .+", got)
        if "Serial Number" in want:
            assert re.fullmatch(r"\tSerial Number {18}: \d{12}", got)
        else:
            assert got == want
    put(tmp_path, "/usr/local/Ascend/firmware/version.info", "Version=7.1.0.7.220\n")
    assert "\tCompatibility                  : NOK" in npu_smi(tmp_path, "info", "-t", "board", "-i", "3")[1]


def test_chip_board_first_lines_match_sample_2b(tmp_path: Path) -> None:
    driver_loaded(tmp_path, HW_910B4, "25.0.rc1.1")
    rc, lines = npu_smi(tmp_path, "info", "-t", "board", "-i", "0", "-c", "0")
    assert rc == 0 and lines[:4] == [
        "\tNPU ID                         : 0",
        "\tChip ID                        : 0",
        "\tChip Type                      : Ascend",
        "\tChip Name                      : 910B4",
    ]
    assert lines[-2:] == [
        "\tPCIe Bus Info                  : 0000:C1:00.0",
        "\tFirmware Version               : NA",
    ]
    a3 = tmp_path / "a3"
    driver_loaded(a3, HW_A3, "25.3.rc1")
    assert npu_smi(a3, "info", "-t", "board", "-i", "0", "-c", "1")[1][:4] == [
        "\tNPU ID                         : 0",
        "\tNPU Name                       : 9392",
        "\tChip ID                        : 1",
        "\tChip Name                      : Ascend910",
    ]


def test_topo_matches_sample_3(tmp_path: Path) -> None:
    driver_loaded(tmp_path, dict(HW_910B4, chip="910B3", npu_smi_name="910B3"), "24.1.0")
    expected = sample("topo_910b3.txt").splitlines()[1:]
    assert npu_smi(tmp_path, "info", "-t", "topo") == (0, expected)


def test_a3_topo_uses_phy_ids_and_sio(tmp_path: Path) -> None:
    driver_loaded(tmp_path, HW_A3, "25.3.rc1")
    rc, lines = npu_smi(tmp_path, "info", "-t", "topo")
    assert rc == 0 and lines[0].startswith("\t   Phy-ID0    Phy-ID1    Phy-ID2")
    assert lines[1].split()[:4] == ["Phy-ID0", "X", "SIO", "HCCS_SW"] and "CPU Affinity" not in lines[0]
    assert "  SIO  = Path traversing the SIO bus" in lines and lines[-1] == "  NA   = Unknown relationship."


def test_errors_are_the_real_ones(tmp_path: Path) -> None:
    host(tmp_path, HW_910B4)
    assert npu_smi(tmp_path, "info") == (187, ["dcmi module initialize failed. ret is -8005"])
    driver_loaded(tmp_path, HW_910B4, "25.0.rc1.1")
    assert npu_smi(tmp_path, "info", "-t", "board", "-i", "8") == (
        215,
        [  # sample 4c, invalid card id
            "Invalid card id.",
            "Error parameter of -i",
            "Usage: npu-smi info <watch|proc|-h|-m|-l|-t type> [Options...]",
        ],
    )
    assert npu_smi(tmp_path, "info", "-t", "health", "-i", "0", "-c", "1")[0] == 215
    assert npu_smi(tmp_path, "info", "-t", "nonsense")[1][0] == "Error parameter of -t"
    assert npu_smi(tmp_path, "bogus")[0] == 211


def test_reset_asks_and_resets(tmp_path: Path) -> None:
    driver_loaded(tmp_path, HW_910B4, "25.0.rc1.1")
    rc, lines = npu_smi(tmp_path, "set", "-t", "reset", "-i", "0", "-c", "0", stdin="Y\n")
    assert rc == 0 and lines[1] == "Are you sure you want to continue resetting?(Y/N)"
    assert lines[2:] == [
        "\tMessage                        : resetting ...",
        "\tStatus                         : OK",
        "\tMessage                        : Reset chip successfully.",
    ]
    rc, lines = npu_smi(tmp_path, "set", "-t", "reset", "-i", "0", "-c", "0", stdin="N\n")
    assert rc == 200 and lines[-1] == "\tMessage                        : User aborts reset chip by inband."
    put(tmp_path, PROCESSES, {"0": [{"pid": 1, "name": "python", "memory_mb": 1}]})
    rc, lines = npu_smi(tmp_path, "set", "-t", "reset", "-i", "0", "-c", "0", stdin="Y\n")
    assert rc != 0 and lines[-1] == "\tMessage                        : Failed to reset chip"
