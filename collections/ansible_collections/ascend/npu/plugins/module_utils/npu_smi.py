# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""Parsers for npu-smi and upgrade-tool output (standard library only).

Formats from public captures (vllm-project/vllm-ascend issues #3314, #3324, #4266, #2416; Ascend/mind-cluster
component/ascend-faultdiag/test/st_module_testcase/kg_parse/npu_info_before.txt; yunionio/telegraf
plugins/inputs/npu_smi/npu_smi_test.go; ms-swift docs/source/BestPractices/NPU支持.md for -t topo) and the
printing code of npucli (github.com/verylucky01/driver src/custom/dev_prod/user/npucli/src/npu_info_print.c;
boot status: scripts/package/custom/driver/common/scripts/driver_install.sh):
  key/value lines  every line of `npu-smi info -l / -m / -t <type>` is printed as `\\t%-30s : %s` (a TAB,
                   many captures show 8 spaces); continuation lines have an empty key.
  -l               "Total Count : 8", then per NPU "NPU ID : 0" / "Chip Count : 1" blocks.
  -m               columns NPU ID, Chip ID, Chip Logic ID, [Chip Phy-ID on A3,] Chip Name; "Mcu" rows and
                   "-" logic ids are the cards' management chips.
  -t board         "Software Version", "Firmware Version", "Compatibility", "PCI Device ID", ...
  -t health        chip level "Health Status : OK"; card level (no -c): "Health : OK" then "Chip ID : n".
  info             the main table; its process section rows are "| NPU  Chip | Process id | Process name |
                   Process memory(MB) |", or "No running processes found in NPU n".
  -t topo          a header of axis labels ("NPU0".. or "Phy-ID12".. on A3) + "CPU Affinity" (not on A3), then
                   one row per NPU: its label, a link type per axis (X = self, HCCS, SIO, PIX, PHB, SYS, ...)
                   and the CPU list; "Legend:" ends the table. The header may start with a TAB or not.
  upgrade-tool --device_index -1 --boot_status: a line per device containing "deviceId(N)" and
                   "boot status:<n>"; 16 = started (the driver scripts count "boot status:16").
