"""ascend.npu.hccn against the simulator's fake hccn_tool (live NIC state + /etc/hccn.conf) under a temp
ASCEND_SIM_ROOT: set only what differs, check mode and diff tell the truth, drift of the file is reported
and repaired, a set that does not take fails."""

from __future__ import annotations

import json
from pathlib import Path

from tests.unit.collection.hccn_helpers import (
    MASK,
    booted,
    configured,
    devices,
    hccn_tool,
    live,
    run_module,
    snapshot,
)
from tests.unit.sim.ascend_fake_helpers import HW_910B4, driver_loaded, tool


def test_fresh_host_check_then_apply_then_nothing(tmp_path: Path) -> None:
    root = booted(tmp_path)
    args = {"devices": devices(), "tls": False}
    expected = []
    for i in range(8):
        expected += [
            f"hccn_tool -i {i} -ip -s address 10.0.0.{10 + i} netmask {MASK}",
            f"hccn_tool -i {i} -netdetect -s address 10.0.0.1",
            f"hccn_tool -i {i} -gateway -s gateway 10.0.0.1",
            f"hccn_tool -i {i} -tls -s enable 0",  # the NICs come with TLS on
        ]
    before = snapshot(root)
    check = run_module(root, "hccn", args, check=True)
    assert check["changed"] and check["commands"] == expected
    assert check["drift"] == [] and "warnings" not in check  # no record yet is not drift
    assert snapshot(root) == before  # check mode ran no set command
    done = run_module(root, "hccn", args)
    assert done["changed"] and done["commands"] == expected and done.get("failed") is None
    conf = (root / "etc/hccn.conf").read_text(encoding="utf-8").splitlines()
    assert conf[:6] == [  # sample 5i's layout, plus the TLS record
        "address_0=10.0.0.10",
        f"netmask_0={MASK}",
        "netdetect_0=10.0.0.1",
        "gateway_0=10.0.0.1",
        "send_arp_status_0=1",
        "tls_enable_0=0",
    ]
    assert len(conf) == 48
    assert live(root, 7, "-ip") == ["ipaddr:10.0.0.17", f"netmask:{MASK}"]
    assert live(root, 7, "-net_health") == ["net health status: Success"]
    settled = snapshot(root)
    again = run_module(root, "hccn", args)
    assert not again["changed"] and again["commands"] == [] and again["drift"] == []
    assert run_module(root, "hccn", args, check=True)["changed"] is False
    assert snapshot(root) == settled


def test_manual_address_change_is_reported_exactly_and_check_changes_nothing(tmp_path: Path) -> None:
    root = configured(tmp_path)
    tool(root, "hccn_tool.py", "-i", "3", "-ip", "-s", "address", "10.0.0.99", "netmask", MASK)
    before = snapshot(root)
    res = run_module(root, "hccn", {"devices": devices(), "tls": False}, check=True, diff=True)
    assert res["changed"] and res["commands"] == [f"hccn_tool -i 3 -ip -s address 10.0.0.13 netmask {MASK}"]
    assert [(d["index"], d["changes"]) for d in res["devices"]] == [(3, ["address"])]
    assert res["drift"] == []  # hccn_tool recorded its own change: file and live agree
    (diff,) = res["diff"]
    assert "  address: 10.0.0.99\n" in diff["before"] and "  address: 10.0.0.13\n" in diff["after"]
    assert "  address_3=10.0.0.99\n" in diff["before"] and "  address_3=10.0.0.13\n" in diff["after"]
    assert snapshot(root) == before
    fixed = run_module(root, "hccn", {"devices": devices(), "tls": False})
    assert fixed["changed"] and live(root, 3, "-ip") == ["ipaddr:10.0.0.13", f"netmask:{MASK}"]


def test_tampered_file_is_drift_and_is_rewritten_through_hccn_tool(tmp_path: Path) -> None:
    root = configured(tmp_path)
    conf = root / "etc/hccn.conf"
    conf.write_text(conf.read_text(encoding="utf-8").replace("address_3=10.0.0.13", "address_3=10.0.0.77"))
    before = snapshot(root)
    res = run_module(root, "hccn", {"devices": devices(), "tls": False}, check=True)
    assert res["changed"] and res["drift"] == [
        {"index": 3, "setting": "address", "live": "10.0.0.13", "file": "10.0.0.77"}
    ]
    assert res["commands"] == [f"hccn_tool -i 3 -ip -s address 10.0.0.13 netmask {MASK}"]
    assert "address_3=10.0.0.77 in the file" in json.dumps(res["warnings"])
    assert snapshot(root) == before
    run_module(root, "hccn", {"devices": devices(), "tls": False})
    assert "address_3=10.0.0.13\n" in conf.read_text(encoding="utf-8")
    assert not run_module(root, "hccn", {"devices": devices(), "tls": False})["changed"]


