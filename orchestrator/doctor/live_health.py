"""Live check `npu-health`: every chip's Health in `npu-smi info` is OK, with the Error Code and Error
Information lines of `npu-smi info -t health -i N -c C` for one that is not (npucli's health values: OK,
Warning, Alarm, Critical)."""

from __future__ import annotations

import re
from typing import Any

from orchestrator.doctor.live_finding import Facts, Finding, LiveCheck, Status, driver_loaded, npu

NAME = "npu-health"
FIX = (
    "read the chip's error codes (`npu-smi info -t health -i N`) and look them up in the Ascend health "
    "code list; reboot the server, and move the replica off the NPU (or replace the card) when the alarm "
    "comes back"
)
_FIELD = re.compile(r"^\s*(Health Status|Error Code|Error Information)\s*:\s*(.*?)\s*$")


def health_detail(stdout: str) -> dict[str, str]:
    """Health Status / Error Code / Error Information of `npu-smi info -t health -i N` (first lines)."""
    out: dict[str, str] = {}
    for line in stdout.splitlines():
        m = _FIELD.match(line)
        if m and m.group(1) not in out:
            out[m.group(1)] = m.group(2)
    return out


def _detail(facts: Facts, chip: dict[str, Any]) -> str:
    for row in facts.get("health") or []:
        item = row.get("item") if isinstance(row, dict) else None
        if isinstance(item, dict) and (item.get("npu_id"), item.get("chip_id")) == (
            chip.get("npu_id"),
            chip.get("chip_id"),
        ):
            d = health_detail(str(row.get("stdout") or ""))
            parts = [f"{k} {d[k]}" for k in ("Health Status", "Error Code", "Error Information") if d.get(k)]
            return "; ".join(parts)
    return ""


def check(host: str, facts: Facts) -> list[Finding]:
    if not driver_loaded(facts):
        return []  # npu-pci reports the driver
    chips = [c for c in npu(facts).get("chips") or [] if isinstance(c, dict)]
    bad = [c for c in chips if c.get("health") not in ("OK", None)]
    if not bad:
        return [Finding(host, NAME, Status.ok, f"{len(chips)} chips OK")]
    out = []
    for c in bad:
        detail = _detail(facts, c)
        seen = f"NPU {c.get('npu_id')} chip {c.get('chip_id')}: health {c.get('health')}"
        out.append(Finding(host, NAME, Status.fail, seen + (f" ({detail})" if detail else ""), FIX))
    return out


CHECK = LiveCheck(
    NAME, "each chip's Health in npu-smi info (OK) and npu-smi info -t health -i N -c C", FIX, check
)
