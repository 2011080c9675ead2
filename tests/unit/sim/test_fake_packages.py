"""Simulated HDK `.run` packages: names, makeself behaviour, options and messages (ascend-samples.md 6)."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest

from ascend_sim.packages import build_package, package_name, sha256_of
from tests.unit.sim.ascend_fake_helpers import (
    HW_910B4,
    HW_A3,
    PYTHON,
    REPO,
    host,
    plain,
    put,
    run_package,
    sample,
    tool,
)

DRV, FW = "25.0.rc1.1", "7.7.0.1.231"
OCCUPIED = (
    "[ERROR]The davinci nodes are occupied by some processes, please stop processes and install or uninstall "
    "again, details in : /var/log/ascend_seclog/ascend_install.log "
)  # sample 6e
FULL = ("--nox11", "--full", "--quiet", "--install-for-all")  # ascend-deployer's first install


@pytest.fixture(scope="module")
def pkgs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("packages")
    return {
        "driver": build_package("driver", "910b", DRV, out),
        "old": build_package("driver", "910b", "24.1.0", out),
        "firmware": build_package("firmware", "910b", FW, out),
        "reboot": build_package("driver", "910b", "25.2.0", out / "reboot", takes_effect="reboot"),
        "fail": build_package("driver", "910b", "25.3.rc1", out / "fail", fail=True),
        "fwreboot": build_package("firmware", "910b", "7.7.0.6.236", out / "reboot", takes_effect="reboot"),
        "a3": build_package("driver", "910_93", "25.0.rc1.3", out),
        "a3fw": build_package("firmware", "910_93", "7.7.0.3.228", out),
        "310p": build_package("driver", "310p", "25.3.rc1", out),
    }


def npu_smi(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The npu-smi the driver package installed, run as the server would run it."""
    env = {"ASCEND_SIM_ROOT": str(root), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [PYTHON, "-S", str(root / "usr/local/bin/npu-smi"), *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def test_names_are_the_real_ones_and_builds_are_reproducible(pkgs: dict[str, Path], tmp_path: Path) -> None:
    assert pkgs["driver"].name == "Ascend-hdk-910b-npu-driver_25.0.rc1.1_linux-aarch64.run"
    assert pkgs["firmware"].name == "Ascend-hdk-910b-npu-firmware_7.7.0.1.231.run"
    assert pkgs["a3"].name == "Atlas-A3-hdk-npu-driver_25.0.rc1.3_linux-aarch64.run"
    assert pkgs["a3fw"].name == "Atlas-A3-hdk-npu-firmware_7.7.0.3.228.run"
    assert pkgs["310p"].name == "Ascend-hdk-310p-npu-driver_25.3.rc1_linux-aarch64.run"
    assert package_name("firmware", "310p", "7.8.0.2.212") == "Ascend-hdk-310p-npu-firmware_7.8.0.2.212.run"
    assert package_name("driver", "910b", "24.1.rc3", arch="x86_64").endswith("_linux-x86_64.run")
    again = build_package("driver", "910b", DRV, tmp_path)
    assert sha256_of(again) == sha256_of(pkgs["driver"]) == hashlib.sha256(again.read_bytes()).hexdigest()
    assert pkgs["driver"].read_bytes().startswith(b"#!/bin/sh\n") and b"\n__ARCHIVE__\n" in again.read_bytes()
    with pytest.raises(ValueError, match="invalid package version"):
        build_package("driver", "910b", "25.0 rc1", tmp_path)


def test_check_matches_sample_6a(pkgs: dict[str, Path], tmp_path: Path) -> None:
    host(tmp_path, HW_910B4)
    res = run_package(tmp_path, pkgs["driver"], "--check", HOME="/root")
    assert res.returncode == 0 and plain(res.stdout) == plain(sample("check_driver.txt"))


def test_corrupted_package_fails_the_integrity_check(pkgs: dict[str, Path], tmp_path: Path) -> None:
    broken = tmp_path / pkgs["driver"].name
    data = bytearray(pkgs["driver"].read_bytes())
    data[-100] ^= 0xFF
    broken.write_bytes(bytes(data))
    res = run_package(tmp_path, broken, "--check")
    assert res.returncode == 2 and "Verifying archive integrity...Error in SHA256 checksums:" in res.stderr


def test_help_unknown_option_and_argument_rules(pkgs: dict[str, Path], tmp_path: Path) -> None:
    host(tmp_path, HW_910B4)
    res = run_package(tmp_path, pkgs["driver"], "--help")
    assert res.returncode == 0 and res.stdout.splitlines()[0] == f"Usage: ./{pkgs['driver'].name} [options]"
    assert "  --install-username=<username>     Install to specific username" in res.stdout.splitlines()
    res = run_package(tmp_path, pkgs["driver"], "--full", "--bogus")
    lines = plain(res.stdout)
    assert res.returncode == 1 and lines[-2:] == [
        "[Driver] [<ts>] [ERROR]ERR_NO:0x0004;ERR_DES: Unrecognized parameters: --bogus. "
        "Try './xxx.run --help' "
        "for more information.",
        "[Driver] [<ts>] [INFO]End time: <ts>",
    ]
    for args, message in (
        (("--full", "--upgrade"), "The parameter needs to be used with full/debug/run/docker/upgrade/devel."),
        (("--upgrade", "--install-for-all"), "install-for-all param need used with full/debug/run/devel."),
        (("--check", "--quiet"), "version/check can't use with other parameters."),
        (("--full", "--install-username=root"), "Username and usergroup are not specified at the same time."),
    ):
        res = run_package(tmp_path, pkgs["driver"], *args)
        assert res.returncode == 1 and any(line.endswith(message) for line in plain(res.stdout)), res.stdout
    res = run_package(tmp_path, pkgs["driver"])
    assert res.returncode == 1 and plain(res.stdout)[-1].endswith(
        "Unrecognized parameters. Try './xxx.run --help' for more information."
    )
    res = run_package(tmp_path, pkgs["310p"], *FULL)
    assert res.returncode == 1 and plain(res.stdout)[-1].endswith(
        "[ERROR]The current installation package and environment is not match, please check."
    )


def test_driver_install_matches_sample_6b_and_creates_the_driver(
    pkgs: dict[str, Path], tmp_path: Path
) -> None:
    host(tmp_path, HW_910B4)
    args = ("--full", "--install-username=root", "--install-usergroup=root", "--install-for-all")
    res = run_package(tmp_path, pkgs["driver"], *args)
    assert res.returncode == 0, res.stdout + res.stderr
    assert plain(res.stdout) == plain(sample("install_driver.txt"))
    assert "\x1b[32mDriver package installed successfully!" in res.stdout  # drvColorEcho
    info = (tmp_path / "usr/local/Ascend/driver/version.info").read_text(encoding="utf-8")
    assert [line.split("=")[0] for line in info.splitlines()] == [
        "Version",
        "ascendhal_version",
        "Innerversion",
        "compatible_version_fw",
        "package_version",
    ]
    assert (
        "Version=25.0.rc1.1\n" in info and "compatible_version_fw=[7.0.0,7.7.99]" in info
    )  # the real 25.0.rc1.1 version.info (tests/fixtures/ascend/version_info)
    assert (tmp_path / "etc/ascend_install.info").read_text(encoding="utf-8").splitlines() == [
        "UserName=root",
        "UserGroup=root",
        "Driver_Install_Type=full",
        "Driver_Install_Path_Param=/usr/local/Ascend",
        "Driver_Install_For_All=yes",
        "Driver_Install_Mode=normal",
        "Driver_Install_Status=complete",
    ]
    for path in (
        "usr/local/Ascend/driver/lib64/libascend_hal.so",
        "usr/local/Ascend/driver/tools/hccn_tool",
        "usr/local/Ascend/driver/tools/upgrade-tool",
        "usr/local/sbin/npu-smi",
        "usr/local/dcmi/libdcmi.so",
        "var/log/ascend_seclog/ascend_install.log",
        "etc/hccn.conf",
        *[f"dev/davinci{i}" for i in range(8)],
        "dev/davinci_manager",
        "dev/devmm_svm",
        "dev/hisi_hdc",
    ):
        assert (tmp_path / path).exists(), path
    assert "created as regular placeholder files" in res.stderr  # no mknod under a test root
    table = npu_smi(tmp_path, "info")
    assert table.returncode == 0 and "| npu-smi 25.0.rc1.1               Version: 25.0.rc1.1" in table.stdout


def test_missing_run_user_fails_like_env_check(pkgs: dict[str, Path], tmp_path: Path) -> None:
    host(tmp_path, HW_910B4, users=False)
    res = run_package(tmp_path, pkgs["driver"], *FULL)
    lines = plain(res.stdout)
    assert res.returncode == 1 and lines[-2:] == [
        "[Driver] [<ts>] [ERROR]ERR_NO:0x0091;ERR_DES:HwHiAiUser not exists! Please add HwHiAiUser",
        "[Driver] [<ts>] [INFO]End time: <ts>",
    ]
    assert not (tmp_path / "usr/local/Ascend/driver").exists()
    put(tmp_path, "/etc/passwd", "HwHiAiUser:x:1000:1000::/home/HwHiAiUser:/bin/bash\n")
    res = run_package(tmp_path, pkgs["driver"], *FULL)
    assert res.returncode == 1 and plain(res.stdout)[-2].endswith(
        "ERR_NO:0x0091;ERR_DES:HwHiAiUser group not exists! Please add HwHiAiUser group"
    )


def test_busy_devices_block_upgrade_and_uninstall(pkgs: dict[str, Path], tmp_path: Path) -> None:
    host(tmp_path, HW_910B4)
    assert run_package(tmp_path, pkgs["old"], *FULL).returncode == 0
    put(
        tmp_path,
        "/var/lib/ascend-sim/processes.json",
        {"3": [{"pid": 42, "name": "python3", "memory_mb": 9}]},
    )
    for args in (("--nox11", "--upgrade", "--quiet"), ("--uninstall",), FULL):
        res = run_package(tmp_path, pkgs["driver"], *args)
        lines = plain(res.stdout)
        assert res.returncode == 1 and OCCUPIED in [line.split("] ", 2)[2] for line in lines if "] [" in line]
        assert lines[-2].endswith(
            "[INFO]If you want to install or uninstall the driver forcibly, add the force "
            "parameter. For details, see [--help]."
        )
    log = (tmp_path / "var/log/ascend_seclog/ascend_install.log").read_text(encoding="utf-8")
    assert "[WARNING]/dev/davinci3 has used by process 42" in log
    assert (
        "[ERROR]The davinci nodes are occupied by some processes, please stop processes and install or "
        "uninstall again."
    ) in log
    put(tmp_path, "/var/lib/ascend-sim/processes.json", {})
    dcmi_table = put(tmp_path, "/usr/local/dcmi/ascend-sim-processes.json", {"0": [{"pid": 1, "name": "x"}]})
    assert run_package(tmp_path, pkgs["driver"], "--upgrade", "--quiet").returncode == 1  # fake vLLM's table
    dcmi_table.unlink()
    res = run_package(tmp_path, pkgs["driver"], "--upgrade", "--quiet", ASCEND_SIM_DEVICES_BUSY="1")
    assert res.returncode == 1 and "/dev/davinci_manager has used by docker" in (
        tmp_path / "var/log/ascend_seclog/ascend_install.log"
    ).read_text(encoding="utf-8")
    res = run_package(tmp_path, pkgs["driver"], "--nox11", "--upgrade", "--quiet")
    lines = plain(res.stdout)
    assert res.returncode == 0 and "[Driver] [<ts>] [INFO]base version is 24.1.0." in lines
    assert lines[-2] == (
        "[Driver] [<ts>] [INFO]Driver package upgraded successfully! The new version takes effect "
        "immediately. "
    )


def test_firmware_needs_the_driver_then_matches_sample_6c(pkgs: dict[str, Path], tmp_path: Path) -> None:
    host(tmp_path, HW_910B4)
    res = run_package(tmp_path, pkgs["firmware"], "--nox11", "--full", "--quiet")
    assert res.returncode == 1 and "Please install the driver package first." in plain(res.stdout)[-2]
    assert not (tmp_path / "usr/local/Ascend/firmware/version.info").exists()
    assert run_package(tmp_path, pkgs["driver"], *FULL).returncode == 0
    res = run_package(tmp_path, pkgs["firmware"], "--full")
    expected = [
        x
        for i, x in enumerate(plain(sample("install_firmware.txt")))
        if i == 0 or x != plain(sample("install_firmware.txt"))[i - 1]
    ]  # 6c waits at 90% three times
    assert res.returncode == 0 and plain(res.stdout) == expected
    # the real 7.7.0.1.231 firmware's version.info (tests/fixtures/ascend/version_info, [vi-5])
    real = (REPO / "tests/fixtures/ascend/version_info/firmware_7.7.0.1.231_b.info").read_text("utf-8")
    assert (tmp_path / "usr/local/Ascend/firmware/version.info").read_text(encoding="utf-8") == real
    board = npu_smi(tmp_path, "info", "-t", "board", "-i", "0").stdout.splitlines()
    assert (
        "\tFirmware Version               : 7.7.0.1.231" in board
        and "\tCompatibility                  : OK" in board
    )
    assert "Firmware_Install_Type=full" in (tmp_path / "etc/ascend_install.info").read_text(encoding="utf-8")


def test_reboot_needed_goes_to_pending_json(pkgs: dict[str, Path], tmp_path: Path) -> None:
    host(tmp_path, HW_910B4)
    res = run_package(tmp_path, pkgs["reboot"], *FULL)
    assert res.returncode == 2  # install.sh: "2-installation successful but hotreset failed"
    assert plain(res.stdout)[-2] == (
        "[Driver] [<ts>] [INFO]Driver package installed successfully! Reboot needed for "
        "installation/upgrade to take effect! "
    )
    assert not (tmp_path / "usr/local/Ascend/driver/version.info").exists()
    pending = json.loads((tmp_path / "var/lib/ascend-sim/pending.json").read_text(encoding="utf-8"))
    assert pending["driver"]["version"] == "25.2.0" and pending["driver"]["package"] == pkgs["reboot"].name
    assert pending["driver"]["files"]["/usr/local/Ascend/driver/version.info"].startswith("Version=25.2.0\n")
    assert npu_smi(tmp_path, "info").stdout == "dcmi module initialize failed. ret is -8005\n"
    boot = tool(tmp_path, "simboot.py", "apply-pending")  # what ascend-sim-init does at the simulated reboot
    assert boot.returncode == 0 and boot.stdout.strip() == "driver"
    assert not (tmp_path / "var/lib/ascend-sim/pending.json").exists()
    assert (tmp_path / "dev/davinci7").exists() and npu_smi(tmp_path, "info").returncode == 0


def test_pending_firmware_is_active_after_the_next_driver_install(
    pkgs: dict[str, Path], tmp_path: Path
) -> None:
    """Sample 6c: "Reboot now or after driver installation for the installation/upgrade to take effect."""
    host(tmp_path, dict(HW_910B4, firmware_version="7.5.0.1.129"))
    assert run_package(tmp_path, pkgs["old"], *FULL).returncode == 0
    assert (
        "\tFirmware Version               : 7.5.0.1.129"
        in npu_smi(tmp_path, "info", "-t", "board", "-i", "0").stdout
    )
    assert run_package(tmp_path, pkgs["fwreboot"], "--nox11", "--upgrade", "--quiet").returncode == 0
    assert not (tmp_path / "usr/local/Ascend/firmware/version.info").exists()
    assert run_package(tmp_path, pkgs["driver"], "--nox11", "--upgrade", "--quiet").returncode == 0
    board = npu_smi(tmp_path, "info", "-t", "board", "-i", "0").stdout
    assert (
        "\tFirmware Version               : 7.7.0.6.236" in board
        and "Compatibility                  : OK" in board
    )
    assert not (tmp_path / "var/lib/ascend-sim/pending.json").exists()
    assert (
        "Firmware_Install_Path_Param=/usr/local/Ascend" in (tmp_path / "etc/ascend_install.info").read_text()
    )
    res = run_package(tmp_path, pkgs["firmware"], "--uninstall")
    assert res.returncode == 0 and not (tmp_path / "usr/local/Ascend/firmware/version.info").exists()


def test_uninstall_removes_what_install_created(pkgs: dict[str, Path], tmp_path: Path) -> None:
    host(tmp_path, HW_910B4)
    res = run_package(tmp_path, pkgs["driver"], "--uninstall")
    assert res.returncode == 1 and plain(res.stdout)[-2].endswith(
        "[ERROR]ERR_NO:0x0080;ERR_DES:Driver package is not installed on this device, uninstall failed"
    )
    assert run_package(tmp_path, pkgs["driver"], *FULL).returncode == 0
    res = run_package(tmp_path, pkgs["driver"], "--uninstall")
    assert res.returncode == 0 and plain(res.stdout)[-2] == (
        "[Driver] [<ts>] [INFO]Driver package uninstalled successfully! "
        "Uninstallation takes effect immediately. "
    )
    for path in (
        "usr/local/Ascend/driver",
        "usr/local/bin/npu-smi",
        "usr/local/sbin/npu-smi",
        "usr/local/dcmi",
        "dev/davinci0",
        "dev/davinci_manager",
        "etc/ascend_install.info",
    ):
        assert not (tmp_path / path).exists(), path


def test_dkms_failure(pkgs: dict[str, Path], tmp_path: Path) -> None:
    host(tmp_path, HW_910B4)
    for pkg, extra in ((pkgs["fail"], {}), (pkgs["driver"], {"driver_fails": True})):
        put(tmp_path, "/var/lib/ascend-sim/faults.json", extra)
        res = run_package(tmp_path, pkg, *FULL)
        lines = plain(res.stdout)
        assert res.returncode == 1 and lines[-3:-1] == [
            "[Driver] [<ts>] [ERROR]Driver_ko_install failed, details in : "
            "/var/log/ascend_seclog/ascend_install.log ",
            "[Driver] [<ts>] [INFO]Failed to install driver package, please retry after uninstall and "
            "reboot!",
        ]
        assert not (tmp_path / "usr/local/Ascend/driver/version.info").exists()


def test_overwrite_asks_unless_quiet(pkgs: dict[str, Path], tmp_path: Path) -> None:
    host(tmp_path, HW_910B4)
    assert run_package(tmp_path, pkgs["old"], *FULL).returncode == 0
    res = run_package(tmp_path, pkgs["driver"], "--full", stdin="n\n")
    assert res.returncode == 0 and plain(res.stdout)[-2].endswith("[INFO]installation Stoped!")
    assert (
        "the version is 24.1.0, and the version of this package is 25.0.rc1.1,do you want to continue?"
        in res.stdout
    )
    res = run_package(tmp_path, pkgs["driver"], "--full", stdin="y\n")
    assert res.returncode == 0 and "Version=25.0.rc1.1" in (
        tmp_path / "usr/local/Ascend/driver/version.info"
    ).read_text(encoding="utf-8")


def test_a3_driver_and_firmware(pkgs: dict[str, Path], tmp_path: Path) -> None:
    host(tmp_path, HW_A3)
    assert run_package(tmp_path, pkgs["a3"], *FULL).returncode == 0
    assert (tmp_path / "dev/davinci15").exists()
    res = run_package(tmp_path, pkgs["a3fw"], "--nox11", "--full", "--quiet")
    assert res.returncode == 0 and "[INFO]The firmware of [16] chips are successfully upgraded." in res.stdout
    res = run_package(tmp_path, pkgs["a3fw"], "--noexec", f"--extract={tmp_path / 'x'}")
    assert res.returncode == 0 and (tmp_path / "x/package.json").is_file()
    manifest = json.loads((tmp_path / "x/package.json").read_text(encoding="utf-8"))
    assert manifest["kind"] == "firmware" and manifest["chip_family"] == "910_93"
    assert re.search(
        r"Uncompressing ATLAS-A3-HDK-NPU FIRMWARE RUN PACKAGE  100%  \n",
        run_package(tmp_path, pkgs["a3fw"], "--check").stdout,
    )


def test_a_process_holding_a_device_node_blocks_the_upgrade(pkgs: dict[str, Path], tmp_path: Path) -> None:
    """checkUserProcess (verylucky01/driver common.sh) reads every /proc/<pid>/fd: a process with a device
    node open (the npu-exporter's DCMI handles) makes the installer refuse; once it exits, the upgrade
    runs."""
    host(tmp_path, HW_910B4)
    assert run_package(tmp_path, pkgs["old"], *FULL).returncode == 0
    node = tmp_path / "dev/davinci0"
    assert node.exists()
    script = "import sys,time; f=open(sys.argv[1]); print('held', flush=True); time.sleep(60)"
    holder = subprocess.Popen(
        ["python3", "-c", script, str(node)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        res = run_package(tmp_path, pkgs["driver"], "--nox11", "--upgrade", "--quiet")
        assert res.returncode == 1
        log = (tmp_path / "var/log/ascend_seclog/ascend_install.log").read_text(encoding="utf-8")
        assert f"[WARNING]proc:/dev/davinci0 has user process: {holder.pid}" in log
        assert OCCUPIED in [line.split("] ", 2)[2] for line in plain(res.stdout) if "] [" in line]
    finally:
        holder.kill()
        holder.wait()
    assert run_package(tmp_path, pkgs["driver"], "--nox11", "--upgrade", "--quiet").returncode == 0
