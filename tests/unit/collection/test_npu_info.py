"""ascend.npu.npu_info against the simulator's fake npu-smi / upgrade-tool / packages under a temp
ASCEND_SIM_ROOT, and a stand-in `docker` CLI that prints `docker inspect` JSON as Docker does."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ascend_sim.packages import build_package
from tests.unit.collection.module_runner import run_module
from tests.unit.sim.ascend_fake_helpers import HW_910B4, HW_A3, host, put, run_package

FULL = ("--nox11", "--full", "--quiet", "--install-for-all")


@pytest.fixture(scope="module")
def pkgs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("pkgs")
    return {
        "driver": build_package("driver", "910b", "25.5.1", out),
        "firmware": build_package("firmware", "910b", "7.8.0.6.201", out),
        "old_fw": build_package("firmware", "910b", "7.1.0.11.220", out),
        "a3": build_package("driver", "910_93", "25.0.rc1.3", out),
        "refusing_fw": build_package(
            "firmware", "910b", "7.7.0.1.231", out / "refusing", compatible="[24.1,24.1.]"
        ),
    }


def info(root: Path, **env: str) -> dict[str, object]:
    res = run_module(root, "npu_info", {"containers": False}, **env)
    assert res.get("failed") is None, res.get("msg")
    return res


def test_a_host_without_the_driver(tmp_path: Path) -> None:
    host(tmp_path / "r", dict(HW_910B4, firmware_version="7.7.0.1.231"))
    res = info(tmp_path / "r")
    assert res["driver"]["installed"] is False and res["firmware"]["installed"] is False
    assert res["npu_smi"] == {
        "present": False,
        "path": None,
        "usable": False,
        "error": "npu-smi is not installed",
    }
    assert res["chips"] == [] and res["health"]["ok"] is False and res["boot_status"]["available"] is False


def test_driver_and_firmware_installed_both_directions(pkgs: dict[str, Path], tmp_path: Path) -> None:
    root = tmp_path / "r"
    host(root, dict(HW_910B4, firmware_version="7.7.0.1.231"))
    assert run_package(root, pkgs["driver"], *FULL).returncode == 0
    assert run_package(root, pkgs["firmware"], "--nox11", "--full", "--quiet").returncode == 0
    res = info(root)
    assert res["driver"]["version"] == "25.5.1" and res["firmware"]["version"] == "7.8.0.6.201"
    assert res["install_info"]["Driver_Install_For_All"] == "yes"
    assert (
        res["active"]["software_version"] == "25.5.1" and res["active"]["firmware_version"] == "7.8.0.6.201"
    )
    assert res["active"]["compatibility"] == "OK" and not res["active"]["mixed"]
    comp = res["compatibility"]
    assert (comp["ok"], comp["driver_accepts_firmware"], comp["firmware_accepts_driver"]) == (
        True,
        True,
        True,
    )
    assert len(res["npus"]) == 8 and len(res["chips"]) == 8 and len(res["boards"]) == 8
    assert {b["pci_device_id"] for b in res["boards"]} == {"0xD802"}
    assert res["boot_status"]["all_booted"] is True and len(res["boot_status"]["devices"]) == 8
    assert res["health"] == {"ok": True, "unhealthy": []} and res["processes"] == []


def test_a_firmware_that_refuses_the_driver(pkgs: dict[str, Path], tmp_path: Path) -> None:
    """The firmware's compatible_version_drv names 24.1 only: npu-smi says NOK and the facts say why."""
    root = tmp_path / "r"
    host(root, HW_910B4)
    assert run_package(root, pkgs["driver"], *FULL).returncode == 0
    assert run_package(root, pkgs["refusing_fw"], "--nox11", "--full", "--quiet").returncode == 0
    res = info(root)
    comp = res["compatibility"]
    assert comp["driver_accepts_firmware"] is True and comp["firmware_accepts_driver"] is False
    assert comp["ok"] is False and "accepts drivers [24.1,24.1.]" in comp["problems"][0]
    assert res["active"]["compatibility"] == "NOK"


def test_unhealthy_chips_and_processes(pkgs: dict[str, Path], tmp_path: Path) -> None:
    root = tmp_path / "r"
    host(root, HW_A3)
    assert run_package(root, pkgs["a3"], *FULL).returncode == 0
    put(root, "/var/lib/ascend-sim/faults.json", {"npu_unhealthy": [3]})
    put(
        root,
        "/var/lib/ascend-sim/processes.json",
        {"5": [{"pid": 4242, "name": "VLLMWorker_TP", "memory_mb": 100}]},
    )
    res = info(root)
    assert len(res["npus"]) == 8 and len(res["chips"]) == 16  # two dies per A3 NPU
    assert res["health"]["ok"] is False
    assert [(c["npu_id"], c["chip_id"], c["logic_id"], c["health"]) for c in res["health"]["unhealthy"]] == [
        (1, 1, 3, "Alarm")
    ]
    assert res["processes"] == [
        {"npu_id": 2, "chip": 1, "pid": 4242, "name": "VLLMWorker_TP", "memory_mb": 100}
    ]


