#!/usr/bin/env python3
"""npu-smi (simulated Ascend host): `info`, `info -l|-m|-h`,
`info -t board|health|memory|usages|topo [-i N [-c C]]`, `set -t reset -i N [-c C] [-m 1]`.
Installed by the fake driver package as /usr/local/bin/npu-smi and /usr/local/sbin/npu-smi; reads the state
described in simstate.py.

Messages and exit codes follow npucli (verylucky01/driver src/custom/dev_prod/user/npucli);
npu-smi exits with its negative error code, so the shell sees it modulo 256:
  dcmi init failure (no driver loaded / no /dev/davinci_manager):
    "dcmi module initialize failed. ret is -8005", rc 187;
  bad -i/-c/-t: "Invalid card id." / "Invalid chip id." + "Error parameter of -i" + usage, rc 215
    (NPU_ERR_CODE_INVALID_PARAMETER -9001);
  unknown command: "Command or option is not found." + help, rc 211 (NPU_ERR_CODE_INNER_ERR -9005);
  reset aborted: rc 200 (NPU_ERR_CODE_ABORT_OPERATE -9016); not supported: rc 217 (NPU_ERR_CODE_NOT_SUPPORT).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

# Standalone script: find simstate.py beside the real file, in the installed driver, or in the server image.
_HERE, _ROOT = os.path.dirname(os.path.realpath(__file__)), os.environ.get("ASCEND_SIM_ROOT") or "/"
sys.path[:0] = [_HERE, f"{_ROOT}/usr/local/Ascend/driver/tools/ascend-sim", "/opt/ascend-sim/fakes"]
if TYPE_CHECKING:
    from ascend_fakes import npu_smi_info, npu_smi_table, simstate
else:
    import npu_smi_info
    import npu_smi_table
    import simstate

RC_DCMI_INIT = -8005 & 0xFF
RC_INVALID = -9001 & 0xFF
RC_INNER = -9005 & 0xFF
RC_ABORT = -9016 & 0xFF
RC_NOT_SUPPORT = -9255 & 0xFF
USAGE_INFO = "Usage: npu-smi info <watch|proc|-h|-m|-l|-t type> [Options...]"  # sample 4c
HELP_INFO = """Usage: npu-smi info <watch|proc|-h|-m|-l|-t type> [Options...]

Commands:
       watch          Show all device's status in scrolling format
       proc           Show device's matrix process status in scrolling format
       -h, --help     Show this help text and exit
       -m             Show all device's mapping information
       -l             Show all device's topology information
       -t type        Show information for type
                      type: board, flash, memory, usages, sensors, temp, power, volt, mac-addr,
                            common, health, product, ecc, ip, sys-time, i2c_check, work-mode,
                            ecc-enable, p2p-enable, ssh-enable, license, customized-info,
                            device-share, nve-level, aicpu-config, pcie-err, mcu-monitor,
                            err-count, boot-area, vnpu-mode, info-vnpu, vnpu-svm, cpu-num-cfg,
                            first-power-on-date, proc-mem, phyid-remap, vnpu-cfg-recover, key-manage,
                            template-info, pkcs-enable, p2p-mem-cfg, pwm-mode, pwm-duty-ratio,
                            boot-select, topo.

Options:
       -i %d          Card ID
       -c %d          Chip ID
       -p %d          Chip Physical ID"""  # sample 4f (`npu-smi info -h`)
INFO_TYPES = HELP_INFO.split("type: ", 1)[1].split("Options:", maxsplit=1)[0]
KNOWN_TYPES = {t.strip(" \n.") for t in INFO_TYPES.split(",") if t.strip(" \n.")}
# Not from a sample: npu-smi's top-level help lists its commands; this short form names the simulated ones.
HELP_MAIN = """Usage: npu-smi [OPTIONS] COMMAND [ARGS]...

Commands:
       info           Show device's information
       set            Set device's configuration
       -h, --help     Show this help text and exit"""
RESET_RISK = (  # show_reset_risk() in npu_card_set.c
    "Resetting the standard PCIe card or NPU chip may cause a system hang or"
    " abnormal reset during service running.\n"
    "Are you sure you want to continue resetting?(Y/N)"
)


class Fail(Exception):
    def __init__(self, rc: int, *lines: str) -> None:
        super().__init__(rc)
        self.rc = rc
        self.lines = lines


def _bad_param(flag: str, what: str | None = None) -> Fail:
    lines = ([what] if what else []) + [f"Error parameter of {flag}", USAGE_INFO]
    return Fail(RC_INVALID, *lines)


def _options(args: list[str], flags: set[str], valued: set[str]) -> dict[str, str]:
    opts: dict[str, str] = {}
    i = 0
    while i < len(args):
        a = args[i]
        if a in flags:
            opts[a] = ""
            i += 1
        elif a in valued:
            if i + 1 >= len(args):
                raise _bad_param(a, {"-i": "Invalid card id.", "-c": "Invalid chip id."}.get(a))
            opts[a] = args[i + 1]
            i += 2
        else:
            raise _bad_param(a)
    return opts


def _card(hw: simstate.Hardware, visible: list[simstate.Device], value: str | None) -> list[simstate.Device]:
    if value is None:
        raise Fail(RC_INVALID, "This command must input card id.", USAGE_INFO)
    card = [d for d in visible if value.isdigit() and d.npu_id == int(value)]
    if not card:
        raise _bad_param("-i", "Invalid card id.")
    return card


def _chip(card: list[simstate.Device], value: str) -> simstate.Device:
    dev = next((d for d in card if value.isdigit() and d.chip_id == int(value)), None)
    if dev is None:
        raise _bad_param("-c", "Invalid chip id.")
    return dev


def visible_devices(hw: simstate.Hardware) -> list[simstate.Device]:
    """Chips whose /dev/davinciN exists: all of them on the host, the given ones inside a container."""
    return [d for d in hw.devices if os.path.lexists(simstate.p(f"/dev/davinci{d.logic_id}"))]


def info(hw: simstate.Hardware, args: list[str]) -> list[str]:
    if args and args[0] in ("-h", "--help"):
        return [HELP_INFO]
    opts = _options(args, {"-l", "-m"}, {"-t", "-i", "-c", "-p"})
    devices = visible_devices(hw)
    if "-l" in opts:
        return npu_smi_info.listing(hw, devices)
    if "-m" in opts:
        return npu_smi_info.mapping(hw, devices)
    kind = opts.get("-t")
    if kind is None:
        if "-i" in opts or "-c" in opts:
            raise Fail(RC_INVALID, "\nInput parameter format error.")
        lines = npu_smi_table.table(hw, devices, simstate.driver_version() or "NA")
        in_container = not os.path.isfile(simstate.p(simstate.HARDWARE_JSON))
        status = simstate.read_kv(simstate.INSTALL_INFO).get("Driver_Install_Status")
        if hw.family != "310p" and not in_container and status != "complete":
            lines.append(npu_smi_table.INCOMPLETE)
        return lines
    if kind == "topo":
        return npu_smi_info.topo(hw, devices)
    if kind not in KNOWN_TYPES:
        raise _bad_param("-t")
    if kind not in ("board", "health", "memory", "usages"):
        raise Fail(RC_NOT_SUPPORT, f"This device does not support querying {kind}.")
    card = _card(hw, devices, opts.get("-i"))
    if "-c" in opts:
        dev = _chip(card, opts["-c"])
        if kind == "board":
            return npu_smi_info.chip_board(hw, dev)
        if kind == "health":
            return npu_smi_info.chip_health(simstate.health(dev.logic_id))
        return {"memory": npu_smi_info.memory, "usages": npu_smi_info.usages}[kind](hw, [dev])
    return {
        "board": npu_smi_info.board,
        "health": npu_smi_info.card_health,
        "memory": npu_smi_info.memory,
        "usages": npu_smi_info.usages,
    }[kind](hw, card)


def _answers() -> list[str]:
    try:
        return sys.stdin.read().split()
    except (OSError, ValueError):
        return []


def set_cmd(hw: simstate.Hardware, args: list[str]) -> list[str]:
    opts = _options(args, set(), {"-t", "-i", "-c", "-m"})
    kind = opts.get("-t")
    if kind != "reset":
        if kind is None:
            raise _bad_param("-t")
        raise Fail(RC_NOT_SUPPORT, f"This device does not support setting {kind}.")
    card = _card(hw, visible_devices(hw), opts.get("-i"))
    devs = [_chip(card, opts["-c"])] if "-c" in opts else card
    target = "chip" if "-c" in opts else "card"
    kv = npu_smi_info.KV
    if hw.family == "310p" and "-c" in opts and devs[0].chip_id > 0:
        raise Fail(RC_NOT_SUPPORT, "SMP mode only support reset chip 0.")
    print(RESET_RISK, flush=True)
    answers = _answers()
    abort = [kv % ("Status", "Fail"), kv % ("Message", f"User aborts reset {target} by inband.")]
    if not answers or answers.pop(0) not in ("Y", "y"):
        raise Fail(RC_ABORT, *abort)
    if hw.family in ("910_93", "310p"):
        if hw.family == "910_93":
            print("It will reboot all devices, do you want to continue reboot? [y/n]", flush=True)
        else:
            print(
                "It's SMP mode, it will reboot all devices in this SMP system, "
                "do you want to continue reboot? [y/n]"
            )
        while answers and answers[0] not in ("y", "n", "Y", "N"):
            print("Error! Please input 'y' or 'n'!")
            answers.pop(0)
        if not answers:
            raise Fail(RC_INNER, *abort)
        if answers[0] in ("n", "N"):
            raise Fail(RC_ABORT, *abort)
    print(kv % ("Message", "resetting ..."), flush=True)
    procs = simstate.processes()
    if any(procs.get(d.logic_id) for d in devs):  # dcmi_set_device_reset fails while a process holds the chip
        raise Fail(RC_INNER, kv % ("Status", "Fail"), kv % ("Message", f"Failed to reset {target}"))
    return [kv % ("Status", "OK"), kv % ("Message", f"Reset {target} successfully.")]


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(HELP_MAIN)
        return 0
    if argv[0] not in ("info", "set"):
        print("Command or option is not found.")
        print(HELP_MAIN)
        return RC_INNER
    hw = simstate.load_hardware()
    if hw is None or not simstate.driver_version() or not os.path.lexists(simstate.p("/dev/davinci_manager")):
        print("dcmi module initialize failed. ret is -8005")  # npu_smi.c handle_dcmi_initialization
        return RC_DCMI_INIT
    try:
        lines = info(hw, argv[1:]) if argv[0] == "info" else set_cmd(hw, argv[1:])
    except Fail as fail:
        print("\n".join(fail.lines))
        return fail.rc
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:  # `npu-smi info | head`
        sys.exit(0)