def test_after_a_boot_the_tampered_file_is_live_and_is_set_back(tmp_path: Path) -> None:
    root = configured(tmp_path)
    conf = root / "etc/hccn.conf"
    conf.write_text(conf.read_text(encoding="utf-8").replace("gateway_5=10.0.0.1", "gateway_5=10.0.0.2"))
    assert tool(root, "simboot.py", "on-boot").returncode == 0
    assert live(root, 5, "-gateway") == ["default gateway:10.0.0.2, Iface:eth5"]
    res = run_module(root, "hccn", {"devices": devices(), "tls": False})
    assert res["commands"] == ["hccn_tool -i 5 -gateway -s gateway 10.0.0.1"] and res["drift"] == []
    assert live(root, 5, "-gateway") == ["default gateway:10.0.0.1, Iface:eth5"]


def test_left_out_settings_are_not_touched_and_mtu_is_set(tmp_path: Path) -> None:
    root = configured(tmp_path)
    lean = [{"index": d["index"], "address": d["address"], "netmask": MASK} for d in devices()]
    res = run_module(root, "hccn", {"devices": lean, "mtu": 4200})
    assert res["commands"] == [f"hccn_tool -i {i} -mtu -s size 4200" for i in range(8)]
    assert live(root, 2, "-mtu") == ["mtu:4200"] and live(root, 2, "-tls")[0].startswith(
        "dev_id:2, tls switch[0]"
    )
    assert not run_module(root, "hccn", {"devices": lean, "mtu": 4200})["changed"]
    # hccn_tool records the MTU as mtu_N (tool_mtu_cmd_execute, src/custom/network/hccn/ascend910B/hccn_tool/
    # tool_ops.c of github.com/verylucky01/driver at e29d066f): a stale record is drift the next boot applies
    conf = root / "etc/hccn.conf"
    assert "mtu_2=4200" in conf.read_text(encoding="utf-8").splitlines()
    conf.write_text(conf.read_text(encoding="utf-8").replace("mtu_2=4200", "mtu_2=9000"))
    res = run_module(root, "hccn", {"devices": lean, "mtu": 4200})
    assert res["commands"] == ["hccn_tool -i 2 -mtu -s size 4200"], res
    assert "mtu_2=4200" in conf.read_text(encoding="utf-8").splitlines()


def test_a_setting_that_does_not_take_fails(tmp_path: Path) -> None:
    root = tmp_path / "root"
    driver_loaded(root, HW_910B4, "25.5.1")
    deaf = tmp_path / "deaf-hccn_tool"  # accepts every set command and does nothing
    real = hccn_tool(root)
    deaf.write_text(
        f'#!/bin/sh\ncase " $* " in *" -s "*) exit 0;; esac\nexec {real} "$@"\n', encoding="utf-8"
    )
    deaf.chmod(0o755)
    res = run_module(root, "hccn", {"devices": devices()[:1]}, tool=deaf)
    assert res["failed"] and "device 0: address is None after setting 10.0.0.10" in res["msg"]


def test_no_hccn_tool_says_install_the_driver(tmp_path: Path) -> None:
    root = tmp_path / "root"
    driver_loaded(root, HW_910B4, "25.5.1")
    res = run_module(root, "hccn", {"devices": devices()}, tool=tmp_path / "nowhere/hccn_tool")
    assert res["failed"] and "install the driver" in res["msg"]


def test_check_mode_before_the_driver_reports_every_setting_as_a_change(tmp_path: Path) -> None:
    """A dry run of the whole site on a fresh host: the drivers phase would install hccn_tool first."""
    root = tmp_path / "root"
    driver_loaded(root, HW_910B4, "25.5.1")
    res = run_module(root, "hccn", {"devices": devices()}, tool=tmp_path / "nowhere/hccn_tool", check=True)
    assert not res.get("failed") and res["changed"] and "would be set" in res["msg"], res
