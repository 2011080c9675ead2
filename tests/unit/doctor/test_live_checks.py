"""The live doctor's checks on recorded facts: ascend.npu.npu_info run against the simulator's fake Ascend
tools (which copy the pinned samples), verbatim tool outputs from the pinned reference
copy (tests/fixtures/reference/ascend-samples.md), verbatim public log lines (tests/data/doctor)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from ascend_sim.packages import build_package
from orchestrator.doctor import live_pci, live_versions
from orchestrator.doctor.live_checks import findings, host_findings
from orchestrator.doctor.live_finding import Finding, Status
from orchestrator.doctor.live_health import health_detail
from orchestrator.doctor.live_report import LiveReport
from orchestrator.doctor.logscan import scan_lines
from orchestrator.doctor.rules import BY_ID
from tests.helpers import ROOT
from tests.unit.collection.module_runner import run_module
from tests.unit.sim.ascend_fake_helpers import HW_910B4, host, put, reference_blocks, run_package

DRIVER, FIRMWARE = "25.5.1", "7.8.0.6.201"
FULL = ("--nox11", "--full", "--quiet", "--install-for-all")
VERBATIM = yaml.safe_load((ROOT / "tests/data/doctor/verbatim-lines.yaml").read_text(encoding="utf-8"))


def _pci(root: Path, device: str = "0xd802") -> None:
    """sysfs as the simulator's kernel shows it (ascend_sim/payloads/sim-server/ascend_kernel/irqs.py), plus a
    non-NPU."""
    for bus in HW_910B4["bus_ids"]:
        put(root, f"/sys/bus/pci/devices/{str(bus).lower()}/vendor", "0x19e5\n")
        put(root, f"/sys/bus/pci/devices/{str(bus).lower()}/device", device + "\n")
    put(root, "/sys/bus/pci/devices/0000:00:1f.0/vendor", "0x8086\n")
    put(root, "/sys/bus/pci/devices/0000:00:1f.0/device", "0xa1c3\n")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The facts of a healthy 8x 910B4 server with the spec's driver and firmware and one replica."""
    out = tmp_path_factory.mktemp("live")
    root = out / "r"
    host(root, dict(HW_910B4, firmware_version="7.7.0.1.231"))
    assert run_package(root, build_package("driver", "910b", DRIVER, out), *FULL).returncode == 0
    fw = build_package("firmware", "910b", FIRMWARE, out)
    assert run_package(root, fw, "--nox11", "--full", "--quiet").returncode == 0
    _pci(root)
    npu = run_module(root, "npu_info", {"containers": False})
    assert npu.get("failed") is None, npu.get("msg")
    return {
        "expect": {
            "chip": "910B4",
            "devices": 8,
            "driver": DRIVER,
            "firmware": FIRMWARE,
            "containers": ["vllm-r1"],
            "peers": [],
        },
        "npu": npu | {"containers": {"checked": True, "reason": "", "items": []}},
        "health": [],
        "hccn": None,
        "logs": [
            {"item": {"container_name": "vllm-r1"}, "rc": 0, "stdout": "INFO: Started server\n", "stderr": ""}
        ],
    }


def _only(found: list[Finding], check: str) -> list[Finding]:
    return [f for f in found if f.check == check]


def _bad(found: list[Finding]) -> list[Finding]:
    return [f for f in found if f.status is not Status.ok]


def test_a_healthy_server_is_all_ok(served: dict[str, Any]) -> None:
    found = host_findings("a2-01", served)
    assert _bad(found) == []
    checks = {f.check for f in found}
    assert checks == {
        "npu-pci", "version-files", "driver-version", "firmware-version", "driver-firmware", "npu-health",
        "npu-held", "serving-log",
    }  # fmt: skip
    assert "8 PCI functions of 910B4 (vendor 0x19e5 device 0xd802)" in _only(found, "npu-pci")[0].seen
    assert LiveReport("s", found).exit_code == 0


def test_driver_not_loaded_npus_on_the_bus_but_npu_smi_fails(tmp_path: Path, served: dict[str, Any]) -> None:
    root = tmp_path / "r"
    host(root, HW_910B4)
    _pci(root)
    npu = run_module(root, "npu_info", {"containers": False})
    facts = copy.deepcopy(served) | {"npu": npu}
    (f,) = _only(host_findings("a2-01", facts), "npu-pci")
    assert f.status is Status.fail and "8 PCI functions" in f.seen and "npu-smi info fails" in f.seen
    assert f.fix == live_pci.FIX_DRIVER and "--phases drivers" in f.fix
    files = _only(host_findings("a2-01", facts), "version-files")
    assert [x.seen for x in files] == [
        "/usr/local/Ascend/driver/version.info is missing",
        "/etc/ascend_install.info is missing",
    ]


