"""Driver package flow (args_parse.sh -> env_check.sh -> driver_install.sh -> install.sh of the real package).

Failure modes: missing run user/group (ERR_NO:0x0091/0x0096; default user HwHiAiUser or the recorded one, or
--install-username/--install-usergroup), devices occupied on over-install/upgrade/uninstall without --force
(install_session.devices_busy), DKMS failure when the package was built with fail=True or faults.json
driver_fails,
full disk (faults.json disk_full), package for another chip / arch (hardware.json), bad argument combinations.
takes_effect "reboot" (or --force) puts version.info into pending.json and exits 2; "immediately" activates
the driver (version.info, device nodes, any pending firmware: "Reboot now or after driver installation")
and exits 0.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ascend_fakes import simboot, simstate
    from ascend_fakes.install_session import (
        GREEN,
        RED,
        RESET,
        Session,
        devices_busy,
        group_gid,
        missing_tools,
        user_exists,
        user_in_group,
    )
else:
    import simboot
    import simstate
    from install_session import (
        GREEN,
        RED,
        RESET,
        Session,
        devices_busy,
        group_gid,
        missing_tools,
        user_exists,
        user_in_group,
    )

INSTALL_TYPES = ("full", "run", "devel", "docker", "debug")
SIM_DIR = simstate.SIM_TOOLS_DIR
LIBS = (
    "lib64/libascend_hal.so",
    "lib64/libdrvdsmi_host.so",
    "lib64/libtsdclient.so",
    "lib64/common/libc_sec.so",
    "lib64/driver/libascend_hal.so",
)
DCMI_FILES = ("dcmi_interface_api.h", "libdcmi.so")
TOOL_COPIES = {
    "/usr/local/bin/npu-smi": "npu_smi.py",
    "/usr/local/sbin/npu-smi": "npu_smi.py",
    f"{simstate.DRIVER_DIR}/tools/hccn_tool": "hccn_tool.py",
    f"{simstate.DRIVER_DIR}/tools/upgrade-tool": "upgrade_tool.py",
}
OCCUPIED = (
    "The davinci nodes are occupied by some processes, please stop processes and install or uninstall "
    "again"
)  # exitInstallInfo (driver_install.sh), sample 6e
UNINSTALL_SH = """#!/bin/bash
# Driver uninstall entry of the simulated HDK driver (the real package ships driver/script/uninstall.sh).
ASCEND_SIM_PKGDIR="${ASCEND_SIM_ROOT:-}/usr/local/Ascend/driver/tools/ascend-sim/package" \\
  exec python3 "${ASCEND_SIM_ROOT:-}/usr/local/Ascend/driver/tools/ascend-sim/installer.py" --uninstall "$@"
