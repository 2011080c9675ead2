"""`npu-smi info` main table (fake): the 98-column A2/A3 layout and the 106-column 310P layout.

Formats are the printf formats of npucli's npu_info_print.c (github.com/verylucky01/driver) at the widths
of the captured 98/106-column outputs (vllm-project/vllm-ascend issues #3324 A2, #4266 A3, #2416 300I Duo);
every line of a block has the same length.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ascend_fakes import simstate
else:
    import simstate

# ---- A2 (910B) / A3 (910_93), 98 columns: the A2 and A3 captures.
RULE98 = "+" + "-" * 96 + "+"
HEAD98 = "| npu-smi %-24s Version: %-52s |"  # sample 1a line 2 ("| npu-smi 24.1.0.3         ...")
GRID98 = "+---------------------------+---------------+----------------------------------------------------+"
TITLE98 = "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|"
CHIP98 = "| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |"
CHIP98_A3 = (
    "| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |"
)
EQ98 = "+===========================+===============+====================================================+"
ROW1_98 = "| %-5s %-20s| %-13s | %-11s %-17s %-5s/ %-13s |"  # "| 0     910B2               | OK  ..." (A2)
ROW2_98 = (
    "| %-26s| %s | %-11s %-5s/ %-10s %-5s/ %-13s |"  # "| 0                         | 0000:C1:00.0  |" (A2)
)
ROW2_98_A3 = (
    "| %-5s %-20s| %s | %-11s %-5s/ %-10s %-5s/ %-13s |"  # "| 0     0                   | 0000:9D..." (A3)
)
PROC_TITLE98 = (
    "| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |"
)
PROC98 = "| %-7s %-18s| %-13s | %-24s | %-23s |"  # "| 0       0                 | 4286          | ..." (A2)
NOPROC98 = "| %-95s|"  # "| No running processes found in NPU 4     ...    |" (A2)

# ---- 310P (Atlas 300I Duo), 106 columns: sample 1c.
RULE106 = "+" + "-" * 104 + "+"
HEAD106 = "| npu-smi %-40s Version: %-44s |"  # "| npu-smi 25.2.0                       Version: ..." (Duo)
GRID106 = "+" + "-" * 31 + "+" + "-" * 17 + "+" + "-" * 54 + "+"
TITLE106 = "| NPU     Name                  | Health          | Power(W)     Temp(C)           Hugepages-Usage(page) |"  # noqa: E501
CHIP106 = "| Chip    Device                | Bus-Id          | AICore(%)    Memory-Usage(MB)                        |"  # noqa: E501
EQ106 = "+" + "=" * 31 + "+" + "=" * 17 + "+" + "=" * 54 + "+"
ROW1_106 = "| %-7s %-22s| %-15s | %-12s %-17s %-6s/ %-13s |"  # "| 2       310P3         | OK ..." (Duo)
ROW2_106 = "| %-7s %-22s| %s    | %-12s %-5s/ %-32s |"  # "| 0       0             | 0000:01:00.0    |" (Duo)
PROC_TITLE106 = "| NPU     Chip                  | Process id      | Process name             | Process memory(MB)        |"  # noqa: E501
PROC106 = "| %-7s %-22s| %-15s | %-24s | %-25s |"  # "| 5       0          | 904545    | python3 ..." (Duo)
NOPROC106 = "| %-103s|"  # "| No running processes found in NPU 2 ...|" (Duo)

# Printed by print_total_info_with_HBM when /etc/ascend_install.info lacks Driver_Install_Status=complete
INCOMPLETE = (
    "[WARNING]The driver package may not be completely installed, which may cause function abnormal. "
    "Please reinstall it."
)


def live(hw: simstate.Hardware, dev: simstate.Device, procs: list[dict[str, Any]]) -> dict[str, Any]:
    """Live values of one chip: telemetry.json overrides, else stable per-device values; busy when held."""
    seed = simstate.seeded(hw, dev.logic_id, "live")
    busy = bool(procs)
    held = sum(int(x.get("memory_mb") or 0) for x in procs)
    if hw.family == "310p":
        power = "NA"
        base = 1200 + seed % 600
    else:
        watts = (140.0 if busy else 80.0) + (seed % 300 if busy else seed % 200) / 10
        power = "-" if hw.family == "910_93" and dev.chip_id == 1 else f"{watts:.1f}"
        base = (
            2654 if dev.hbm_mb <= 32768 else 3380 if hw.family == "910b" else 2880 + 270 * (1 - dev.chip_id)
        )
        base += seed % 8
    values: dict[str, Any] = {
        "power": power,
        "temp": 33 + seed % 12 + (8 if busy else 0),
        "aicore": 30 + seed % 10 if busy else 0,
        "hbm_used": min(dev.hbm_mb, base + held),
        "hugepages": [0, 0],
        "memory_used": 0,
        "memory_total": 0,
    }
    if hw.family == "310p":
        values["memory_used"] = min(dev.hbm_mb, base + held)
        values["memory_total"] = dev.hbm_mb
    values.update(simstate.telemetry(dev.logic_id))
    return values


def _power(value: Any) -> str:
    return value if isinstance(value, str) else f"{float(value):.1f}"


def _name(proc: dict[str, Any]) -> str:
    return str(proc.get("name") or "")[:15]  # the kernel's comm: 15 chars ("/usr/local/pyth", sample 1a)


def _first_row(fmt: str, hw: simstate.Hardware, dev: simstate.Device, v: dict[str, Any]) -> str:
    """The 'NPU Name | Health | Power Temp Hugepages' row, the same in every table layout."""
    used, total = v["hugepages"]
    health = simstate.health(dev.logic_id)
    return fmt % (dev.npu_id, hw.npu_smi_name, health, _power(v["power"]), v["temp"], used, total)


def table(hw: simstate.Hardware, devices: list[simstate.Device], version: str) -> list[str]:
    procs = simstate.processes()
    if hw.family == "310p":
        return _table_310p(hw, devices, version, procs)
    a3 = hw.family == "910_93"
    out = [RULE98, HEAD98 % (version, version), GRID98, TITLE98, CHIP98_A3 if a3 else CHIP98, EQ98]
    cards = _cards(devices)
    for card in cards:
        for i, dev in enumerate(card):
            v = live(hw, dev, procs.get(dev.logic_id, []))
            out.append(_first_row(ROW1_98, hw, dev, v))
            bus = dev.bus_id + " "
            mem = (v["aicore"], v["memory_used"], v["memory_total"], v["hbm_used"], dev.hbm_mb)
            if a3:
                out.append(ROW2_98_A3 % (dev.chip_id, dev.logic_id, bus, *mem))
            else:
                out.append(ROW2_98 % (dev.chip_id, bus, *mem))
            if i != len(card) - 1:
                out.append(RULE98)  # die separator inside one A3 NPU (sample 1b)
        out.append(EQ98)
    out += [GRID98, PROC_TITLE98, EQ98]
    for card in cards:
        rows = [
            PROC98 % (dev.npu_id, dev.chip_id, x.get("pid", ""), _name(x), x.get("memory_mb", 0))
            for dev in card
            for x in procs.get(dev.logic_id, [])
        ]
        out += rows or [NOPROC98 % f"No running processes found in NPU {card[0].npu_id}"]
        out.append(EQ98)
    return out


def _table_310p(
    hw: simstate.Hardware,
    devices: list[simstate.Device],
    version: str,
    procs: dict[int, list[dict[str, Any]]],
) -> list[str]:
    out = [RULE106, HEAD106 % (version, version), GRID106, TITLE106, CHIP106, EQ106]
    cards = _cards(devices)
    for card in cards:
        for i, dev in enumerate(card):
            v = live(hw, dev, procs.get(dev.logic_id, []))
            out.append(_first_row(ROW1_106, hw, dev, v))
            out.append(
                ROW2_106
                % (dev.chip_id, dev.logic_id, dev.bus_id, v["aicore"], v["memory_used"], v["memory_total"])
            )
            if i != len(card) - 1:
                out.append(GRID106)  # chip separator inside one card (sample 1c)
        out.append(EQ106)
    out += [GRID106, PROC_TITLE106, EQ106]
    for card in cards:
        rows = [
            PROC106 % (dev.npu_id, dev.chip_id, x.get("pid", ""), _name(x), x.get("memory_mb", 0))
            for dev in card
            for x in procs.get(dev.logic_id, [])
        ]
        out += rows or [NOPROC106 % f"No running processes found in NPU {card[0].npu_id}"]
        out.append(EQ106)
    return out


def _cards(devices: list[simstate.Device]) -> list[list[simstate.Device]]:
    cards: dict[int, list[simstate.Device]] = {}
    for dev in devices:
        cards.setdefault(dev.npu_id, []).append(dev)
    return list(cards.values())
