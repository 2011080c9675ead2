"""NPU-NIC state of a simulated server: the LIVE settings of the NICs and their record, /etc/hccn.conf
(python3 standard library only).

The model (docs/simulator.md "NPU NICs"), as on hardware:
  - `hccn_tool -i N -<setting> -s ...` changes the live NIC and records the setting in /etc/hccn.conf;
  - `hccn_tool -i N -<setting> -g` reads the live NIC, never the file;
  - a hand edit of /etc/hccn.conf changes nothing live;
  - when the driver brings the devices up (every boot, and the first use after a driver install or upgrade)
    it applies /etc/hccn.conf to the NICs; `hccn_tool -i N|-a -cfg recovery` applies it on demand.

Live state: /var/lib/ascend-sim/hccn_live.json
  {"driver": "<driver Version the devices were brought up with>",
   "devices": {"<logical id>": {"address", "netmask", "netdetect", "gateway", "send_arp_status",
                                "tls_enable", "mtu"}}}
A setting never made is absent, except the factory values of FACTORY. The driver key ties the live state to
the driver that brought the devices up: another driver version (a hot-reset upgrade) starts from the file
again, like a real device restart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ascend_fakes import simstate
else:
    import simstate

HCCN_LIVE = f"{simstate.STATE}/hccn_live.json"
# /etc/hccn.conf keys per device, in the order of sample 5i, then mtu_N: tool_mtu_cmd_execute records the MTU
# with cfg_write_conf(phy_id, "mtu", size) and `-cfg recovery` applies it (tool_cfg_mtu_recovery),
# src/custom/network/hccn/ascend910B/hccn_tool/tool_ops.c of github.com/verylucky01/driver@e29d066f.
CONF_KEYS = ("address", "netmask", "netdetect", "gateway", "send_arp_status", "tls_enable", "mtu")
# What a device has before anything is set: TLS on (deployment guides switch it off with `-tls -s enable 0`),
# MTU 1500 (the value fault-injection guides restore with `-mtu -s size 1500`).
FACTORY = {"tls_enable": "1", "mtu": "1500"}
Devices = dict[int, dict[str, str]]


# ------------------------------------------------------------------------------------------ /etc/hccn.conf


def read_conf() -> tuple[Devices, list[str]]:
    """Per-device keys of /etc/hccn.conf, and every other line as it was (kept on rewrite)."""
    per_dev: Devices = {}
    other: list[str] = []
    for line in simstate.read_text(simstate.HCCN_CONF).splitlines():
        key, sep, value = line.partition("=")
        name, _, dev = key.strip().rpartition("_")
        if sep and name in CONF_KEYS and dev.isdigit():
            per_dev.setdefault(int(dev), {})[name] = value.strip()
        elif line.strip():
            other.append(line)
    return per_dev, other


def write_conf(per_dev: Devices, other: list[str]) -> None:
    lines = [
        f"{k}_{dev}={per_dev[dev][k]}" for dev in sorted(per_dev) for k in CONF_KEYS if k in per_dev[dev]
    ]
    simstate.write_text(simstate.HCCN_CONF, "".join(f"{line}\n" for line in [*lines, *other]), 0o640)


def record(dev: int, values: dict[str, str]) -> None:
    """What the tool does after a successful -s: the device's keys in the file take the new values (the
    rest of the file, hand edits included, is rewritten as it was)."""
    kept = {k: v for k, v in values.items() if k in CONF_KEYS}
    if not kept:
        return
    per_dev, other = read_conf()
    per_dev.setdefault(dev, {}).update(kept)
    write_conf(per_dev, other)


# ---------------------------------------------------------------------------------------------- live state


def _load() -> dict[str, Any]:
    data = simstate.read_json(HCCN_LIVE, {})
    return data if isinstance(data, dict) else {}


def _store(driver: str, devices: Devices) -> None:
    simstate.write_json(
        HCCN_LIVE, {"driver": driver, "devices": {str(d): devices[d] for d in sorted(devices)}}
    )


def from_file(hw: simstate.Hardware, only: int | None = None, current: Devices | None = None) -> Devices:
    """The live state after the driver applied /etc/hccn.conf: factory values plus the file's keys, for
    every device (or just `only`, the others kept from `current`)."""
    conf = read_conf()[0]
    out: Devices = dict(current or {})
    for d in hw.devices:
        if only is None or d.logic_id == only:
            out[d.logic_id] = {**FACTORY, **conf.get(d.logic_id, {})}
    return out


def _current(hw: simstate.Hardware, driver: str) -> Devices | None:
    """The stored live state, or None when the loaded driver has not brought the devices up yet."""
    data = _load()
    raw = data.get("devices")
    if data.get("driver") != driver or not isinstance(raw, dict):
        return None
    return {int(k): {str(a): str(b) for a, b in v.items()} for k, v in raw.items() if str(k).isdigit()}


def _devices_locked(hw: simstate.Hardware) -> Devices:
    """devices() for a caller that holds the exclusive lock on HCCN_LIVE."""
    driver = simstate.driver_version() or ""
    live = _current(hw, driver)
    if live is None:
        live = from_file(hw)
        _store(driver, live)
    return live


def devices(hw: simstate.Hardware) -> Devices:
    """The live NIC settings; brought up from the file when the loaded driver has not done so yet. Every
    read-modify-write of the live state holds an exclusive flock (hccn_tool runs in parallel: Ansible
    modules read several NICs at once), plain reads a shared one."""
    with simstate.locked(HCCN_LIVE, shared=True):
        live = _current(hw, simstate.driver_version() or "")
    if live is not None:
        return live
    with simstate.locked(HCCN_LIVE):
        return _devices_locked(hw)


def get(hw: simstate.Hardware, dev: int) -> dict[str, str]:
    return devices(hw).get(dev, dict(FACTORY))


def set_live(hw: simstate.Hardware, dev: int, values: dict[str, str]) -> None:
    """`hccn_tool -i dev -<setting> -s`: the NIC takes the values, the file records them."""
    with simstate.locked(HCCN_LIVE):
        live = _devices_locked(hw)
        live.setdefault(dev, dict(FACTORY)).update(values)
        _store(simstate.driver_version() or "", live)
        record(dev, values)


def recover(hw: simstate.Hardware, dev: int | None) -> None:
    """`hccn_tool -i dev -cfg recovery` / `-a -cfg recovery`: apply the file to one or every NIC."""
    with simstate.locked(HCCN_LIVE):
        _store(simstate.driver_version() or "", from_file(hw, dev, _devices_locked(hw)))


def boot(hw: simstate.Hardware) -> None:
    """At boot the NICs start from their factory values and the driver applies /etc/hccn.conf; without a
    driver there are no NICs to configure."""
    driver = simstate.driver_version()
    with simstate.locked(HCCN_LIVE):
        if driver:
            _store(driver, from_file(hw))
        else:
            simstate.remove(HCCN_LIVE)