"""


def parse(s: Session) -> tuple[int, int]:
    """The option loop of args_parse.sh; returns (i, j): options that must stand alone / install types."""
    i = j = 0
    for arg in s.argv:
        name, eq, value = arg.partition("=")
        key = name.removeprefix("--")
        if arg in ("--uninstall", "--upgrade", "--version", "--quiet", "--force", "--check"):
            i += 1
            j += arg == "--upgrade"
            s.opts[key] = ""
        elif key in INSTALL_TYPES and not eq and arg.startswith("--"):
            i += 1
            j += 1
            if s.install_type:
                s.error(
                    "[ERROR]ERR_NO:0x0004;ERR_DES:only support one type: full/debug/run/docker/devel, "
                    "operation failed!"
                )
            s.opts[key] = ""
        elif arg in ("--install-for-all", "--norebuild"):
            s.opts[key] = ""
        elif eq and name in ("--install-username", "--install-usergroup", "--install-path"):
            i += 1
            if name == "--install-path" and not value:
                s.error("[ERROR]ERR_NO:0x0003;ERR_DES:install path is null, install failed")
            s.opts[key] = value
        elif arg.startswith("-"):
            s.unrecognized(arg)
        else:
            break
    s.operation = "Uninstall" if "uninstall" in s.opts else "Upgrade" if "upgrade" in s.opts else "Install"
    return i, j


def unsupported(s: Session, i: int, j: int) -> None:
    """unsupportParam (args_parse.sh)."""
    o = s.opts
    if "uninstall" in o:
        if i == 1 or ("force" in o and i == 2):
            return
        s.error("[ERROR]ERR_NO:0x0004;ERR_DES:uninstall can't use with other parameters except force.")
    if "version" in o or "check" in o:
        if i > 1:
            s.error("[ERROR]ERR_NO:0x0004;ERR_DES:version/check can't use with other parameters.")
        return
    if j != 1:
        need = "full/debug/run/upgrade/uninstall" if "force" in o else "full/debug/run/docker/upgrade/devel"
        s.error(f"[ERROR]ERR_NO:0x0004;ERR_DES:The parameter needs to be used with {need}.")
    if "install-for-all" in o and ("docker" in o or "upgrade" in o):
        s.error("[ERROR]ERR_NO:0x0004;ERR_DES:install-for-all param need used with full/debug/run/devel.")
    if "install-path" in o and "upgrade" in o:
        s.error("[ERROR]ERR_NO:0x0004;ERR_DES:install-path param need used with full/debug/run/docker/devel.")
    has_user, has_group = "install-username" in o, "install-usergroup" in o
    if has_user and has_group and "upgrade" in o:
        s.error(
            "[ERROR]ERR_NO:0x0004;ERR_DES:install-username and install-usergroup params need used with "
            "full/debug/run/docker/devel."
        )
    if has_user != has_group:
        msg = "[ERROR]ERR_NO:0x0004;ERR_DES:Username and usergroup are not specified at the same time."
        s.echo(msg)
        s.echo("[ERROR]Please input the right params and try again.")
        s.log(msg)
        s.exit_log(1)


def run_user(s: Session, info: dict[str, str]) -> tuple[str, str]:
    """getUserInfo + checkUserAndGroup (env_check.sh)."""
    rec_user, rec_group = info.get("UserName", ""), info.get("UserGroup", "")
    user = s.opts.get("install-username") or rec_user or "HwHiAiUser"
    group = s.opts.get("install-usergroup") or rec_group or "HwHiAiUser"
    given = "install-username" in s.opts or "install-usergroup" in s.opts
    if given and ((rec_user and user != rec_user) or (rec_group and group != rec_group)):
        s.error(
            "[ERROR]ERR_NO:0x0095;ERR_DES:The user and group are not same with last installation,do not "
            "support overwriting installation"
        )
    if not given and "uninstall" not in s.opts and "upgrade" not in s.opts:
        for what, recorded in (("username", rec_user), ("usergroup", rec_group)):
            if recorded == "root":
                s.error(
                    f"[ERROR]ERR_NO:0x0091;ERR_DES:{what} not permission for root, check "
                    "/etc/ascend_install.info"
                )
    if "uninstall" in s.opts:
        return user, group
    if not user_exists(user):
        s.error(f"[ERROR]ERR_NO:0x0091;ERR_DES:{user} not exists! Please add {user}")
    if group_gid(group) is None:
        s.error(f"[ERROR]ERR_NO:0x0091;ERR_DES:{group} group not exists! Please add {group} group")
    if not user_in_group(user, group):
        s.error(
            f"[ERROR]ERR_NO:0x0096;ERR_DES:{group} not right! Please check the relatianship of {user} and "
            f"{group}"
        )
    s.echo(f"[INFO]set username and usergroup, {user}:{group}")
    return user, group


def check_occupied(s: Session) -> None:
    """check_boot_status -> checkUserDocker -> exitInstallInfo; while a driver is up, not with --force."""
    if (
        "force" in s.opts
        or not simstate.driver_version()
        or not os.path.exists(simstate.p(simstate.UPGRADE_TOOL))
    ):
        return
    reasons = devices_busy()
    if not reasons:
        return
    s.log(f"[WARNING]{reasons[0]}")
    s.echo(f"[ERROR]{RED}{OCCUPIED}, details in : {simstate.INSTALL_LOG} {RESET}")
    s.log(f"[ERROR]{OCCUPIED}.")
    s.echo(
        "[INFO]If you want to install or uninstall the driver forcibly, add the force parameter. "
        "For details, "
        "see [--help]."
    )
    s.operation_log("failed")
    s.exit_log(1)


def confirm_overwrite(s: Session, installed: str) -> None:
    if "quiet" in s.opts or not installed:
        return
    s.echo(
        f"[INFO]Driver package has been installed on the path {simstate.ASCEND}, the version is {installed}, "
        f"and the version of this package is {s.pkg['version']},do you want to continue?  [y/n] "
    )
    while True:
        answer = sys.stdin.readline()
        if answer.strip() == "n":
            s.echo("[INFO]installation Stoped!")
            s.exit_log(0)
        if answer.strip() == "y":
            return
        s.echo("[ERROR]ERR_NO:0x0002;ERR_DES:input error, please input again!")
        if not answer:  # EOF: the real script would loop forever on `read`
            s.exit_log(1)


def copy_files(s: Session) -> None:
    """driver_file_copy: libraries, tools, npu-smi, dcmi, /lib/davinci.conf, /etc/hccn.conf."""
    src = os.path.join(s.pkgdir, "ascend-sim")
    for rel in LIBS:
        simstate.write_text(
            f"{simstate.DRIVER_DIR}/{rel}", f"ascend-sim placeholder {rel} {s.pkg['version']}\n", 0o755
        )
    dest = simstate.p(SIM_DIR)
    os.makedirs(dest, exist_ok=True)
    for name in sorted(os.listdir(src)):
        if name.endswith(".py"):
            shutil.copyfile(os.path.join(src, name), os.path.join(dest, name))
    pkg_copy = os.path.join(dest, "package")
    os.makedirs(pkg_copy, exist_ok=True)
    for name in ("package.json", "version.info"):
        shutil.copyfile(os.path.join(s.pkgdir, name), os.path.join(pkg_copy, name))
    for target, script in TOOL_COPIES.items():
        with open(os.path.join(src, script), encoding="utf-8") as f:
            simstate.write_text(target, f.read(), 0o755)
    simstate.write_text(f"{simstate.DRIVER_DIR}/script/uninstall.sh", UNINSTALL_SH, 0o755)
    for name in DCMI_FILES:
        simstate.write_text(f"{simstate.DCMI_DIR}/{name}", f"ascend-sim placeholder {name}\n", 0o644)
    if s.hw is not None:
        simstate.write_json(simstate.HARDWARE_COPY, s.hw.raw)
    simstate.write_text("/lib/davinci.conf", f"DAVINCI_HOME_PATH={simstate.ASCEND}\n", 0o444)
    if not os.path.exists(simstate.p(simstate.HCCN_CONF)):
        simstate.write_text(simstate.HCCN_CONF, "", 0o640)


def remove_files() -> None:
    for path in (simstate.DRIVER_DIR, simstate.DCMI_DIR):
        shutil.rmtree(simstate.p(path), ignore_errors=True)
    for path in ("/usr/local/bin/npu-smi", "/usr/local/sbin/npu-smi", "/lib/davinci.conf"):
        simstate.remove(path)
    simboot.remove_device_nodes()
    pending = simstate.read_json(simstate.PENDING_JSON, {})
    if isinstance(pending, dict) and pending.pop("driver", None) is not None:
        if pending:
            simstate.write_json(simstate.PENDING_JSON, pending)
        else:
            simstate.remove(simstate.PENDING_JSON)


def activate(s: Session) -> None:
    """What a successful hot reset does: the new driver is loaded and the devices come up."""
    simstate.write_text(simstate.DRIVER_VERSION_INFO, s.package_version_info(), 0o444)
    if s.hw is not None and s.install_type not in ("docker", "devel"):
        for note in simboot.ensure_device_nodes(s.hw.total):
            s.log(f"[WARNING]{note}")
            print(note, file=sys.stderr)
    pending = simstate.read_json(simstate.PENDING_JSON, {})
    if isinstance(pending, dict) and "driver" in pending:
        pending.pop("driver")
        simstate.write_json(simstate.PENDING_JSON, pending)
    simboot.apply_pending(("firmware",))


def install(s: Session, operation: str, user: str, group: str, over: bool) -> int:
    """installRun (driver_install.sh) + run_driver_install.sh; returns 0 (active) or 2 (reboot needed)."""
    info = simstate.read_kv(simstate.INSTALL_INFO)
    kind = s.install_type or info.get("Driver_Install_Type") or "full"
    updates = {} if info.get("UserName") else {"UserName": user}
    updates.update({} if info.get("UserGroup") else {"UserGroup": group})
    for_all = (
        "yes"
        if "install-for-all" in s.opts
        or (operation == "Upgrade" and info.get("Driver_Install_For_All") == "yes")
        else "no"
    )
    updates.update(
        {
            "Driver_Install_Type": kind,
            "Driver_Install_Path_Param": simstate.ASCEND,
            "Driver_Install_For_All": for_all,
            "Driver_Install_Mode": "normal",
        }
    )
    s.update_install_info(updates)
    s.echo("[INFO]driver install type: DKMS")
    s.progress(10)
    copy_files(s)
    s.progress(30)
    s.progress(40)
    if kind not in ("docker", "devel") and (s.pkg.get("fail") or simstate.faults().get("driver_fails")):
        s.log("[ERROR]dkms install failed")
        s.echo(f"[ERROR]{RED}Driver_ko_install failed, details in : {simstate.INSTALL_LOG} {RESET}")
        if over:  # uninstallRun already removed the old driver
            simstate.remove(simstate.DRIVER_VERSION_INFO)
            simboot.remove_device_nodes()
        s.echo(
            f"[INFO]Failed to {operation.lower()} driver package, please retry after uninstall and reboot!"
        )
        s.operation_log("failed")
        s.exit_log(1)
    s.progress(90)
    done = "upgraded" if operation == "Upgrade" else "installed"  # installationCompletionMessage
    if s.pkg.get("takes_effect") == "reboot" or "force" in s.opts:
        simboot.add_pending(
            "driver",
            s.pkg["version"],
            s.pkg["package"],
            {simstate.DRIVER_VERSION_INFO: s.package_version_info()},
        )
        s.progress(100)
        s.echo(
            f"[INFO]{GREEN}Driver package {done} successfully! {RESET}{RED}Reboot needed for "
            f"installation/upgrade to take effect! {RESET}"
        )
        return 2
    if kind not in ("docker", "devel"):
        s.echo("[INFO]Waiting for device startup...")
    activate(s)
    if kind not in ("docker", "devel"):
        s.echo("[INFO]Device startup success")
    s.progress(100)
    s.echo(
        f"[INFO]{GREEN}Driver package {done} successfully! The new version takes effect immediately. {RESET}"
    )
    return 0


def uninstall(s: Session) -> None:
    check_occupied(s)
    remove_files()
    s.drop_install_info(
        (
            "Driver_Install_Path_Param",
            "Driver_Install_Type",
            "Driver_Install_Mode",
            "Driver_Install_For_All",
            "Driver_Install_Status",
        )
    )
    s.operation_log("success")
    s.echo(
        f"[INFO]{GREEN}Driver package uninstalled successfully! Uninstallation takes effect immediately. "
        f"{RESET}"
    )
    s.exit_log(0)


def run(s: Session) -> None:
    if not s.argv:
        s.unrecognized(None)
    s.start()
    i, j = parse(s)
    s.check_product()
    info = simstate.read_kv(simstate.INSTALL_INFO)
    installed = simstate.driver_version() or ""
    if info.get("Driver_Install_Path_Param") and installed:
        s.echo(f"[INFO]base version is {installed}.")  # logBaseVersion
    if "upgrade" in s.opts or s.install_type:
        s.warn_no_power_off()
    unsupported(s, i, j)
    if "check" in s.opts:
        s.exit_log(0)
    if "version" in s.opts:
        s.echo(f"[INFO]version: {s.pkg['version']}")
        s.exit_log(0)
    user, group = run_user(s, info)
    if "uninstall" not in s.opts:
        missing = missing_tools()
        if missing:  # "[ERROR]The list of missing tools: lspci,ifconfig,"
            s.error(f"[ERROR]The list of missing tools: {','.join(missing)},", operation_failed=True)
        s.check_free_space(300)
    if not info.get("Driver_Install_Path_Param"):
        if "uninstall" in s.opts:
            s.error(
                "[ERROR]ERR_NO:0x0080;ERR_DES:Driver package is not installed on this device, "
                "uninstall failed",
                operation_failed=True,
            )
        rc = install(s, "Install", user, group, over=False)
    elif "uninstall" in s.opts:
        uninstall(s)
        return
    else:
        if "upgrade" not in s.opts:
            confirm_overwrite(s, installed)
        check_occupied(s)
        rc = install(s, "Upgrade" if "upgrade" in s.opts else "Install", user, group, over=True)
    s.operation_log("success")
    s.update_install_info({"Driver_Install_Status": "complete"})  # statusUpdate (install.sh)
    s.exit_log(rc)