"""

from __future__ import annotations

import re
from typing import Any

_KV = re.compile(r"^\s*([^:]*?)\s*:\s?(.*?)\s*$")
_PROC_ROW = re.compile(r"^\|\s*(\d+)\s+(\d+)\s+\|\s*(\d+)\s*\|\s*(.*?)\s*\|\s*(\d+)\s*\|\s*$")
_NO_PROC = re.compile(r"No running processes found in NPU (\d+)")
_AXIS = re.compile(r"^(NPU|Phy-ID)(\d+)$")
_BOOT = re.compile(r"deviceId\((\d+)\).*?boot status:\s*(\d+)")
BOOTED = 16  # 7b: "boot status:16" = DSMI service started


def kv_lines(text: str) -> list[tuple[str, str]]:
    """(key, value) pairs in order; continuation lines (empty key) are appended to the previous value."""
    out: list[tuple[str, str]] = []
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        m = _KV.match(line)
        if not m:
            continue
        key, value = m.group(1).strip(), m.group(2).strip()
        if not key and out:
            out[-1] = (out[-1][0], (out[-1][1] + "; " + value).strip("; "))
        elif key:
            out.append((key, value))
    return out


def parse_board(text: str) -> dict[str, str]:
    """`npu-smi info -t board -i N` (2a) -> {"Software Version": ..., "Firmware Version": ..., ...}."""
    return dict(kv_lines(text))


def parse_list(text: str) -> dict[str, Any]:
    """`npu-smi info -l` (4a) -> {"total": 8, "npus": [{"npu_id": 0, "chip_count": 1}, ...]}."""
    total: int | None = None
    npus: list[dict[str, Any]] = []
    for key, value in kv_lines(text):
        if key == "Total Count" and value.isdigit():
            total = int(value)
        elif key == "NPU ID" and value.isdigit():
            npus.append({"npu_id": int(value), "chip_count": None})
        elif key == "Chip Count" and value.isdigit() and npus:
            npus[-1]["chip_count"] = int(value)
        elif npus and key in ("Product Name", "Serial Number"):
            npus[-1][key.lower().replace(" ", "_")] = value
    return {"total": total if total is not None else len(npus), "npus": npus}


def parse_map(text: str) -> list[dict[str, Any]]:
    """`npu-smi info -m` (4b) -> one dict per NPU chip (Mcu rows left out):
    {"npu_id", "chip_id", "logic_id", "phy_id" (A3 only, else None), "name"}."""
    lines = [line for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return []
    a3 = "Chip Phy-ID" in lines[0]
    out: list[dict[str, Any]] = []
    for line in lines[1:]:
        cols = line.split()
        need = 5 if a3 else 4
        if len(cols) < need or not cols[0].isdigit() or not cols[1].isdigit():
            continue
        logic = cols[2]
        name = " ".join(cols[need - 1 :])
        if not logic.isdigit() or name == "Mcu":
            continue
        phy = cols[3] if a3 else None
        out.append(
            {
                "npu_id": int(cols[0]),
                "chip_id": int(cols[1]),
                "logic_id": int(logic),
                "phy_id": int(phy) if phy is not None and phy.isdigit() else None,
                "name": name,
            }
        )
    return out


def parse_health(text: str) -> list[dict[str, Any]]:
    """`npu-smi info -t health -i N` (card level) -> [{"chip_id": 0, "health": "OK"}, ...] (the MCU left out);
    `... -c C` (chip level, 4c) -> [{"chip_id": None, "health": "OK", "error_code": "NA"}]."""
    pairs = kv_lines(text)
    status = [v for k, v in pairs if k == "Health Status"]
    if status:
        code = next((v for k, v in pairs if k == "Error Code"), None)
        return [{"chip_id": None, "health": status[0], "error_code": code}]
    out: list[dict[str, Any]] = []
    pending: str | None = None
    for key, value in pairs:
        if key == "Health":
            pending = value
        elif key == "Chip ID" and pending is not None:
            out.append({"chip_id": int(value) if value.isdigit() else value, "health": pending})
            pending = None
        elif key == "Chip Name" and pending is not None:  # "Chip Name : MCU" closes the MCU's block
            pending = None
    return out


def parse_processes(table: str) -> list[dict[str, Any]]:
    """The process section of `npu-smi info` (1a-1c) -> [{"npu_id", "chip", "pid", "name", "memory_mb"}]."""
    out: list[dict[str, Any]] = []
    section = False
    for line in (table or "").splitlines():
        if "Process id" in line and "Process name" in line:
            section = True
            continue
        if not section:
            continue
        m = _PROC_ROW.match(line)
        if m:
            out.append(
                {
                    "npu_id": int(m.group(1)),
                    "chip": int(m.group(2)),
                    "pid": int(m.group(3)),
                    "name": m.group(4),
                    "memory_mb": int(m.group(5)),
                }
            )
    return out


def parse_table_health(table: str) -> list[dict[str, Any]]:
    """Health column of the main table's device rows (1a):
    [{"npu_id": 0, "name": "910B3", "health": "OK"}], one per chip (A3: two per NPU)."""
    out: list[dict[str, Any]] = []
    for line in (table or "").splitlines():
        if "Process id" in line:
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3:
            continue
        first = cells[0].split()
        if len(first) >= 2 and first[0].isdigit() and not first[1].isdigit() and "0000:" not in cells[1]:
            out.append({"npu_id": int(first[0]), "name": first[1], "health": cells[1]})
    return out


def parse_boot_status(text: str) -> dict[int, int]:
    """`upgrade-tool --device_index -1 --boot_status` (7b) -> {device id: boot status}."""
    out: dict[int, int] = {}
    for line in (text or "").splitlines():
        m = _BOOT.search(line)
        if m:
            out[int(m.group(1))] = int(m.group(2))
    return out


def parse_topo(text: str) -> list[dict[str, Any]]:
    """`npu-smi info -t topo` (3) -> one dict per row: {"label": "NPU0", "id": 0, "links": {"NPU1": "HCCS",
    ...} (self left out), "cpu_affinity": "144-167" or None (A3 prints no CPU Affinity column)}."""
    axes: list[str] = []
    affinity_column = False
    out: list[dict[str, Any]] = []
    for line in (text or "").splitlines():
        if line.strip().startswith("Legend"):
            break
        cols = line.split()
        if not axes:
            labels = [c for c in cols if _AXIS.match(c)]
            if labels and labels == cols[: len(labels)] and len(labels) >= len(cols) - 2:
                axes = labels
                affinity_column = " ".join(cols[len(labels) :]) == "CPU Affinity"
            continue
        m = _AXIS.match(cols[0]) if cols else None
        if not m or len(cols) < 1 + len(axes):
            continue
        links = dict(zip(axes, cols[1 : 1 + len(axes)]))
        rest = cols[1 + len(axes) :]
        out.append(
            {
                "label": cols[0],
                "id": int(m.group(2)),
                "links": {k: v for k, v in links.items() if k != cols[0]},
                "cpu_affinity": rest[0] if affinity_column and rest else None,
            }
        )
    return out


def parse_cpulist(text: str) -> set[int]:
    """A kernel CPU list ("0-23,48-71", sysfs cpulist format) -> the CPUs; empty for anything else."""
    cpus: set[int] = set()
    for part in (text or "").strip().split(","):
        lo, _, hi = part.strip().partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return set()
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus
