# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""hccn_tool (NPU RoCE NICs) for the ascend.npu modules: the commands, their output parsers, /etc/hccn.conf
(standard library only).

Formats from public hccn_tool captures (Ascend/mind-cluster component/ascend-faultdiag test fixtures; the
ArthurChiao blog post "gpu-advanced-notes-2" section 3.2; public DeepSeek-V3 multi-node deployment notes)
and the tool's source (github.com/verylucky01/driver src/custom/network/hccn):
  -ip -g               "ipaddr:10.10.0.10" / "netmask:255.255.255.0"; unset: "Get ipconf failed, because no
                       ip was preset there!"
  -netdetect -g        "netdetect address: 11.12.165.1"
  -gateway -g          "default gateway:11.12.165.1, Iface:eth0"; unset: "Get gateway failed, because no
                       gateway was preset there!"
  -tls -g              "dev_id:0, tls switch[0](0:disable, 1:enable), ..." (the switch is the first [n])
  -link -g             "link status: UP" | "link status: DOWN"
  -net_health -g       "net health status: Success" (others: Init, Fault, Socket failed, ...)
  -ping -g             "device 3 PING X", per packet lines, then "3 packets transmitted, 3 received, 0.00%
                       packet loss"; the command exits 0 whether or not packets came back
  -mtu -g              no capture: guides match "mtu:[[:space:]]*[0-9]+"; -s form `-mtu -s size N`
  /etc/hccn.conf       key_N=value lines: address_N, netmask_N, netdetect_N, gateway_N, send_arp_status_N,
                       tls_enable_N, and mtu_N (tool_mtu_cmd_execute writes it with cfg_write_conf)
Set commands: `-ip -s address A netmask M`, `-netdetect -s address A`, `-gateway -s gateway G`,
`-tls -s enable 0|1`, `-mtu -s size N`; each changes the live NIC and records the setting in /etc/hccn.conf.
N of `-i N` is the device's PHYSICAL id, and the file's _N suffix is that id too (tool_parse_dev in
src/custom/network/hccn/ascend910B/hccn_tool/cmd.c, cfg_write_conf in hccn_tool/cfg.c and tool_ops.c of
github.com/verylucky01/driver at e29d066f).
"""

from __future__ import annotations

import re
from typing import Callable, List, Sequence, Tuple

from ansible_collections.ascend.npu.plugins.module_utils.command import execute as run_to_end

DEFAULT_PATH = "/usr/local/Ascend/driver/tools/hccn_tool"
CONF_PATH = "/etc/hccn.conf"
# Settings in the order they are applied (an address before the gateway that must be inside its subnet).
# setting -> (hccn_tool option, /etc/hccn.conf key or None when the file does not record it)
SETTINGS: tuple[tuple[str, str, str | None], ...] = (
    ("address", "-ip", "address"),
    ("netmask", "-ip", "netmask"),
    ("netdetect", "-netdetect", "netdetect"),
    ("gateway", "-gateway", "gateway"),
    ("tls_enable", "-tls", "tls_enable"),
    ("mtu", "-mtu", "mtu"),
)
# `-ping ... pkt N`: N is the payload size in bytes, at most MAX_DATA_LEN = 65535 - 20 - 8 (default 4096), and
# every ping sends 3 packets: parse_data_len_param / tool_get_ping_status in
# src/custom/network/hccn/ascend910B/hccn_product_ext/tool_cmd.c and ds_net_ext.h of
# github.com/verylucky01/driver at e29d066f.
PING_PAYLOAD_MAX = 65535 - 20 - 8
OPTION = {name: option for name, option, _ in SETTINGS}
CONF_KEY = {name: key for name, _, key in SETTINGS if key}

Runner = Callable[[List[str]], Tuple[int, str, str]]
_UNSET = re.compile(r"failed, because no .* (?:was )?preset", re.IGNORECASE)
_PING = re.compile(r"(\d+) packets transmitted, (\d+) received, ([\d.]+)% packet loss")


class HccnError(Exception):
    """hccn_tool failed in a way the caller cannot read a value from."""


def _value(out: str, label: str) -> str | None:
    for line in out.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == label:
            return value.strip()
    return None


def parse_ip(out: str) -> dict[str, str | None]:
    return {"address": _value(out, "ipaddr"), "netmask": _value(out, "netmask")}


def parse_netdetect(out: str) -> str | None:
    return _value(out, "netdetect address")


def parse_gateway(out: str) -> str | None:
    found = re.search(r"default gateway:\s*([0-9.]+)", out)
    return found.group(1) if found else None


def parse_tls(out: str) -> str | None:
    found = re.search(r"tls switch\[(\d)\]", out)
    return found.group(1) if found else None


def parse_mtu(out: str) -> str | None:
    found = re.search(r"mtu:\s*(\d+)", out, re.IGNORECASE)
    return found.group(1) if found else None


def parse_link(out: str) -> str | None:
    return _value(out, "link status")


def parse_net_health(out: str) -> str | None:
    return _value(out, "net health status")


def parse_ping(out: str) -> dict[str, object]:
    """The summary line of a ping; sent/received None when the tool printed none."""
    found = _PING.search(out)
    if not found:
        return {"sent": None, "received": None, "loss": None}
    return {"sent": int(found.group(1)), "received": int(found.group(2)), "loss": float(found.group(3))}


def parse_conf(text: str) -> dict[int, dict[str, str]]:
    """/etc/hccn.conf -> {device: {key without _N: value}}; other lines ignored."""
    out: dict[int, dict[str, str]] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        name, _, dev = key.strip().rpartition("_")
        if sep and name and dev.isdigit() and not key.lstrip().startswith("#"):
            out.setdefault(int(dev), {})[name] = value.strip()
    return out


def read_conf(path: str) -> dict[int, dict[str, str]]:
    try:
        with open(path, encoding="utf-8") as f:
            return parse_conf(f.read())
    except FileNotFoundError:
        return {}


def execute(argv: list[str]) -> tuple[int, str, str]:
    """Run one hccn_tool command: (exit code, stdout, stderr), its output read to the end (command.py says
    why not AnsibleModule.run_command)."""
    return run_to_end(argv)


def command(path: str, dev: int, *args: str) -> list[str]:
    return [path, "-i", str(dev), *args]


def shell(argv: Sequence[str]) -> str:
    """The command as a user types it (for messages): the tool's name, not its full path."""
    return " ".join(["hccn_tool" if i == 0 else a for i, a in enumerate(argv)])


