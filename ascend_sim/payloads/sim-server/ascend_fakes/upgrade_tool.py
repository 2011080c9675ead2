#!/usr/bin/env python3
"""upgrade-tool (simulated), installed as /usr/local/Ascend/driver/tools/upgrade-tool.

  upgrade-tool --device_index -1|N --component -1 --version   component versions (sample 7a)
  upgrade-tool --device_index -1|N --system_version            driver version per device (7a, 2nd form)
  upgrade-tool --device_index -1|N --boot_status               boot status per device (sample 7b)

Sample 7b has no verbatim capture: the driver scripts count lines containing `boot status` and
`boot status:16` (16 = DSMI service started), so each device prints one line ending in `boot status:<n>`;
the rest of the line copies the `Get ... succeed for deviceId(N)` shape of 7a. Devices are booted (16)
while a driver is loaded. Components: the 910 set of 7a (nve 0, uefi 3, imu 8, imp 9), the JSON line
indented by a TAB (7a, 2nd capture).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

# Standalone script: find simstate.py beside the real file, in the installed driver, or in the server image.
_HERE, _ROOT = os.path.dirname(os.path.realpath(__file__)), os.environ.get("ASCEND_SIM_ROOT") or "/"
sys.path[:0] = [_HERE, f"{_ROOT}/usr/local/Ascend/driver/tools/ascend-sim", "/opt/ascend-sim/fakes"]
if TYPE_CHECKING:
    from ascend_fakes import simstate
else:
    import simstate

COMPONENTS = ((0, "nve"), (3, "uefi"), (8, "imu"), (9, "imp"))
USAGE = (
    "Usage: upgrade-tool --device_index <-1|dev_id> <--component -1 --version|--system_version|--boot_status>"
)


def main(argv: list[str]) -> int:
    opts: dict[str, str] = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--device_index", "--component") and i + 1 < len(argv):
            opts[a] = argv[i + 1]
            i += 2
        elif a in ("--version", "--system_version", "--boot_status", "--hot_reset_flag"):
            opts[a] = ""
            i += 1
        else:
            print(USAGE)
            return 1
    hw = simstate.load_hardware()
    if hw is None or not simstate.driver_version():
        print("dsmi init failed, the NPU driver is not loaded.")
        return 255
    index = opts.get("--device_index", "")
    if index != "-1" and not (index.isdigit() and hw.device(int(index))):
        print(f"Invalid device index: {index}")
        return 1
    ids = [d.logic_id for d in hw.devices] if index == "-1" else [int(index)]
    out: list[str] = []
    if "--boot_status" in opts:
        out = [f"Get device boot status succeed for deviceId({d}), boot status:16" for d in ids]
    elif "--system_version" in opts:
        ver = simstate.driver_version()
        for d in ids:
            out += [
                f"Get system version({ver}) succeed, deviceId({d})",
                f'\t{{"device_id":{d}, "version":{ver}}}',
            ]
    elif "--version" in opts and opts.get("--component") == "-1":
        fw = simstate.firmware_version(hw)
        for d in ids:
            for ctype, name in COMPONENTS:
                if fw is None:
                    out.append(f"Get component version failed for deviceId({d}), componentType({ctype}).")
                    continue
                out += [
                    f"Get component version({fw}) succeed for deviceId({d}), componentType({ctype}).",
                    f'\t{{"device_id":{d}, "component":{name}, "version":{fw}}}',
                ]
    elif "--hot_reset_flag" in opts:
        out = [f"Set hot reset flag succeed for deviceId({d})." for d in ids]
    else:
        print(USAGE)
        return 1
    print("\n".join(["{", *out, "}"] if index == "-1" else out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
