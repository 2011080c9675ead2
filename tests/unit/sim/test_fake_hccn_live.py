"""The fake hccn_tool's NIC model, as on hardware: -s changes the live NIC and records it in /etc/hccn.conf,
-g reads the live NIC, a hand edit of the file changes nothing until the driver applies the file (boot,
`-cfg recovery`, a new driver), reads change no file."""

from __future__ import annotations

import hashlib
from pathlib import Path

from tests.unit.sim.ascend_fake_helpers import HW_910B4, driver_loaded, put, tool

CONF = "etc/hccn.conf"


def hccn(root: Path, *args: str) -> tuple[int, list[str]]:
    res = tool(root, "hccn_tool.py", *args)
    return res.returncode, res.stdout.splitlines()


def ip(root: Path, dev: int) -> list[str]:
    return hccn(root, "-i", str(dev), "-ip", "-g")[1]


def boot(root: Path) -> None:
    """What ascend-sim-init runs at every simulated boot."""
    res = tool(root, "simboot.py", "on-boot")
    assert res.returncode == 0, res.stderr


def snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_hand_edit_changes_nothing_live_until_boot(tmp_path: Path) -> None:
    driver_loaded(tmp_path, HW_910B4, "25.5.1")
    assert hccn(tmp_path, "-i", "3", "-ip", "-s", "address", "10.0.0.13", "netmask", "255.255.255.0")[0] == 0
    conf = tmp_path / CONF
    assert conf.read_text(encoding="utf-8") == "address_3=10.0.0.13\nnetmask_3=255.255.255.0\n"
    conf.write_text("address_3=10.0.0.99\nnetmask_3=255.255.0.0\n", encoding="utf-8")  # by hand
    assert ip(tmp_path, 3) == ["ipaddr:10.0.0.13", "netmask:255.255.255.0"]  # live: as set
    boot(tmp_path)  # the driver applies the file at boot
    assert ip(tmp_path, 3) == ["ipaddr:10.0.0.99", "netmask:255.255.0.0"]


def test_set_records_in_the_file_and_keeps_other_lines(tmp_path: Path) -> None:
    driver_loaded(tmp_path, HW_910B4, "25.5.1")
    put(tmp_path, "/etc/hccn.conf", "address_1=10.0.0.11\nnetmask_1=255.255.255.0\n# site note\n")
    assert hccn(tmp_path, "-i", "1", "-netdetect", "-s", "address", "10.0.0.1")[0] == 0
    assert hccn(tmp_path, "-i", "1", "-gateway", "-s", "gateway", "10.0.0.1")[0] == 0
    assert hccn(tmp_path, "-i", "1", "-tls", "-s", "enable", "0") == (0, ["Cmd executed successfully!"])
    assert (tmp_path / CONF).read_text(encoding="utf-8").splitlines() == [
        "address_1=10.0.0.11",
        "netmask_1=255.255.255.0",
        "netdetect_1=10.0.0.1",
        "gateway_1=10.0.0.1",
        "send_arp_status_1=1",
        "tls_enable_1=0",
        "# site note",
    ]  # sample 5i key order, per device; lines the tool does not own kept
    assert hccn(tmp_path, "-i", "1", "-net_health", "-g") == (0, ["net health status: Success"])


def test_tls_and_mtu_factory_values_and_reboot(tmp_path: Path) -> None:
    driver_loaded(tmp_path, HW_910B4, "25.5.1")
    assert hccn(tmp_path, "-i", "0", "-tls", "-g")[1][0].startswith("dev_id:0, tls switch[1](0:disable")
    assert hccn(tmp_path, "-i", "0", "-mtu", "-g") == (0, ["mtu:1500"])
    assert hccn(tmp_path, "-i", "0", "-tls", "-s", "enable", "0")[0] == 0
    assert hccn(tmp_path, "-i", "0", "-mtu", "-s", "size", "4200") == (0, [])
    assert hccn(tmp_path, "-i", "0", "-mtu", "-g") == (0, ["mtu:4200"])
    assert hccn(tmp_path, "-i", "0", "-mtu", "-s", "size", "100")[0] == 255
    # tool_mtu_cmd_execute records the MTU with cfg_write_conf(phy_id, "mtu", size) and `-cfg recovery` /
    # boot applies it (tool_cfg_mtu_recovery): src/custom/network/hccn/ascend910B/hccn_tool/tool_ops.c of
    # github.com/verylucky01/driver at e29d066f
    assert "mtu_0=4200" in (tmp_path / CONF).read_text(encoding="utf-8").splitlines()
    boot(tmp_path)  # TLS and the MTU are both recorded in the file
    assert hccn(tmp_path, "-i", "0", "-tls", "-g")[1][0].startswith("dev_id:0, tls switch[0](0:disable")
    assert hccn(tmp_path, "-i", "0", "-mtu", "-g") == (0, ["mtu:4200"])
    assert hccn(tmp_path, "-i", "1", "-mtu", "-g") == (0, ["mtu:1500"])


