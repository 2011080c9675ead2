#!/usr/bin/env python3
"""hccn_tool (simulated NPU RoCE NICs), installed as /usr/local/Ascend/driver/tools/hccn_tool.

  hccn_tool -i N -ip -s address A netmask M | -ip -g
  hccn_tool -i N -netdetect -s address A | -netdetect -g
  hccn_tool -i N -gateway -s gateway G | -gateway -g
  hccn_tool -i N -tls -s enable 0|1 | -tls -g
  hccn_tool -i N -mtu -s size S | -mtu -g
  hccn_tool -i N -link -g | -net_health -g | -lldp -g
  hccn_tool -i N -ping -g address X [pkt BYTES]
  hccn_tool -i N -cfg recovery | -a -cfg recovery

N of `-i N` is the device's physical id (the tool maps it to the logical id; tool_parse_dev in
src/custom/network/hccn/ascend910B/hccn_tool/cmd.c of github.com/verylucky01/driver@e29d066f); the
simulated servers have equal physical and logical ids.
State (hccn_state.py): every -s changes the LIVE NIC and records the setting in /etc/hccn.conf (address_N,
netmask_N, netdetect_N, gateway_N, send_arp_status_N, tls_enable_N, mtu_N, grouped per device as in sample
5i; the MTU record is `cfg_write_conf(phy_id, "mtu", ...)` in tool_mtu_cmd_execute, hccn_tool/tool_ops.c,
same repository); every -g reads the live NIC, so a hand edit of the file shows nowhere until the driver
applies the file again (at boot, or `-cfg recovery`, which restores the MTU too: tool_cfg_mtu_recovery).
The live addresses are mirrored into the cluster's shared fabric/<server>.json (simboot.sync_fabric) for the
other servers' pings. NIC N is up unless faults.json link_down lists N.
`pkt` is the payload size in bytes, 0 to 65507 (65535 - 20 - 8), default 4096, not a packet count
(parse_data_len_param and tool_get_ping_status in hccn_product_ext/tool_cmd.c, MAX_DATA_LEN in
hccn_product_ext/ds_net_ext.h, same repository); every ping sends 3 packets (sample 5d).
Ping succeeds when this NIC is up and has an address, and X is the address of an up NIC of any server of
the fabric (this one included) that is in this NIC's subnet or reachable through its gateway; otherwise
every packet times out. Either way the command ran, so it exits 0 (callers read the "packet loss" line).
Set commands other than -tls print nothing (no sample shows their output); -tls -s prints "Cmd executed
successfully!" (sample 5f). Error texts for an unset IP / gateway are the tool's own (5a, 5h); the others
(bad arguments, unset netdetect, no LLDP neighbour, no driver) are plausible stand-ins, rc 255. `-mtu -g`
prints "mtu:S" (no capture; guides match it with `mtu:[[:space:]]*[0-9]+`), `-mtu -s size S` is the form
those guides use; `-cfg recovery` prints nothing (no capture).
"""

from __future__ import annotations

import ipaddress
import os
import sys
from typing import TYPE_CHECKING

# Standalone script: find simstate.py beside the real file, in the installed driver, or in the server image.
_HERE, _ROOT = os.path.dirname(os.path.realpath(__file__)), os.environ.get("ASCEND_SIM_ROOT") or "/"
sys.path[:0] = [_HERE, f"{_ROOT}/usr/local/Ascend/driver/tools/ascend-sim", "/opt/ascend-sim/fakes"]
if TYPE_CHECKING:
    from ascend_fakes import hccn_state, simboot, simstate
else:
    import hccn_state
    import simboot
    import simstate

RC_ERR = 255
USAGE = (
    "Usage: hccn_tool -i <device_id> <-ip|-netdetect|-gateway|-link|-net_health|-lldp|-tls|-mtu|-ping>"
    " <-s|-g> [...] | -i <device_id>|-a -cfg recovery"
)
MTU_RANGE = (1280, 9000)
PING_COUNT = 3  # packets per ping (sample 5d); the tool has no option to change it
PING_PAYLOAD_MAX = 65535 - 20 - 8  # MAX_DATA_LEN (ds_net_ext.h, see the docstring)


class Fail(Exception):
    pass


def _ip(text: str, what: str) -> str:
    try:
        return str(ipaddress.IPv4Address(text))
    except ValueError:
        raise Fail(f"Invalid {what}: {text}") from None


def _pairs(args: list[str]) -> dict[str, str]:
    if len(args) % 2:
        raise Fail(f"Invalid parameter: {args[-1]}")
    return {args[i]: args[i + 1] for i in range(0, len(args), 2)}


