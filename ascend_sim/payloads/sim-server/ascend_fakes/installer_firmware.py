"""Firmware package flow. Console text follows public install logs (--check, install); the option rules
mirror the driver's args_parse.sh. Texts the logs lack (no driver, uninstall, a failing package) are
plausible.

The firmware is written to the devices through the driver's upgrade-tool, so the install fails when no driver
is installed and loaded. The new firmware is active after a reboot or the next driver installation;
a package built with takes_effect="immediately" writes /usr/local/Ascend/firmware/version.info at once (the
simulator's shortcut), "reboot" puts it into pending.json. Exit 0 on success, 1 on failure.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ascend_fakes import simboot, simstate
    from ascend_fakes.install_session import Session
else:
    import simboot
    import simstate
    from install_session import Session

TYPES = ("full", "run", "upgrade", "uninstall")
DONE = "Reboot now or after driver installation for the installation/upgrade to take effect."  # sample 6c


def parse(s: Session) -> None:
    alone = 0
    for arg in s.argv:
        key = arg.removeprefix("--")
        if arg.startswith("--") and key in (*TYPES, "check", "version", "quiet", "force"):
            if key in TYPES and any(t in s.opts for t in TYPES):
                s.error(
                    "[ERROR]ERR_NO:0x0004;ERR_DES:only support one type: full/run/upgrade/uninstall, "
                    "operation "
                    "failed!"
                )
            alone += key in ("check", "version")
            s.opts[key] = ""
        elif arg.startswith("-"):
            s.unrecognized(arg)
        else:
            break
    s.operation = "Uninstall" if "uninstall" in s.opts else "Upgrade" if "upgrade" in s.opts else "Install"
    if alone and len(s.opts) > 1:
        s.error("[ERROR]ERR_NO:0x0004;ERR_DES:version/check can't use with other parameters.")
    if not alone and not any(t in s.opts for t in TYPES):
        s.error(
            "[ERROR]ERR_NO:0x0004;ERR_DES:The parameter needs to be used with full/run/upgrade/uninstall."
        )


def run(s: Session) -> None:
    if not s.argv:
        s.unrecognized(None)
    s.start()
    parse(s)
    s.check_product()
    if "check" in s.opts:
        s.exit_log(0)
    if "version" in s.opts:
        s.echo(f"[INFO]version: {s.pkg['version']}")
        s.exit_log(0)
    if "uninstall" in s.opts:
        uninstall(s)
    s.warn_no_power_off()
    if not os.path.exists(simstate.p(simstate.UPGRADE_TOOL)) or not simstate.driver_version():
        s.error(
            f"[ERROR]ERR_NO:0x0080;ERR_DES:The driver is not installed or not loaded "
            f"({simstate.UPGRADE_TOOL} "
            "is not available). Please install the driver package first.",
            operation_failed=True,
        )
    s.check_free_space(32)
    chips = s.hw.total if s.hw else 0
    s.progress(0, space=True)
    if s.pkg.get("fail"):
        s.error(
            f"[ERROR]Failed to upgrade the firmware of [{chips}] chips, details in : {simstate.INSTALL_LOG}",
            operation_failed=True,
        )
    s.progress(90, space=True)
    s.progress(100, space=True)
    s.echo(f"[INFO]The firmware of [{chips}] chips are successfully upgraded.")
    content = s.package_version_info()
    if s.pkg.get("takes_effect") == "reboot":
        simboot.add_pending(
            "firmware", s.pkg["version"], s.pkg["package"], {simstate.FIRMWARE_VERSION_INFO: content}
        )
    else:
        simstate.write_text(simstate.FIRMWARE_VERSION_INFO, content, 0o444)
    info = simstate.read_kv(simstate.INSTALL_INFO)
    kind = "full" if "upgrade" in s.opts else next(t for t in ("full", "run") if t in s.opts)
    s.update_install_info(
        {
            "Firmware_Install_Type": info.get("Firmware_Install_Type", kind) if "upgrade" in s.opts else kind,
            "Firmware_Install_Path_Param": simstate.ASCEND,
        }
    )
    done = "upgraded" if "upgrade" in s.opts else "installed"
    s.echo(f"[INFO]Firmware package {done} successfully! {DONE}")
    s.operation_log("success")
    s.exit_log(0)


def uninstall(s: Session) -> None:
    pending = simstate.read_json(simstate.PENDING_JSON, {})
    pending = pending if isinstance(pending, dict) else {}
    if not simstate.read_kv(simstate.INSTALL_INFO).get("Firmware_Install_Path_Param"):
        s.error(
            "[ERROR]ERR_NO:0x0080;ERR_DES:Firmware package is not installed on this device, uninstall failed",
            operation_failed=True,
        )
    simstate.remove(simstate.FIRMWARE_VERSION_INFO)
    if pending.pop("firmware", None) is not None:
        simstate.write_json(simstate.PENDING_JSON, pending) if pending else simstate.remove(
            simstate.PENDING_JSON
        )
    s.drop_install_info(("Firmware_Install_Type", "Firmware_Install_Path_Param"))
    s.echo(
        "[INFO]Firmware package uninstalled successfully! Reboot now for the uninstallation to take effect."
    )
    s.operation_log("success")
    s.exit_log(0)