def test_cfg_recovery_applies_the_file(tmp_path: Path) -> None:
    driver_loaded(tmp_path, HW_910B4, "25.5.1")
    for dev in (2, 5):
        hccn(tmp_path, "-i", str(dev), "-ip", "-s", "address", f"10.0.0.1{dev}", "netmask", "255.255.255.0")
    (tmp_path / CONF).write_text(
        "address_2=10.0.0.22\nnetmask_2=255.255.255.0\naddress_5=10.0.0.55\nnetmask_5=255.255.255.0\n",
        encoding="utf-8",
    )
    assert hccn(tmp_path, "-i", "2", "-cfg", "recovery") == (0, [])
    assert ip(tmp_path, 2) == ["ipaddr:10.0.0.22", "netmask:255.255.255.0"]
    assert ip(tmp_path, 5) == ["ipaddr:10.0.0.15", "netmask:255.255.255.0"]  # only device 2
    assert hccn(tmp_path, "-a", "-cfg", "recovery") == (0, [])
    assert ip(tmp_path, 5) == ["ipaddr:10.0.0.55", "netmask:255.255.255.0"]


def test_a_new_driver_brings_the_nics_up_from_the_file(tmp_path: Path) -> None:
    driver_loaded(tmp_path, HW_910B4, "25.5.1")
    hccn(tmp_path, "-i", "4", "-ip", "-s", "address", "10.0.0.14", "netmask", "255.255.255.0")
    (tmp_path / CONF).write_text("address_4=10.0.0.44\nnetmask_4=255.255.255.0\n", encoding="utf-8")
    assert ip(tmp_path, 4) == ["ipaddr:10.0.0.14", "netmask:255.255.255.0"]
    put(tmp_path, "/usr/local/Ascend/driver/version.info", "Version=25.5.2\n")  # a hot-reset upgrade
    assert ip(tmp_path, 4) == ["ipaddr:10.0.0.44", "netmask:255.255.255.0"]


def test_reads_change_no_file(tmp_path: Path) -> None:
    driver_loaded(tmp_path, HW_910B4, "25.5.1")
    (tmp_path / "var/lib/ascend-sim/fabric").mkdir(parents=True)
    hccn(tmp_path, "-i", "0", "-ip", "-s", "address", "10.0.0.10", "netmask", "255.255.255.0")
    hccn(tmp_path, "-i", "0", "-netdetect", "-s", "address", "10.0.0.1")
    before = snapshot(tmp_path)
    for cmd in ("-ip", "-netdetect", "-gateway", "-tls", "-mtu", "-link", "-net_health", "-lldp"):
        for dev in (0, 1):
            hccn(tmp_path, "-i", str(dev), cmd, "-g")
    hccn(tmp_path, "-i", "0", "-ping", "-g", "address", "10.0.0.10")
    assert snapshot(tmp_path) == before


def test_no_driver_no_nics_after_boot(tmp_path: Path) -> None:
    driver_loaded(tmp_path, HW_910B4, "25.5.1")
    hccn(tmp_path, "-i", "0", "-ip", "-s", "address", "10.0.0.10", "netmask", "255.255.255.0")
    assert (tmp_path / "var/lib/ascend-sim/hccn_live.json").is_file()
    (tmp_path / "usr/local/Ascend/driver/version.info").unlink()  # uninstalled
    boot(tmp_path)
    assert not (tmp_path / "var/lib/ascend-sim/hccn_live.json").exists()
    assert hccn(tmp_path, "-i", "0", "-ip", "-g") == (
        255,
        ["hccn_tool init failed: the NPU driver is not loaded."],
    )