def _net(address: str, netmask: str) -> ipaddress.IPv4Network:
    return ipaddress.IPv4Network(f"{address}/{netmask}", strict=False)


def ping(hw: simstate.Hardware, dev: int, conf: dict[str, str], target: str, count: int) -> list[str]:
    """Sample 5d: 'device N PING X', 'recv seq=i,time=T' or 'recv time out seq=i', then the summary."""
    ok = False
    own, mask = conf.get("address", ""), conf.get("netmask", "")
    if simstate.link_up(dev) and own and mask:
        for nics in simboot.fabric().values():
            for nic in nics.values():
                if nic.get("address") == target and nic.get("link") == "UP":
                    same_subnet = ipaddress.IPv4Address(target) in _net(own, mask)
                    ok = ok or same_subnet or bool(conf.get("gateway"))
    out = [f"device {dev} PING {target}"]
    for seq in range(count):
        if ok:
            jitter = simstate.seeded(hw, dev, f"{target}:{seq}") % 1000
            ms = (0.1 + jitter / 700) if seq == 0 else (0.03 + jitter / 25000)
            out.append(f"recv seq={seq},time={ms:.6f}ms")
        else:
            out.append(f"recv time out seq={seq}")
    got = count if ok else 0
    loss = 100.0 * (count - got) / count if count else 0.0
    return [*out, f"{count} packets transmitted, {got} received, {loss:.2f}% packet loss"]


def lldp(hw: simstate.Hardware, dev: int) -> list[str]:
    """Sample 5e layout (value lines start with a TAB); switch ports follow the 5e `grep Ifname` pattern."""
    mac = ":".join(f"{(simstate.seeded(hw, dev, 'mac') >> (4 * i)) & 0xFF:02x}" for i in range(6))
    return [
        "Chassis ID TLV",
        f"\tMAC: {mac}",
        "Port ID TLV",
        f"\tIfname: 400GE1/{dev // 2 + 1}/5:{dev % 2 + 1}",
        "System Description TLV",
        "\tVersatile Routing Platform Software",
        "VRP (R) software, Version 8.211 (DX511 V200R021C10SPC600)",
        "",
        "Huarong DX511",
        "",
        "System Capabilities TLV",
        "\tEnabled capabilities: Bridge, Router",
        "Management Address TLV",
        f"\tIPv4: 10.255.{dev}.1",
        "Maximum Frame Size TLV",
        "\t9216",
        "End of LLDPDU TLV",
    ]


def tls_info(dev: int, enabled: str) -> list[str]:
    """Sample 5f (switch line of the A2 `grep switch` capture, certificate blocks of the full capture)."""
    out = [
        f"dev_id:{dev}, tls switch[{enabled}](0:disable, 1:enable), tls preconfigured[1](0:non-preset, "
        "1:preset), tls alarm time threshold[60]days"
    ]
    certs = (
        ("pub cert", "/C=CN/ST=GD/O=HUAWEI/OU=2012/CN=2_1thCA", "03:19:21"),
        ("ca1 cert", "/C=CN/ST=GD/L=SZ/O=HUAWEI/CN=1thCA", "03:19:07"),
        ("ca2 cert", "/C=CN/ST=GD/L=SZ/O=HUAWEI/CN=1thCA", "03:19:10"),
    )
    for name, issuer, at in certs:
        out += [
            f"dev_id:{dev}, [{name}] info:",
            f"\t issuer[{issuer}]",
            f"\t start_time[Wed Feb 19 {at} 2020 GMT]",
            f"\t end_time[Sat Feb 16 {at} 2030 GMT]",
        ]
    return out


def _mask(text: str) -> str:
    mask = _ip(text, "netmask")
    try:
        ipaddress.IPv4Network(f"0.0.0.0/{mask}")
    except ValueError:
        raise Fail(f"Invalid netmask: {text}") from None
    return mask


def _set(hw: simstate.Hardware, dev: int, cmd: str, args: dict[str, str]) -> list[str]:
    """-s: the live NIC takes the setting, /etc/hccn.conf records it (hccn_state.set_live)."""
    if cmd == "-ip" and set(args) == {"address", "netmask"}:
        values = {"address": _ip(args["address"], "address"), "netmask": _mask(args["netmask"])}
    elif cmd == "-netdetect" and set(args) == {"address"}:
        values = {"netdetect": _ip(args["address"], "address")}
    elif cmd == "-gateway" and set(args) == {"gateway"}:
        values = {"gateway": _ip(args["gateway"], "gateway"), "send_arp_status": "1"}
    elif cmd == "-tls" and set(args) == {"enable"} and args["enable"] in ("0", "1"):
        values = {"tls_enable": args["enable"]}
    elif cmd == "-mtu" and set(args) == {"size"}:
        size = args["size"]
        if not size.isdigit() or not MTU_RANGE[0] <= int(size) <= MTU_RANGE[1]:
            raise Fail(f"Invalid mtu size: {size}, the valid range is [{MTU_RANGE[0]}, {MTU_RANGE[1]}].")
        values = {"mtu": str(int(size))}
    else:
        raise Fail(USAGE)
    hccn_state.set_live(hw, dev, values)
    simboot.sync_fabric(hw)
    return ["Cmd executed successfully!"] if cmd == "-tls" else []