def test_no_npu_of_the_spec_chip_on_the_bus(tmp_path: Path, served: dict[str, Any]) -> None:
    root = tmp_path / "r"
    host(root, HW_910B4)
    _pci(root, device="0xd500")  # 310P cards where the spec says 910B4
    facts = copy.deepcopy(served)
    facts["npu"]["pci_functions"] = run_module(root, "npu_info", {"containers": False})["pci_functions"]
    (f,) = _only(host_findings("a2-01", facts), "npu-pci")
    assert f.status is Status.fail and f.seen.startswith("no NPU on the PCI bus")


def test_version_info_unreadable(served: dict[str, Any]) -> None:
    facts = copy.deepcopy(served)
    facts["npu"]["driver"] |= {"present": True, "readable": False, "installed": False, "version": None}
    found = host_findings("a2-01", facts)
    (f,) = _only(found, "version-files")
    assert (f.status, f.seen) == (
        Status.fail,
        "/usr/local/Ascend/driver/version.info exists but cannot be read",
    )
    assert f.fix == live_versions.FIX_FILES


def test_rc_versions_compare_by_meaning(served: dict[str, Any]) -> None:
    """The portal's 25.0.RC1 (a spec, an inventory written by hand) is the host's 25.0.rc1."""
    facts = copy.deepcopy(served)
    facts["npu"]["driver"]["version"] = facts["npu"]["active"]["software_version"] = "25.0.rc1"
    facts["expect"]["driver"] = "25.0.RC1"
    (f,) = _only(host_findings("a2-01", facts), "driver-version")
    assert f.status is Status.ok, f.seen
    facts["expect"]["driver"] = "25.0.RC2"
    (f,) = _only(host_findings("a2-01", facts), "driver-version")
    assert f.status is Status.fail, f.seen


def test_firmware_version_other_than_the_spec(served: dict[str, Any]) -> None:
    facts = copy.deepcopy(served)
    facts["expect"]["firmware"] = "7.7.0.1.231"
    (f,) = _only(host_findings("a2-01", facts), "firmware-version")
    assert f.status is Status.fail and f"installed {FIRMWARE}" in f.seen and "7.7.0.1.231" in f.seen
    assert "--phases drivers" in f.fix


def test_driver_firmware_pair_refused(served: dict[str, Any]) -> None:
    facts = copy.deepcopy(served)
    facts["npu"]["compatibility"]["problems"] = [
        "firmware 7.7.0.1.231 accepts drivers [24.1,24.1.], not 25.5.1"
    ]
    facts["npu"]["active"]["compatibility"] = "NOK"
    (f,) = _only(host_findings("a2-01", facts), "driver-firmware")
    assert f.status is Status.fail and "accepts drivers [24.1,24.1.]" in f.seen and "NOK" in f.seen


def _reference_health_alarm() -> str:
    (block,) = [b for b in reference_blocks() if "Health Status                  : Alarm" in b]
    return block


def test_an_alarmed_chip_with_its_error_codes_from_the_reference(served: dict[str, Any]) -> None:
    text = _reference_health_alarm()
    assert health_detail(text) == {
        "Health Status": "Alarm",
        "Error Code": "A4025021 8C03A000 8C084E00",
        "Error Information": "ascend_monitor adda heart beat lost error",
    }
    facts = copy.deepcopy(served)
    facts["npu"]["chips"][0]["health"] = "Alarm"
    chip = facts["npu"]["chips"][0]
    facts["health"] = [
        {"item": {"npu_id": chip["npu_id"], "chip_id": chip["chip_id"]}, "rc": 0, "stdout": text}
    ]
    (f,) = _only(host_findings("a2-01", facts), "npu-health")
    assert (
        f.status is Status.fail
        and "health Alarm" in f.seen
        and "Error Code A4025021 8C03A000 8C084E00" in f.seen
    )


HCCN_DOWN = {
    "links": {"0": "DOWN", "1": "UP"},
    "pairs": [],
    "failures": [
        "a2-01 device 0: link DOWN; its pings to peers were not tried (reproduce: hccn_tool -i 0 -link -g)"
    ],
    "failed": True,
}


def test_npu_nic_link_down_and_ok(served: dict[str, Any]) -> None:
    facts = copy.deepcopy(served) | {"hccn": HCCN_DOWN}
    (f,) = _only(host_findings("a2-01", facts), "npu-nic")
    assert f.status is Status.fail and "link DOWN" in f.seen and "hccn_tool -i N -link -g" in f.fix
    up = {"links": {"0": "UP"}, "pairs": [{"ok": True}], "failures": []}
    (ok,) = _only(host_findings("a2-01", copy.deepcopy(served) | {"hccn": up}), "npu-nic")
    assert (ok.status, ok.seen) == (
        Status.ok,
        "1 NIC links UP; 1 pings to the same-index NIC of each peer server answered",
    )


