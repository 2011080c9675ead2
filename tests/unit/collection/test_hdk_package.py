"""ascend.npu.hdk_package against the simulator's fake .run packages under a temp ASCEND_SIM_ROOT."""

from __future__ import annotations

from pathlib import Path

import pytest

from ascend_sim.packages import build_package, sha256_of
from tests.unit.collection.module_runner import ran, run_module
from tests.unit.sim.ascend_fake_helpers import HW_910B4, host, put

DRV, OLD, FW = "25.5.1", "25.0.rc1.1", "7.8.0.6.201"


@pytest.fixture(scope="module")
def pkgs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("pkgs")
    return {
        "driver": build_package("driver", "910b", DRV, out),
        "old": build_package("driver", "910b", OLD, out),
        "firmware": build_package("firmware", "910b", FW, out),
        "fw_reboot": build_package("firmware", "910b", FW, out / "reboot", takes_effect="reboot"),
        "drv_reboot": build_package("driver", "910b", DRV, out / "reboot", takes_effect="reboot"),
    }


def fresh(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    host(root, dict(HW_910B4, firmware_version="7.7.0.1.231"))  # the factory firmware in flash
    return root


def pkg(p: Path, kind: str, version: str, **args: object) -> dict[str, object]:
    return {"path": str(p), "kind": kind, "version": version, "sha256": sha256_of(p), **args}


def test_fresh_driver_install_then_the_same_version_changes_nothing(
    pkgs: dict[str, Path], tmp_path: Path
) -> None:
    root = fresh(tmp_path)
    res = run_module(root, "hdk_package", pkg(pkgs["driver"], "driver", DRV))
    assert res.get("failed") is None, res.get("msg")
    assert res["changed"] and res["operation"] == "install" and res["check"] == "passed"
    assert res["args"] == [
        "--nox11",
        "--full",
        "--quiet",
        "--install-for-all",
    ]  # ascend-deployer's first install
    assert (res["previous_version"], res["installed_version"], res["active_version"]) == (None, DRV, DRV)
    assert res["installer_rc"] == 0 and not res["reboot_required"]
    assert res["stdout_lines"][-2].endswith("The new version takes effect immediately. ")
    log = (root / "var/log/ascend_seclog/operation.log").read_text(encoding="utf-8")
    again = run_module(root, "hdk_package", pkg(pkgs["driver"], "driver", DRV))
    assert not again["changed"] and again["operation"] == "none" and again["installer_rc"] is None
    assert (root / "var/log/ascend_seclog/operation.log").read_text(encoding="utf-8") == log  # nothing ran


def test_upgrade_over_an_older_driver(pkgs: dict[str, Path], tmp_path: Path) -> None:
    root = fresh(tmp_path)
    assert run_module(root, "hdk_package", pkg(pkgs["old"], "driver", OLD))["changed"]
    res = run_module(root, "hdk_package", pkg(pkgs["driver"], "driver", DRV))
    assert res["operation"] == "upgrade" and res["args"] == ["--nox11", "--upgrade", "--quiet"]
    assert (res["previous_version"], res["installed_version"]) == (OLD, DRV)
    down = run_module(root, "hdk_package", pkg(pkgs["old"], "driver", OLD), check_mode=True)
    assert down["changed"] and down["operation"] == "downgrade"


def test_check_mode_reports_without_executing(pkgs: dict[str, Path], tmp_path: Path) -> None:
    root = fresh(tmp_path)
    res = run_module(root, "hdk_package", pkg(pkgs["driver"], "driver", DRV), check_mode=True)
    assert res["changed"] and res["operation"] == "install" and res["check"] == "skipped"
    assert not ran(root) and not (root / "usr/local/Ascend/driver/version.info").exists()
    verified = run_module(
        root, "hdk_package", pkg(pkgs["driver"], "driver", DRV, state="verified"), check_mode=True
    )
    assert not verified["changed"] and not ran(root)
    # a host the package was never staged to (check mode skipped the copy): install would change it,
    # verifying would not
    missing = tmp_path / "not-staged" / pkgs["driver"].name
    args = pkg(pkgs["driver"], "driver", DRV)
    staged = run_module(root, "hdk_package", {**args, "path": str(missing)}, check_mode=True)
    assert staged["changed"] and staged["check"] == "not staged yet"
    verify = run_module(
        root, "hdk_package", {**args, "path": str(missing), "state": "verified"}, check_mode=True
    )
    assert not verify["changed"] and not ran(root)


def test_wrong_sha256_never_executes(pkgs: dict[str, Path], tmp_path: Path) -> None:
    """A package whose header would leave a mark if it ran: the module refuses it on the sha256 alone."""
    root = fresh(tmp_path)
    marker = tmp_path / "executed"
    lines = pkgs["driver"].read_bytes().split(b"\n", 1)
    evil = tmp_path / pkgs["driver"].name
    evil.write_bytes(lines[0] + f"\necho ran > {marker}\n".encode() + lines[1])
    for state in ("present", "verified"):
        res = run_module(
            root, "hdk_package", pkg(evil, "driver", DRV, sha256=sha256_of(pkgs["driver"]), state=state)
        )
        assert res["failed"] and res["refused"] and "refusing to run" in res["msg"] and "Fix:" in res["msg"]
        assert res["sha256"] == sha256_of(evil)
    assert not marker.exists() and not ran(root)
    # the same file with its own sha256 does run (the marker proves the test would have seen it)
    run_module(root, "hdk_package", pkg(evil, "driver", DRV, state="verified"))
    assert marker.read_text(encoding="utf-8") == "ran\n"


def test_corrupt_payload_fails_check_before_install(pkgs: dict[str, Path], tmp_path: Path) -> None:
    root = fresh(tmp_path)
    broken = tmp_path / pkgs["driver"].name
    data = bytearray(pkgs["driver"].read_bytes())
    data[-100] ^= 0xFF
    broken.write_bytes(bytes(data))
    res = run_module(root, "hdk_package", pkg(broken, "driver", DRV))
    assert (
        res["failed"] and "--check integrity test" in res["msg"] and "Error in SHA256 checksums" in res["msg"]
    )
    assert not (root / "usr/local/Ascend/driver/version.info").exists()


def test_firmware_needs_the_driver_and_asks_for_a_reboot(pkgs: dict[str, Path], tmp_path: Path) -> None:
    root = fresh(tmp_path)
    res = run_module(root, "hdk_package", pkg(pkgs["firmware"], "firmware", FW))
    assert res["failed"] and "install the driver first" in res["msg"] and not ran(root)
    drv = run_module(root, "hdk_package", pkg(pkgs["driver"], "driver", DRV), check_mode=True)
    assert drv["changed"] and not drv["reboot_expected"]  # the driver's installer decides at install time
    assert run_module(root, "hdk_package", pkg(pkgs["driver"], "driver", DRV))["changed"]
    # what check mode (orchestrator plan) says about the firmware is what its installer then says
    log = root / "var/log/ascend_seclog/ascend_install.log"
    logged = log.read_text()
    for package in ("firmware", "fw_reboot"):
        told = run_module(root, "hdk_package", pkg(pkgs[package], "firmware", FW), check_mode=True)
        assert told["changed"] and told["reboot_expected"] and "after a reboot" in told["reboot_reason"]
        assert not told["reboot_required"] and log.read_text() == logged  # no installer ran
    res = run_module(root, "hdk_package", pkg(pkgs["fw_reboot"], "firmware", FW))
    assert res["changed"] and res["operation"] == "install" and res["previous_version"] == "7.7.0.1.231"
    assert res["args"] == ["--nox11", "--full", "--quiet"]
    assert res["reboot_required"] and "Reboot now or after driver installation" in res["reboot_reason"]
    assert res["active_version"] == "7.7.0.1.231"  # the factory firmware runs until the reboot


def test_driver_needing_a_reboot_exits_2_and_says_so(pkgs: dict[str, Path], tmp_path: Path) -> None:
    root = fresh(tmp_path)
    assert run_module(root, "hdk_package", pkg(pkgs["old"], "driver", OLD))["changed"]
    res = run_module(root, "hdk_package", pkg(pkgs["drv_reboot"], "driver", DRV))
    assert res.get("failed") is None and res["installer_rc"] == 2 and res["reboot_required"]
    assert "Reboot needed for installation/upgrade to take effect!" in res["reboot_reason"]
    assert res["active_version"] == OLD


STALE_NPU_SMI = """#!/bin/sh
# npu-smi of a host whose new driver files are installed while the old driver still runs (no reboot yet)
case "$*" in
  "info -l") printf '\tTotal Count                    : 1\n\n\tNPU ID                         : 0\n' ;;
  "info -t board -i 0") printf '\t%-30s : %s\n' "Software Version" 25.0.rc1.1 \
      "Firmware Version" 7.7.0.1.231 ;;
  *) echo ;;
esac
"""


def test_installed_but_not_running_is_a_pending_reboot(pkgs: dict[str, Path], tmp_path: Path) -> None:
    """On hardware the installer replaces version.info at once while the old driver keeps running until the
    reboot (npu-smi reports the running one): the same version is "nothing to install, reboot pending"."""
    root = fresh(tmp_path)
    assert run_module(root, "hdk_package", pkg(pkgs["driver"], "driver", DRV))["changed"]
    for where in ("usr/local/sbin/npu-smi", "usr/local/bin/npu-smi"):
        put(root, where, STALE_NPU_SMI)
        (root / where).chmod(0o755)
    res = run_module(root, "hdk_package", pkg(pkgs["driver"], "driver", DRV))
    assert res["operation"] == "none" and not res["changed"] and res["installer_rc"] is None
    assert (
        res["reboot_required"]
        and res["reboot_reason"] == f"driver {DRV} is installed but 25.0.rc1.1 is running"
    )


def test_refusals_say_how_to_fix(pkgs: dict[str, Path], tmp_path: Path) -> None:
    root = fresh(tmp_path)
    assert run_module(root, "hdk_package", pkg(pkgs["old"], "driver", OLD))["changed"]
    busy = run_module(root, "hdk_package", pkg(pkgs["driver"], "driver", DRV), ASCEND_SIM_DEVICES_BUSY="1")
    assert busy["failed"] and busy["busy"] and "software.stop_serving" in busy["msg"]
    assert (root / "usr/local/Ascend/driver/version.info").read_text().startswith(f"Version={OLD}\n")
    bare = f"{root.parent / '.bin'}:/usr/bin:/bin"  # no /usr/sbin (ifconfig) and no lspci
    tools = run_module(
        root, "hdk_package", pkg(pkgs["driver"], "driver", DRV), ASCEND_SIM_CHECK_TOOLS="1", PATH=bare
    )
    assert tools["failed"] and tools["missing_tools"] == ["lspci", "ifconfig"]
    assert "install the packages net-tools, pciutils" in tools["msg"]
    nouser = tmp_path / "nouser"
    host(nouser, HW_910B4, users=False)
    res = run_module(nouser, "hdk_package", pkg(pkgs["driver"], "driver", DRV))
    assert res["failed"] and "HwHiAiUser not exists" in res["msg"] and "useradd -g HwHiAiUser" in res["msg"]


def test_a_pair_that_refuses_each_other_is_refused_before_install(tmp_path: Path) -> None:
    """partner_version: the package's own version.info must accept the other half of the pair (a driver's
    compatible_version_fw, a firmware's compatible_version_drv), read from the extracted archive before any
    installer runs."""
    out = tmp_path / "pair"
    narrow_fw = build_package("firmware", "910b", FW, out / "fw", compatible="[26.0.0,26.9.9]")
    narrow_drv = build_package("driver", "910b", DRV, out / "drv", compatible="[7.0.0,7.2.99]")
    root = fresh(tmp_path)
    res = run_module(root, "hdk_package", pkg(narrow_drv, "driver", DRV, partner_version=FW))
    assert res["failed"] and res["refused"] and res["installer_rc"] is None
    assert res["partner_check"] == {"key": "compatible_version_fw", "range": "[7.0.0,7.2.99]",
                                    "partner_version": FW, "accepts": False}  # fmt: skip
    assert "Nothing was installed" in str(res["msg"]) and "Fix:" in str(res["msg"])
    assert not (root / "usr/local/Ascend/driver/version.info").exists()  # the installer never ran
    ok = run_module(root, "hdk_package", pkg(build_package("driver", "910b", DRV, out / "ok"), "driver", DRV,
                                             partner_version=FW))  # fmt: skip
    assert ok.get("failed") is None and ok["partner_check"]["accepts"] is True, ok.get("msg")
    fw = run_module(
        root, "hdk_package", pkg(narrow_fw, "firmware", FW, partner_version=DRV, state="verified")
    )
    assert fw["failed"] and fw["partner_check"]["range"] == "[26.0.0,26.9.9]"
    assert "the firmware 7.8.0.6.201 accepts driver versions [26.0.0,26.9.9]" in str(fw["msg"])


def test_check_mode_on_a_fresh_host_reports_the_install_it_would_do(
    pkgs: dict[str, Path], tmp_path: Path
) -> None:
    """A dry run before the first apply: the package is not staged yet and the driver not installed; the
    firmware is reported as an install (not an error), and nothing runs."""
    root = fresh(tmp_path)
    missing = tmp_path / "cache" / pkgs["firmware"].name
    args = {"path": str(missing), "kind": "firmware", "version": FW, "sha256": sha256_of(pkgs["firmware"])}
    res = run_module(root, "hdk_package", args, check_mode=True)
    assert not res.get("failed"), res
    assert res["changed"] and res["operation"] == "install" and res["check"] == "not staged yet"
    assert not ran(root)
    staged = run_module(root, "hdk_package", pkg(pkgs["firmware"], "firmware", FW), check_mode=True)
    assert not staged.get("failed") and staged["changed"] and not ran(root)
    # outside check mode the missing driver still stops the firmware
    assert (
        "install the driver first"
        in run_module(root, "hdk_package", pkg(pkgs["firmware"], "firmware", FW))["msg"]
    )
