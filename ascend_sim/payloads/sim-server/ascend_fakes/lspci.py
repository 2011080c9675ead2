#!/usr/bin/env python3
"""lspci (simulated server; installed ahead of the real one as /usr/local/bin/lspci).

Adds the NPUs of hardware.json, with their real IDs (vendor 19e5; d802 910B, d803 A3 per die, d500 310P per
card; class 1200 "Processing accelerators"), to the real /usr/bin/lspci listing:
  lspci            c1:00.0 Processing accelerators: Huawei Technologies Co., Ltd. Device d802 (rev 20)
  lspci -nn        c1:00.0 Processing accelerators [1200]: Huawei Technologies Co., Ltd. Device [19e5:d802]
                   (rev 20)
  lspci -n         c1:00.0 1200: 19e5:d802 (rev 20)
  -D adds the domain (0000:c1:00.0), -d [vendor]:[device] filters. Any other option runs the real lspci alone.
The NPUs are there before any driver is installed (it is hardware). $ASCEND_SIM_REAL_LSPCI overrides the real
binary's path (tests set it to a missing file to see the NPUs only).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import TYPE_CHECKING

# Standalone script: find simstate.py beside the real file, in the installed driver, or in the server image.
_HERE, _ROOT = os.path.dirname(os.path.realpath(__file__)), os.environ.get("ASCEND_SIM_ROOT") or "/"
sys.path[:0] = [_HERE, f"{_ROOT}/usr/local/Ascend/driver/tools/ascend-sim", "/opt/ascend-sim/fakes"]
if TYPE_CHECKING:
    from ascend_fakes import simstate
else:
    import simstate

VENDOR = "19e5"
VENDOR_NAME = "Huawei Technologies Co., Ltd."
LINE = "%s Processing accelerators: %s Device %s (rev 20)"  # as the real lspci prints it
LINE_NN = "%s Processing accelerators [1200]: %s Device [%s:%s] (rev 20)"  # brief / lspci -nn form
LINE_N = "%s 1200: %s:%s (rev 20)"


def real_lspci() -> str:
    return os.environ.get("ASCEND_SIM_REAL_LSPCI", "/usr/bin/lspci")


def parse(argv: list[str]) -> tuple[dict[str, str], bool]:
    """(options, understood) for -n, -nn, -D and -d X (also -dX / -nnD style bundles of those letters)."""
    opts: dict[str, str] = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "-d" and i + 1 < len(argv):
            opts["d"] = argv[i + 1]
            i += 2
            continue
        if a.startswith("-d") and len(a) > 2:
            opts["d"] = a[2:]
        elif re.fullmatch(r"-[nD]+", a):
            n = a.count("n")
            opts["n"] = str(max(int(opts.get("n", "0")), n))
            if "D" in a:
                opts["D"] = ""
        else:
            return opts, False
        i += 1
    return opts, True


def npu_lines(opts: dict[str, str]) -> list[str]:
    hw = simstate.load_hardware()
    if hw is None:
        return []
    want_vendor, _, want_dev = opts.get("d", ":").partition(":")
    if want_vendor and want_vendor.lower().removeprefix("0x") != VENDOR:
        return []
    if want_dev and want_dev.lower().removeprefix("0x") != hw.pci_device_id:
        return []
    out = []
    for dev in hw.pci_functions():
        slot = dev.bus_id.lower() if "D" in opts else dev.bus_id.lower().split(":", 1)[1]
        n = opts.get("n", "0")
        if n == "1":
            out.append(LINE_N % (slot, VENDOR, hw.pci_device_id))
        elif n == "2":
            out.append(LINE_NN % (slot, VENDOR_NAME, VENDOR, hw.pci_device_id))
        else:
            out.append(LINE % (slot, VENDOR_NAME, hw.pci_device_id))
    return out


def _slot_key(line: str) -> tuple[int, ...]:
    slot = line.split(" ", 1)[0]
    parts = re.split(r"[:.]", slot)
    try:
        nums = tuple(int(x, 16) for x in parts)
    except ValueError:
        return (1 << 30,)
    return nums if len(nums) == 4 else (0, *nums)


def main(argv: list[str]) -> int:
    opts, understood = parse(argv)
    real = real_lspci()
    if not understood:
        if os.access(real, os.X_OK):
            os.execv(real, [real, *argv])
        print(f"lspci: the simulated lspci does not support {' '.join(argv)}", file=sys.stderr)
        return 1
    lines = npu_lines(opts)
    if os.access(real, os.X_OK):
        res = subprocess.run([real, *argv], capture_output=True, text=True, check=False)
        # the emulated /sys/bus/pci/devices shows the NPUs to the real lspci too: the lines above stand
        ours = {line.split(" ", 1)[0] for line in lines}
        lines += [
            line for line in res.stdout.splitlines() if line.strip() and line.split(" ", 1)[0] not in ours
        ]
    for line in sorted(lines, key=_slot_key):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