class HccnTool:
    """hccn_tool through a runner (`execute` in the modules; tests may pass their own)."""

    def __init__(self, run: Runner, path: str = DEFAULT_PATH) -> None:
        self.run = run
        self.path = path

    def _call(self, dev: int, *args: str, unset_ok: bool = False) -> str | None:
        argv = command(self.path, dev, *args)
        rc, out, err = self.run(argv)
        if rc != 0:
            if unset_ok and _UNSET.search(out + err):
                return None
            detail = (out + err).strip() or f"exit code {rc}"
            raise HccnError(f"`{shell(argv)}` failed: {detail}")
        return out

    def read(self, dev: int, names: Sequence[str]) -> dict[str, str | None]:
        """The live values of the named settings (None = not set)."""
        got: dict[str, str | None] = {}
        if "address" in names or "netmask" in names:
            out = self._call(dev, "-ip", "-g", unset_ok=True)
            got.update(parse_ip(out) if out is not None else {"address": None, "netmask": None})
        readers = (
            ("netdetect", parse_netdetect),
            ("gateway", parse_gateway),
            ("tls_enable", parse_tls),
            ("mtu", parse_mtu),
        )
        for name, parse in readers:
            if name in names:
                out = self._call(dev, OPTION[name], "-g", unset_ok=True)
                got[name] = parse(out) if out is not None else None
        return {n: got.get(n) for n in names}

    def set_args(self, dev: int, option: str, values: dict[str, str]) -> list[str]:
        """The argv that sets one hccn_tool option (values: the settings of SETTINGS it takes)."""
        if option == "-ip":
            args = ["address", values["address"], "netmask", values["netmask"]]
        elif option == "-netdetect":
            args = ["address", values["netdetect"]]
        elif option == "-gateway":
            args = ["gateway", values["gateway"]]
        elif option == "-tls":
            args = ["enable", values["tls_enable"]]
        elif option == "-mtu":
            args = ["size", values["mtu"]]
        else:
            raise HccnError(f"unknown hccn_tool option {option}")
        return command(self.path, dev, option, "-s", *args)

    def set(self, argv: list[str]) -> None:
        rc, out, err = self.run(argv)
        if rc != 0:
            raise HccnError(f"`{shell(argv)}` failed: {(out + err).strip() or f'exit code {rc}'}")

    def status(self, dev: int) -> tuple[str | None, str | None]:
        """(link status, net health status)."""
        link = self._call(dev, "-link", "-g") or ""
        health = self._call(dev, "-net_health", "-g") or ""
        return parse_link(link), parse_net_health(health)

    def ping(self, dev: int, address: str, pkt: int | None) -> tuple[list[str], dict[str, object], str]:
        """(argv, parsed summary, raw output); a ping that prints no summary has sent None. pkt is the
        payload size in bytes (None: the tool's 4096), see PING_PAYLOAD_MAX."""
        argv = command(self.path, dev, "-ping", "-g", "address", address)
        if pkt is not None:
            argv += ["pkt", str(pkt)]
        rc, out, err = self.run(argv)
        parsed = parse_ping(out)
        if rc != 0 and parsed["sent"] is None:
            parsed["error"] = (out + err).strip() or f"exit code {rc}"
        return argv, parsed, out