def _get(hw: simstate.Hardware, dev: int, cmd: str, args: dict[str, str]) -> list[str]:
    """-g: the live NIC (never /etc/hccn.conf)."""
    live = hccn_state.get(hw, dev)
    if cmd == "-ip" and not args:
        if not live.get("address"):
            raise Fail("Get ipconf failed, because no ip was preset there!")  # sample 5a
        return [f"ipaddr:{live['address']}", f"netmask:{live.get('netmask', '')}"]
    if cmd == "-netdetect" and not args:
        if not live.get("netdetect"):
            raise Fail("Get netdetect address failed, because no netdetect address was preset there!")
        return [f"netdetect address: {live['netdetect']}"]  # sample 5g
    if cmd == "-gateway" and not args:
        if not live.get("gateway"):
            raise Fail("Get gateway failed, because no gateway was preset there!")  # sample 5h
        return [f"default gateway:{live['gateway']}, Iface:eth{dev}"]  # sample 5h
    if cmd == "-link" and not args:
        return [f"link status: {'UP' if simstate.link_up(dev) else 'DOWN'}"]  # sample 5b
    if cmd == "-net_health" and not args:
        up = simstate.link_up(dev)
        status = "Fault" if not up else "Success" if live.get("address") and live.get("netdetect") else "Init"
        return [f"net health status: {status}"]  # sample 5c
    if cmd == "-lldp" and not args:
        if not simstate.link_up(dev):
            raise Fail("Get lldp info failed, no lldp neighbor was found!")
        return lldp(hw, dev)
    if cmd == "-tls" and not args:
        return tls_info(dev, live.get("tls_enable", hccn_state.FACTORY["tls_enable"]))
    if cmd == "-mtu" and not args:
        return [f"mtu:{live.get('mtu', hccn_state.FACTORY['mtu'])}"]
    if cmd == "-ping" and set(args) <= {"address", "pkt"} and "address" in args:
        size = args.get("pkt", "4096")
        if not size.isdigit():
            raise Fail(f"PING packet size must be unsigned int, now is {size}")
        if int(size) > PING_PAYLOAD_MAX:
            raise Fail(f"PING packet size can not more than {PING_PAYLOAD_MAX}, now is {int(size)}")
        return ping(hw, dev, live, _ip(args["address"], "address"), PING_COUNT)
    raise Fail(USAGE)


def run(hw: simstate.Hardware, argv: list[str]) -> list[str]:
    if hw.family == "310p" and argv[:1] in (["-i"], ["-a"]):
        raise Fail("This device does not support this command.")
    if argv == ["-a", "-cfg", "recovery"]:
        hccn_state.recover(hw, None)
        simboot.sync_fabric(hw)
        return []
    if len(argv) < 4 or argv[0] != "-i" or not argv[1].isdigit():
        raise Fail(USAGE)
    dev, cmd, mode, rest = int(argv[1]), argv[2], argv[3], argv[4:]
    if hw.device(dev) is None:
        raise Fail(f"Invalid device id {dev}, the valid range is [0, {hw.total - 1}].")
    if hw.family == "310p":
        raise Fail("This device does not support this command.")
    if cmd == "-cfg" and mode == "recovery" and not rest:
        hccn_state.recover(hw, dev)
        simboot.sync_fabric(hw)
        return []
    if mode not in ("-s", "-g"):
        raise Fail(USAGE)
    args = _pairs(rest)
    if mode == "-s":
        return _set(hw, dev, cmd, args)
    simboot.sync_fabric(hw)  # link faults written straight into faults.json show in the mirror too
    return _get(hw, dev, cmd, args)


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    hw = simstate.load_hardware()
    if hw is None or not simstate.driver_version():
        print("hccn_tool init failed: the NPU driver is not loaded.")
        return RC_ERR
    try:
        lines = run(hw, argv)
    except Fail as fail:
        print(fail)
        return RC_ERR
    if lines:
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