DOCKER = """#!/bin/sh
# `docker ps -q --no-trunc` / `docker inspect ID...` of an engine with two running containers
case "$1" in
  ps) echo 3f1c2a9d0b7e4c5d8e9f0a1b2c3d4e5f60718293a4b5c6d7e8f9012345678901
      echo 9a8b7c6d5e4f30211a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7081 ;;
  inspect) cat "$(dirname "$0")/inspect.json" ;;
esac
"""
INSPECT = [
    {
        "Id": "3f1c2a9d0b7e4c5d8e9f0a1b2c3d4e5f60718293a4b5c6d7e8f9012345678901",
        "Name": "/vllm-r1",
        "Config": {"Image": "vllm-ascend:v0.23.0-910b"},
        "HostConfig": {
            "Devices": [
                {"PathOnHost": "/dev/davinci0", "PathInContainer": "/dev/davinci0",
                 "CgroupPermissions": "rwm"},
                {"PathOnHost": "/dev/davinci_manager", "PathInContainer": "/dev/davinci_manager",
                 "CgroupPermissions": "rwm"},
            ]
        },
        "Mounts": [{"Type": "bind", "Source": "/usr/local/dcmi", "Destination": "/usr/local/dcmi"}],
    },
    {
        "Id": "9a8b7c6d5e4f30211a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7081",
        "Name": "/node-exporter",
        "Config": {"Image": "prom/node-exporter"},
        "HostConfig": {"Devices": []},
        "Mounts": [{"Type": "bind", "Source": "/proc", "Destination": "/host/proc"}],
    },
]  # fmt: skip


def test_containers_holding_npu_devices(tmp_path: Path) -> None:
    root = tmp_path / "r"
    host(root, HW_910B4)
    bindir = tmp_path / "dockerbin"
    put(bindir, "/docker", DOCKER)
    (bindir / "docker").chmod(0o755)
    put(bindir, "/inspect.json", json.dumps(INSPECT))
    res = run_module(root, "npu_info", {}, PATH=f"{bindir}:/usr/bin:/bin")
    assert res["containers"] == {
        "checked": True,
        "reason": "",
        "items": [
            {
                "id": "3f1c2a9d0b7e",
                "name": "vllm-r1",
                "image": "vllm-ascend:v0.23.0-910b",
                "devices": ["/dev/davinci0", "/dev/davinci_manager"],
            }
        ],
    }
    no_docker = run_module(root, "npu_info", {}, PATH=str(tmp_path / "empty"))
    assert no_docker["containers"]["checked"] is False


def test_check_mode_is_supported(tmp_path: Path) -> None:
    host(tmp_path / "r", HW_910B4)
    res = run_module(tmp_path / "r", "npu_info", {"containers": False}, check_mode=True)
    assert res["changed"] is False and "skipped" not in res


def test_holders_lists_the_processes_with_a_device_node_open(tmp_path: Path) -> None:
    """What the driver installer's checkUserProcess finds (every /proc/<pid>/fd): the process that holds a
    node under the root, with its command line; nothing else (a file beside the nodes is not one)."""
    root = host(tmp_path / "r", HW_910B4)
    for name in ("davinci0", "davinci_manager", "davinci.conf"):
        put(root, f"/dev/{name}", "")
    script = "import sys,time; fs=[open(a) for a in sys.argv[1:]]; print('held', flush=True); time.sleep(60)"
    holder = subprocess.Popen(
        ["python3", "-c", script, str(root / "dev/davinci0"), str(root / "dev/davinci_manager")],
        stdout=subprocess.PIPE,
        text=True,
    )
    bystander = subprocess.Popen(
        ["python3", "-c", script, str(root / "dev/davinci.conf")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert bystander.stdout is not None and bystander.stdout.readline().strip() == "held"
        res = run_module(root, "npu_info", {"containers": False, "boards": False, "holders": True})
        assert res.get("failed") is None, res.get("msg")
        assert res["holders"]["checked"] is True
        assert [(h["pid"], h["nodes"]) for h in res["holders"]["items"]] == [
            (holder.pid, ["/dev/davinci0", "/dev/davinci_manager"])
        ]
        assert "python3 -c import sys,time" in res["holders"]["items"][0]["cmdline"]
        assert info(root)["holders"] == {"checked": False, "reason": "not requested", "items": []}
    finally:
        for p in (holder, bystander):
            p.kill()
            p.wait()
