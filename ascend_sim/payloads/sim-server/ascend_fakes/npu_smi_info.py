"""`npu-smi info -l / -m / -t board|health|memory|usages|topo` (fake).

Every key/value line is `\\t%-30s : %s` (npu_info_print.c of the open-sourced driver,
github.com/verylucky01/driver). Field order and values follow public captures (yunionio/telegraf
plugins/inputs/npu_smi/npu_smi_test.go; Ascend/mind-cluster component/ascend-faultdiag test fixtures; the
ArthurChiao blog post "gpu-advanced-notes-2"; ms-swift NPU docs for topo); per-chip-type variations follow
print_ascend_board_info / print_npu_card_info / print_ascend_chip_info / print_mapping_info(_910_93) /
show_ascend_card_info of the same source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ascend_fakes import npu_smi_table, simstate
else:
    import npu_smi_table
    import simstate

KV = "\t%-30s : %s"  # sample 2a/4a-4e (real TAB)
MAP4 = "\t%-30s %-30s %-30s %-30s"  # -m header/Mcu row (sample 4b, trailing spaces included)
MAP_ROW = "\t%-30s %-30s %-30s %s"  # -m chip row: "Ascend 910B4" (sample 4b)
MAP5 = "\t%-30s %-30s %-30s %-30s %-30s"  # A3 -m header/Mcu row (sample 4b, print_mapping_info_910_93)
MAP5_ROW = "\t%-30s %-30s %-30s %-30s %s"

# Board identity per chip family: `-t board` captures (910B: IT21HMDC_Bin5, 0x60, 0xD802, 0x3003; A3 fixture:
# IT22HMDA_2_S, 0x71, 0xD803, 0x3001), 310P 300I Duo PCI subsystem 0x0110. Values the captures lack
# (A3 Main Board ID, 310P board/product) are plausible stand-ins.
BOARD = {
    "910b": {"product": "IT21HMDC_Bin5", "board": "0x60", "subsys": "0x3003"},
    "910_93": {"product": "IT22HMDA_2_S", "board": "0x71", "subsys": "0x3001", "main_board": "0x21"},
    "310p": {"product": "Atlas 300I Duo", "board": "0x64", "subsys": "0x0110"},
}
# Health error details. Alarm is sample 4c verbatim; Warning/Critical are plausible codes in the same shape.
ERRORS = {
    "Alarm": (
        "A4025021 8C03A000 8C084E00",
        [
            "ascend_monitor adda heart beat lost error",
            "node type=process-manager, sensor type=General Software, event state=The process start "
            "failed or "
            "exit abnormally",
            "node type=adda, sensor type=Heartbeat Sensor, event state=Heartbeat Lost.",
        ],
    ),
    "Warning": ("80E18402", ["node type=HBM, sensor type=Temperature, event state=Over temperature minor"]),
    "Critical": ("80CB8009", ["node type=HBM, sensor type=Memory, event state=Uncorrectable ECC error"]),
}
TOPO_LEGEND = [  # sample 3, first block (910B)
    "Legend:",
    "",
    "  X    = Self",
    "  SYS  = Path traversing PCIe and NUMA nodes. Nodes are connected through SMP, such as QPI, UPI.",
    "  PHB  = Path traversing PCIe and the PCIe host bridge of a CPU.",
    "  PIX  = Path traversing a single PCIe switch",
    "  PXB  = Path traversing multiple PCIe switches",
    "  HCCS = Connection traversing HCCS.",
    "  NA   = Unknown relationship.",
]
TOPO_LEGEND_A3 = [  # sample 3, A3 block
    "Legend:",
    "",
    "  X    = Self",
    "  SYS  = Path traversing PCIe and NUMA nodes. Nodes are connected through SMP, such as QPI, UPI.",
    "  PHB  = Path traversing PCIe and the PCIe host bridge of a CPU.",
    "  PIX  = Path traversing a single PCIe switch",
    "  PXB  = Path traversing multipul PCIe switches",
    "  HCCS = Connection traversing HCCS.",
    "  SIO  = Path traversing the SIO bus",
    "  HCCS_SW = Connection traversing HCCS through a switch",
    "  NA   = Unknown relationship.",
]


def _hex_words(hw: simstate.Hardware, dev: simstate.Device, salt: str) -> str:
    return " ".join(f"{simstate.seeded(hw, dev.logic_id, f'{salt}{i}'):08X}" for i in range(5))


def serial(hw: simstate.Hardware, npu_id: int) -> str:
    return f"10{simstate.seeded(hw, npu_id, 'serial') % 10**10:010d}"  # 12 digits like 1025C9048791


def listing(hw: simstate.Hardware, devices: list[simstate.Device]) -> list[str]:
    """-l: print_all_info. 310P cards also show Product Name / Serial Number (not a 910 server)."""
    npus = sorted({d.npu_id for d in devices}, key=hw.npu_ids.index)
    out = [KV % ("Total Count", len(npus)), ""]
    for npu in npus:
        out.append(KV % ("NPU ID", npu))
        if hw.family == "310p":
            out += [
                KV % ("Product Name", hw.product or BOARD["310p"]["product"]),
                KV % ("Serial Number", serial(hw, npu)),
            ]
        out += [KV % ("Chip Count", len([d for d in devices if d.npu_id == npu])), ""]
    return out


def mapping(hw: simstate.Hardware, devices: list[simstate.Device]) -> list[str]:
    """-m: NPU ID / Chip ID / Chip Logic ID (/ Chip Phy-ID on A3) / Chip Name, one Mcu row per card."""
    a3 = hw.family == "910_93"
    out = [
        MAP5 % ("NPU ID", "Chip ID", "Chip Logic ID", "Chip Phy-ID", "Chip Name")
        if a3
        else MAP4 % ("NPU ID", "Chip ID", "Chip Logic ID", "Chip Name")
    ]
    for npu in sorted({d.npu_id for d in devices}, key=hw.npu_ids.index):
        for d in [x for x in devices if x.npu_id == npu]:
            if a3:
                out.append(MAP5_ROW % (npu, d.chip_id, d.logic_id, d.logic_id, hw.npu_smi_name))
            else:
                out.append(MAP_ROW % (npu, d.chip_id, d.logic_id, f"Ascend {hw.npu_smi_name}"))
        mcu = hw.per_card
        out.append(MAP5 % (npu, mcu, "-", "-", "Mcu") if a3 else MAP4 % (npu, mcu, "-", "Mcu"))
    return out


def board(hw: simstate.Hardware, card: list[simstate.Device]) -> list[str]:
    """-t board -i N: print_ascend_board_info (910B/A3 servers) or print_npu_card_info (310P cards)."""
    b = BOARD[hw.family]
    first = card[0]
    sw = simstate.driver_version() or "NA"
    fw = simstate.firmware_version(hw) or "NA"
    sub = hw.raw.get("pci_subsystem_id")  # hardware.json may name it ("0110" = 300I Duo)
    subsys = f"0x{str(sub).upper().removeprefix('0X')}" if sub else b["subsys"]
    out = [
        KV % ("NPU ID", first.npu_id),
        KV % ("Product Name", b["product"]),
        KV % ("Model", "NA"),
        KV % ("Manufacturer", "Huawei"),
        KV % ("Serial Number", serial(hw, first.npu_id)),
        KV % ("Software Version", sw),
        KV % ("Firmware Version", fw),
        KV % ("Compatibility", simstate.compatibility(hw)),
        KV % ("Board ID", b["board"]),
    ]
    if hw.family == "910_93":
        out.append(KV % ("Main Board ID", b["main_board"]))
    out += [
        KV % ("PCB ID", "A"),
        KV % ("BOM ID", 1),
        KV % ("PCIe Bus Info", first.bus_id),
        KV % ("Slot ID", hw.npu_ids.index(first.npu_id)),
        KV % ("Class ID", "NA"),
        KV % ("PCI Vendor ID", "0x19E5"),
        KV % ("PCI Device ID", f"0x{hw.pci_device_id.upper()}"),
        KV % ("Subsystem Vendor ID", "0x19E5"),
        KV % ("Subsystem Device ID", subsys),
        KV % ("Chip Count", len(card)),
    ]
    if hw.family == "310p":
        out.append(KV % ("Chip Fault", sum(simstate.health(d.logic_id) != "OK" for d in card)))
    return out


def chip_board(hw: simstate.Hardware, dev: simstate.Device) -> list[str]:
    """-t board -i N -c C: print_ascend_chip_info (sample 2b)."""
    out = [KV % ("NPU ID", dev.npu_id)]
    if hw.family == "910_93":
        out.append(KV % ("NPU Name", hw.raw.get("npu_name") or "9392"))
    out.append(KV % ("Chip ID", dev.chip_id))
    if hw.family != "910_93":
        out.append(KV % ("Chip Type", "Ascend"))
    out += [
        KV % ("Chip Name", hw.npu_smi_name),
        KV % ("Chip Version", "V1"),
        KV % ("Board ID", BOARD[hw.family]["board"]),
    ]
    if hw.family == "310p":
        out.append(KV % ("Die ID", _hex_words(hw, dev, "vdie")))
    else:
        out += [
            KV % ("PCB ID", "NA"),
            KV % ("BOM ID", 1),
            KV % ("VDie ID", _hex_words(hw, dev, "vdie")),
            KV % ("NDie ID", _hex_words(hw, dev, "ndie")),
        ]
    out += [
        KV % ("Chip Position ID", dev.chip_id),
        KV % ("PCIe Bus Info", dev.bus_id),
        KV % ("Firmware Version", simstate.firmware_version(hw) or "NA"),
    ]
    return out


def chip_health(dev_health: str) -> list[str]:
    """-t health -i N -c C: print_diagnosis_info (sample 4c; continuation lines are TAB + %-30s)."""
    out = [KV % ("Health Status", dev_health)]
    if dev_health not in ERRORS:
        return [*out, KV % ("Error Code", "NA"), KV % ("Error Information", "NA")]
    codes, infos = ERRORS[dev_health]
    out += [KV % ("Error Code", codes), KV % ("Error Information", infos[0])]
    for info in infos[1:]:
        out += ["", KV % ("", info)]
    return out


def card_health(hw: simstate.Hardware, card: list[simstate.Device]) -> list[str]:
    """-t health -i N: show_ascend_card_info with show_ascend_chip_health_state (per chip, then the MCU)."""
    out = [KV % ("NPU ID", card[0].npu_id), KV % ("Chip Count", len(card)), ""]
    for d in card:
        out += [KV % ("Health", simstate.health(d.logic_id)), KV % ("Chip ID", d.chip_id), ""]
    return [*out, KV % ("Health", "OK"), KV % ("Chip Name", "MCU"), ""]  # printf("\n") after each chip


def memory(hw: simstate.Hardware, card: list[simstate.Device]) -> list[str]:
    """-t memory -i N (sample 4d; print_ddr_info/print_hbm_info order)."""
    out = [KV % ("NPU ID", card[0].npu_id)]
    for d in card:
        temp = 30 + simstate.seeded(hw, d.logic_id, "hbmtemp") % 10
        out += [
            KV % ("DDR Capacity(MB)", 0),
            KV % ("DDR Clock Speed(MHz)", 0),
            KV % ("HBM Capacity(MB)", d.hbm_mb),
            KV % ("HBM Clock Speed(MHz)", 1600),
            KV % ("HBM Temperature(C)", temp),
            KV % ("HBM Manufacturer ID", "0x57"),
            KV % ("Chip ID", d.chip_id),
        ]
    return out


def usages(hw: simstate.Hardware, card: list[simstate.Device]) -> list[str]:
    """-t usages -i N (sample 4e, npu-smi 25.5.1 form)."""
    procs = simstate.processes()
    out = [KV % ("NPU ID", card[0].npu_id), KV % ("Chip Count", len(card)), ""]
    for d in card:
        v = npu_smi_table.live(hw, d, procs.get(d.logic_id, []))
        rate = int(v["hbm_used"]) * 100 // max(d.hbm_mb, 1)
        out += [
            KV % ("DDR Capacity(MB)", 0),
            KV % ("DDR Usage Rate(%)", 0),
            KV % ("DDR Hugepages Total(page)", 0),
            KV % ("DDR Hugepages Usage Rate(%)", 0),
            KV % ("HBM Capacity(MB)", d.hbm_mb),
            KV % ("HBM Usage Rate(%)", rate),
            KV % ("Aicore Usage Rate(%)", v["aicore"]),
            KV % ("Aivector Usage Rate(%)", 0),
            KV % ("Aicpu Usage Rate(%)", 0),
            KV % ("Ctrlcpu Usage Rate(%)", 6 if v["aicore"] else 0),
            KV % ("DDR Bandwidth Usage Rate(%)", 0),
            KV % ("HBM Bandwidth Usage Rate(%)", 0),
            KV % ("NPU Utilization(%)", v["aicore"]),
            KV % ("Aicube Usage Rate(%)", v["aicore"]),
            KV % ("Chip ID", d.chip_id),
            "",
        ]
    return out


def topo(hw: simstate.Hardware, devices: list[simstate.Device]) -> list[str]:
    """-t topo: header `\\t   ` + `NPU%-8d` cells, rows `NPU%-8d` + `%-11s` cells + CPU Affinity (sample 3).
    A3 uses Phy-ID axes, SIO between the two dies of an NPU and no CPU Affinity column (A3 block of sample 3;
    npu_info_print_ext.c omits it for 910_93 on ARM). 310P: PIX on one card, PHB in one NUMA node, else SYS.
    """
    a3 = hw.family == "910_93"
    label = "Phy-ID%-5d" if a3 else "NPU%-8d"
    head = "\t   " + "".join(label % d.logic_id for d in devices)
    out = [head.rstrip() if a3 else head + "CPU Affinity"]  # A3 sample: no trailing blanks
    for row in devices:
        cells = "".join(f"{_link(hw, row, col):<11}" for col in devices)
        out.append(label % row.logic_id + (cells.rstrip() if a3 else cells + hw.cpu_affinity(row.logic_id)))
    return [*out, "", *(TOPO_LEGEND_A3 if a3 else TOPO_LEGEND)]


def _link(hw: simstate.Hardware, a: simstate.Device, b: simstate.Device) -> str:
    if a.logic_id == b.logic_id:
        return "X"
    if hw.family == "910_93":
        return "SIO" if a.npu_id == b.npu_id else "HCCS_SW"
    if hw.family == "910b":
        return "HCCS"
    if a.npu_id == b.npu_id:
        return "PIX"
    return "PHB" if hw.cpu_affinity(a.logic_id) == hw.cpu_affinity(b.logic_id) else "SYS"
