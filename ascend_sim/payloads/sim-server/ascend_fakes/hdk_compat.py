"""Driver/firmware compatibility as npu-smi's board "Compatibility" reports it (fake, python3 stdlib only).

Both directions, from the two version.info files (/usr/local/Ascend/driver and firmware): the driver's
compatible_version_fw must name the running firmware, and the firmware package's compatible_version_drv (when
a firmware package is installed; the factory firmware has no version.info) must name the driver. Ranges are
inclusive [low,high] lists; a high bound ending in '.' is a prefix ("24.1." = every 24.1.x) and a version that
starts with the low bound is inside (24.1.rc3 in [24.1,24.1.]), as in tests/fixtures/ascend/version_info.
"""

from __future__ import annotations

import re

_INTERVAL = re.compile(r"\[\s*([^,\[\]\s]+)\s*,\s*([^,\[\]\s]+)\s*\]")
_TOKEN = re.compile(r"[0-9]+|[a-z]+")
_WORDS = {"dev": 0, "alpha": 1, "beta": 2, "rc": 3}


def parts(version: str) -> list[tuple[int, int, int]]:
    out = []
    tokens = _TOKEN.findall(version.lower().lstrip("v"))
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.isdigit():
            out.append((1, int(tok), 0))
        else:
            num = int(tokens[i + 1]) if i + 1 < len(tokens) and tokens[i + 1].isdigit() else 0
            i += 1 if i + 1 < len(tokens) and tokens[i + 1].isdigit() else 0
            out.append((0, _WORDS.get(tok, 0), num))
        i += 1
    return out


def _cmp(a: str, b: str) -> int:
    pa, pb = parts(a), parts(b)
    width = max(len(pa), len(pb))
    pa += [(1, 0, 0)] * (width - len(pa))
    pb += [(1, 0, 0)] * (width - len(pb))
    return (pa > pb) - (pa < pb)


def _starts(version: str, prefix: str) -> bool:
    head = parts(prefix)
    return parts(version)[: len(head)] == head


def accepts(ranges: str, version: str) -> bool | None:
    """True/False when `ranges` parses; None when it is empty or not a range list."""
    found = _INTERVAL.findall(ranges or "")
    if not found:
        return None
    for low, high in found:
        lo, hi, prefix = low.rstrip("."), high.rstrip("."), high.endswith(".")
        above = _cmp(version, lo) >= 0 or _starts(version, lo)
        below = _cmp(version, hi) <= 0 or (prefix and _starts(version, hi))
        if above and below:
            return True
    return False


def board_compatibility(
    driver: str | None, driver_fw_range: str, firmware: str | None, fw_drv_range: str
) -> str:
    """OK / NOK / UNKNOWN for the board: NOK when either side refuses the other."""
    if not driver or not firmware:
        return "UNKNOWN"
    sides = [accepts(driver_fw_range, firmware), accepts(fw_drv_range, driver)]
    if False in sides:
        return "NOK"
    return "OK" if True in sides else "UNKNOWN"
