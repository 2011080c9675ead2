"""The fake hccn_tool (NPU NICs: live state vs /etc/hccn.conf, shared fabric), upgrade-tool and lspci."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.unit.sim.ascend_fake_helpers import (
    HW_310P,
    HW_910B4,
    HW_A3,
    driver_loaded,
    host,
    put,
    sample,
    tool,
)


def hccn(root: Path, *args: str) -> tuple[int, list[str]]:
    res = tool(root, "hccn_tool.py", *args)
    return res.returncode, res.stdout.splitlines()


def test_set_get_round_trip_and_hccn_conf_like_sample_5i(tmp_path: Path) -> None:
    driver_loaded(tmp_path, HW_910B4, "25.0.rc1.1")
    assert hccn(tmp_path, "-i", "0", "-ip", "-g") == (
        255,
        ["Get ipconf failed, because no ip was preset there!"],
    )
    for dev, ip in ((7, "29.1.170.143"), (0, "29.1.137.205")):  # out of order on purpose
        assert hccn(tmp_path, "-i", str(dev), "-gateway", "-s", "gateway", "29.1.0.1") == (0, [])
        assert hccn(tmp_path, "-i", str(dev), "-ip", "-s", "address", ip, "netmask", "255.255.0.0") == (0, [])
        assert hccn(tmp_path, "-i", str(dev), "-netdetect", "-s", "address", "29.1.0.1") == (0, [])
    conf = (tmp_path / "etc/hccn.conf").read_text(encoding="utf-8").splitlines()
    expected = [line for line in sample("hccn_conf.txt").splitlines()[1:] if line != "..."]
    assert conf == expected  # grouped per device, sample 5i key order
    assert hccn(tmp_path, "-i", "0", "-ip", "-g") == (0, ["ipaddr:29.1.137.205", "netmask:255.255.0.0"])  # 5a
    assert hccn(tmp_path, "-i", "0", "-netdetect", "-g") == (0, ["netdetect address: 29.1.0.1"])  # 5g
    assert hccn(tmp_path, "-i", "7", "-gateway", "-g") == (0, ["default gateway:29.1.0.1, Iface:eth7"])  # 5h
    assert hccn(tmp_path, "-i", "1", "-gateway", "-g") == (
        255,
        ["Get gateway failed, because no gateway was preset there!"],
    )
    assert hccn(tmp_path, "-i", "0", "-tls", "-s", "enable", "0") == (0, ["Cmd executed successfully!"])  # 5f
    assert "tls_enable_0=0" in (tmp_path / "etc/hccn.conf").read_text(encoding="utf-8").splitlines()
    rc, tls = hccn(tmp_path, "-i", "0", "-tls", "-g")
    assert rc == 0 and tls[0] == (
        "dev_id:0, tls switch[0](0:disable, 1:enable), tls preconfigured[1](0:non-preset, "
        "1:preset), tls alarm time threshold[60]days"
    )
    assert tls[1:3] == ["dev_id:0, [pub cert] info:", "\t issuer[/C=CN/ST=GD/O=HUAWEI/OU=2012/CN=2_1thCA]"]
    assert hccn(tmp_path, "-i", "9", "-ip", "-g")[0] == 255
    assert hccn(tmp_path, "-i", "0", "-ip", "-s", "address", "300.1.1.1", "netmask", "255.0.0.0")[0] == 255


def test_link_health_and_lldp(tmp_path: Path) -> None:
    driver_loaded(tmp_path, HW_910B4, "25.0.rc1.1")
    put(tmp_path, "/var/lib/ascend-sim/faults.json", {"link_down": [2]})
    assert hccn(tmp_path, "-i", "0", "-link", "-g") == (0, ["link status: UP"])  # 5b
    assert hccn(tmp_path, "-i", "2", "-link", "-g") == (0, ["link status: DOWN"])
    assert hccn(tmp_path, "-i", "0", "-net_health", "-g") == (0, ["net health status: Init"])  # 5c values
    hccn(tmp_path, "-i", "0", "-ip", "-s", "address", "10.0.0.10", "netmask", "255.255.255.0")
    hccn(tmp_path, "-i", "0", "-netdetect", "-s", "address", "10.0.0.1")
    assert hccn(tmp_path, "-i", "0", "-net_health", "-g") == (0, ["net health status: Success"])
    assert hccn(tmp_path, "-i", "2", "-net_health", "-g") == (0, ["net health status: Fault"])
    rc, lldp = hccn(tmp_path, "-i", "1", "-lldp", "-g")
    assert (
        rc == 0
        and lldp[0] == "Chassis ID TLV"
        and lldp[3] == "\tIfname: 400GE1/1/5:2"
        and lldp[-1] == ("End of LLDPDU TLV")
    )
    assert hccn(tmp_path, "-i", "2", "-lldp", "-g")[0] == 255
    mirror = json.loads((tmp_path / "var/lib/ascend-sim/fabric/node-1.json").read_text(encoding="utf-8"))
    assert mirror["0"] == {"address": "10.0.0.10", "netmask": "255.255.255.0", "gateway": "", "link": "UP"}
    assert mirror["2"]["link"] == "DOWN"


def _server(tmp_path: Path, name: str, base: int, fabric: Path, link_down: list[int]) -> Path:
    """A server whose 8 NICs are 10.0.0.<base+i>/24: NICs 1-7 from an /etc/hccn.conf written before the
    devices came up (the first hccn_tool call brings them up from the file), NIC 0 set with hccn_tool, all
    mirrored into the shared fabric."""
    root = tmp_path / name
    driver_loaded(root, dict(HW_910B4, server=name), "25.0.rc1.1")
    (root / "var/lib/ascend-sim/fabric").symlink_to(fabric)  # the cluster's shared bind mount
    put(root, "/var/lib/ascend-sim/faults.json", {"link_down": link_down})
    conf = "".join(f"address_{i}=10.0.0.{base + i}\nnetmask_{i}=255.255.255.0\n" for i in range(1, 8))
    put(root, "/etc/hccn.conf", conf)
    assert hccn(root, "-i", "0", "-ip", "-s", "address", f"10.0.0.{base}", "netmask", "255.255.255.0")[0] == 0
    return root


def test_ping_matrix_two_servers_one_link_down(tmp_path: Path) -> None:
    fabric = tmp_path / "fabric"
    fabric.mkdir()
    a = _server(tmp_path, "node-1", 10, fabric, [])
    b = _server(tmp_path, "node-2", 20, fabric, [3])
    assert sorted(p.name for p in fabric.glob("*.json")) == ["node-1.json", "node-2.json"]
    matrix = [(a, src, 20 + dst) for src in (0, 5) for dst in (0, 3, 7)]
    matrix += [(b, src, 10 + dst) for src in (0, 3) for dst in (0, 7)] + [(b, 1, 23), (a, 0, 99), (b, 4, 24)]
    for root, src, last in matrix:
        target = f"10.0.0.{last}"
        rc, lines = hccn(root, "-i", str(src), "-ping", "-g", "address", target)
        down = (root == b and src == 3) or last in (23, 99)  # node-2 NIC 3 is down; .99 is nobody
        assert rc == 0 and lines[0] == f"device {src} PING {target}"
        if down:
            assert lines[1:] == [
                "recv time out seq=0",
                "recv time out seq=1",
                "recv time out seq=2",
                "3 packets transmitted, 0 received, 100.00% packet loss",
            ], (root.name, src, target)
        else:
            assert all(re.fullmatch(r"recv seq=\d,time=\d+\.\d{6}ms", line) for line in lines[1:4]), lines
            assert lines[4] == "3 packets transmitted, 3 received, 0.00% packet loss", (
                root.name,
                src,
                target,
            )
    ok = sample("ping_ok.txt").splitlines()[1:]  # sample 5d: same shape
    assert [re.sub(r"[\d.]+ms", "T", x) for x in ok[1:]] == [
        re.sub(r"[\d.]+ms", "T", x) for x in hccn(a, "-i", "3", "-ping", "-g", "address", "10.0.0.20")[1][1:]
    ]
    # `pkt N` is the payload size in bytes, 0..65507 (MAX_DATA_LEN = 65535 - 20 - 8), not a count: the tool
    # still sends 3 packets (parse_data_len_param, src/custom/network/hccn/ascend910B/hccn_product_ext/
    # tool_cmd.c and ds_net_ext.h of github.com/verylucky01/driver at e29d066f).
    for size in ("5", "0", "9000", "65507"):
        rc, lines = hccn(a, "-i", "0", "-ping", "-g", "address", "10.0.0.21", "pkt", size)
        assert rc == 0 and lines[-1] == "3 packets transmitted, 3 received, 0.00% packet loss", (size, lines)
    for size in ("65508", "-1", "4k"):
        assert hccn(a, "-i", "0", "-ping", "-g", "address", "10.0.0.21", "pkt", size)[0] == 255, size


def test_ping_needs_same_subnet_or_gateway(tmp_path: Path) -> None:
    fabric = tmp_path / "fabric"
    fabric.mkdir()
    a = _server(tmp_path, "node-1", 10, fabric, [])
    b = _server(tmp_path, "node-2", 20, fabric, [])
    assert hccn(b, "-i", "4", "-ip", "-s", "address", "10.0.1.24", "netmask", "255.255.255.0")[0] == 0
    assert hccn(a, "-i", "4", "-ping", "-g", "address", "10.0.1.24")[1][-1].endswith("100.00% packet loss")
    assert hccn(a, "-i", "4", "-gateway", "-s", "gateway", "10.0.0.1")[0] == 0
    assert hccn(a, "-i", "4", "-ping", "-g", "address", "10.0.1.24")[1][-1].endswith(" 0.00% packet loss")


def test_upgrade_tool_versions_and_boot_status(tmp_path: Path) -> None:
    driver_loaded(tmp_path, HW_A3, "25.3.rc1")
    put(tmp_path, "/usr/local/Ascend/firmware/version.info", "Version=7.8.0.2.212\n")
    res = tool(tmp_path, "upgrade_tool.py", "--device_index", "-1", "--component", "-1", "--version")
    lines = res.stdout.splitlines()
    assert res.returncode == 0 and lines[0] == "{" and lines[-1] == "}" and len(lines) == 2 + 16 * 4 * 2
    assert lines[1:3] == [
        "Get component version(7.8.0.2.212) succeed for deviceId(0), componentType(0).",
        '\t{"device_id":0, "component":nve, "version":7.8.0.2.212}',
    ]  # 7a
    res = tool(tmp_path, "upgrade_tool.py", "--device_index", "-1", "--boot_status")
    status = [line for line in res.stdout.splitlines() if "boot status" in line]
    assert len(status) == 16 and all(line.endswith("boot status:16") for line in status)  # 7b
    host(tmp_path / "nodriver", HW_A3)
    assert (
        tool(tmp_path / "nodriver", "upgrade_tool.py", "--device_index", "-1", "--boot_status").returncode
        != 0
    )


def test_lspci_lists_the_npus_with_real_ids(tmp_path: Path) -> None:
    host(tmp_path, HW_910B4)  # no driver: the PCI devices are there anyway
    res = tool(tmp_path, "lspci.py", "-nn", "-d", "19e5:")
    lines = res.stdout.splitlines()
    assert res.returncode == 0 and len(lines) == 8
    assert lines[-2] == (
        "c1:00.0 Processing accelerators [1200]: Huawei Technologies Co., Ltd. Device [19e5:d802] (rev 20)"
    )
    assert [line.split()[0] for line in lines] == [
        "01:00.0",
        "02:00.0",
        "41:00.0",
        "42:00.0",
        "81:00.0",
        "82:00.0",
        "c1:00.0",
        "c2:00.0",
    ]
    plain = tool(tmp_path, "lspci.py").stdout.splitlines()
    assert plain[0] == "01:00.0 Processing accelerators: Huawei Technologies Co., Ltd. Device d802 (rev 20)"
    assert (
        tool(tmp_path, "lspci.py", "-n", "-d", "19e5:d802").stdout.splitlines()[0]
        == "01:00.0 1200: 19e5:d802 (rev 20)"
    )
    assert tool(tmp_path, "lspci.py", "-D", "-d", "19e5:").stdout.startswith(
        "0000:01:00.0 Processing accelerators:"
    )
    assert tool(tmp_path, "lspci.py", "-d", "19e5:d500").stdout == ""
    assert tool(tmp_path, "lspci.py", "-d", "10de:").stdout == ""
    for hw, count, dev in ((HW_A3, 16, "d803"), (HW_310P, 4, "d500")):
        root = tmp_path / hw["profile"]
        host(root, hw)
        lines = tool(root, "lspci.py", "-nn", "-d", "19e5:").stdout.splitlines()
        assert len(lines) == count and all(f"[19e5:{dev}] (rev 20)" in line for line in lines)