def test_npu_nic_ok_says_what_was_pinged_or_why_nothing_was(tmp_path: Path, served: dict[str, Any]) -> None:
    """The facts are what ascend.npu.hccn_ping returns against the fake hccn_tool (the doctor playbook's
    call): a server of no multi-server replica has no peers in the plan, and the finding says so instead of
    "0 peer pings answered"; with a peer server, the pings and the peer are named."""
    from tests.unit.collection.hccn_helpers import configured, devices
    from tests.unit.collection.hccn_helpers import run_module as run_collection_module
    from tests.unit.collection.test_hccn_ping_module import peer_server

    root = configured(tmp_path)
    args = {"devices": devices(), "host": "a2-01", "pairs": "same_index"}
    alone = run_collection_module(root, "hccn_ping", {**args, "peers": []})
    (f,) = _only(host_findings("a2-01", copy.deepcopy(served) | {"hccn": alone}), "npu-nic")
    assert f.status is Status.ok and f.seen.startswith("8 NIC links UP, net health Success on 8"), f.seen
    assert "0 peer" not in f.seen and "no peer pinged: this server serves no replica spread over" in f.seen
    peers = peer_server(root, "a2-02", 20)
    paired = run_collection_module(root, "hccn_ping", {**args, "peers": peers})
    facts = copy.deepcopy(served) | {"hccn": paired}
    facts["expect"]["peers"] = peers
    (f,) = _only(host_findings("a2-01", facts), "npu-nic")
    assert f.status is Status.ok and f.seen.endswith(
        "; 8 pings to the same-index NIC of each peer server on a2-02 answered"
    ), f.seen
    facts = copy.deepcopy(served) | {"hccn": alone}
    facts["expect"]["peers"] = peers  # planned, yet nothing pinged: not silently ok
    (f,) = _only(host_findings("a2-01", facts), "npu-nic")
    assert f.status is Status.warn and "the plan lists 8 peer NICs" in f.seen


def test_a_foreign_container_holding_an_npu(served: dict[str, Any]) -> None:
    facts = copy.deepcopy(served)
    facts["npu"]["containers"]["items"] = [
        {"id": "3f1c2a9d0b7e", "name": "vllm-r1", "image": "vllm", "devices": ["/dev/davinci1"]},
        {
            "id": "9a8b7c6d5e4f",
            "name": "old-test",
            "image": "busybox",
            "devices": ["/dev/davinci0", "/dev/davinci_manager"],
        },
    ]
    (f,) = _only(host_findings("a2-01", facts), "npu-held")
    assert f.status is Status.fail and "old-test (busybox) holds /dev/davinci0;" in f.seen
    assert "docker stop" in f.fix


def test_a_serving_log_with_a_known_error_gets_the_rule_fix(served: dict[str, Any]) -> None:
    lines = VERBATIM["samples"]["npu-occupied-dcmi-8005"][0]["lines"]
    want = scan_lines(lines).match
    assert want is not None and want.rule.id == "npu-occupied-dcmi-8005"
    facts = copy.deepcopy(served)
    log = "INFO 11-07 06:32:30 [api_server.py:1] vLLM API server version 0.11.0\n" + "\n".join(lines)
    facts["logs"] = [{"item": {"container_name": "vllm-r1"}, "rc": 0, "stdout": "", "stderr": log}]
    (f,) = _only(host_findings("a2-01", facts), "serving-log")
    assert f.status is Status.fail and "npu-occupied-dcmi-8005" in f.seen and "line 3" in f.seen
    assert f.fix == BY_ID["npu-occupied-dcmi-8005"].fix


def test_exit_codes_and_json(served: dict[str, Any]) -> None:
    ok = findings({"a2-01": served})
    assert LiveReport("s", ok, {"a2-02": "ssh: connect refused"}).exit_code == 4
    bad = copy.deepcopy(served) | {"hccn": HCCN_DOWN}
    report = LiveReport("s", findings({"a2-01": bad}), {"a2-02": "ssh: connect refused"})
    assert report.exit_code == 3
    doc = json.loads(report.as_json())
    assert (
        doc["exit_code"] == 3
        and doc["problems"] == 1
        and doc["unreachable"] == {"a2-02": "ssh: connect refused"}
    )
    assert {"host", "check", "status", "seen", "fix"} == set(doc["findings"][0])


def test_npu_info_failing_is_a_finding_not_a_missing_bus(served: dict[str, Any]) -> None:
    facts = copy.deepcopy(served) | {"npu": {"failed": True, "msg": "root / is not a directory"}}
    (f,) = _only(host_findings("a2-01", facts), "npu-pci")
    assert (f.status, f.seen) == (Status.fail, "reading the NPU state failed: root / is not a directory")
