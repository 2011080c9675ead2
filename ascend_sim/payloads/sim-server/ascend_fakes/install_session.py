"""The session of one simulated HDK `.run` package run (options, console and log output, user and device
checks), shared by the driver and firmware flows; installer.py is the entry point.

Console lines are `[Driver] [YYYY-mm-dd HH:MM:SS] msg` / `[Firmware] [...] msg` (drvEcho;
public install logs); the success/occupied/warning lines carry the ANSI colours of drvColorEcho
(`\\033[32m...\\033[0m`; the public logs show them stripped). Argument rules, messages and exit codes
follow the driver package scripts (verylucky01/driver scripts/package/custom/driver/common/scripts:
args_parse.sh, env_check.sh, driver_install.sh, install.sh): exit 0 = installed and active, 2 = installed
but a reboot is needed (install.sh: "2-installation successful but hotreset failed"), 1 = failed.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import shutil
import sys
import time
from typing import TYPE_CHECKING, Any, NoReturn

# Standalone script: find simstate.py beside the real file, in the installed driver, or in the server image.
_HERE, _ROOT = os.path.dirname(os.path.realpath(__file__)), os.environ.get("ASCEND_SIM_ROOT") or "/"
sys.path[:0] = [_HERE, f"{_ROOT}/usr/local/Ascend/driver/tools/ascend-sim", "/opt/ascend-sim/fakes"]
if TYPE_CHECKING:
    from ascend_fakes import simstate
else:
    import simstate

GREEN, YELLOW, RED, RESET = "\033[32m", "\033[33m", "\033[31m", "\033[0m"
LOG_FILE = simstate.INSTALL_LOG


class Exit(Exception):
    def __init__(self, rc: int) -> None:
        super().__init__(rc)
        self.rc = rc


class Session:
    """One run of a package: its manifest, the parsed options, console and log output."""

    def __init__(self, pkgdir: str, argv: list[str]) -> None:
        with open(os.path.join(pkgdir, "package.json"), encoding="utf-8") as f:
            self.pkg: dict[str, Any] = json.load(f)
        self.pkgdir = pkgdir
        self.argv = argv
        self.tag = "Driver" if self.pkg["kind"] == "driver" else "Firmware"
        self.runfile = os.path.basename(os.environ.get("ASCEND_SIM_RUNFILE") or self.pkg["package"])
        self.start_time = now()
        self.operation = "Install"
        self.opts: dict[str, str] = {}
        self.hw = simstate.load_hardware()

    # --- output (log_common.sh: drvEcho, drvColorEcho, log, exitLog, errorUsage, logOperation)
    def echo(self, msg: str) -> None:
        print(f"[{self.tag}] [{now()}] {msg}", flush=True)

    def log(self, msg: str) -> None:
        """log(): `[Driver] [date] [uid=0(root)] msg` appended to ascend_install.log (best effort)."""
        uid = os.geteuid()
        try:
            who = f"uid={uid}({pwd.getpwuid(uid).pw_name})"
        except KeyError:
            who = f"uid={uid}"
        path = simstate.p(LOG_FILE)
        with contextlib.suppress(OSError):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "a", encoding="utf-8") as f:
                f.write(f"[{self.tag}] [{now()}] [{who}] {msg}\n")

    def exit_log(self, rc: int) -> NoReturn:
        line = f"[INFO]End time: {now()}"
        self.echo(line)
        self.log(line)
        raise Exit(rc)

    def error(self, msg: str, rc: int = 1, operation_failed: bool = False) -> NoReturn:
        self.log(msg)
        self.echo(msg)
        if operation_failed:
            self.operation_log("failed")
        self.exit_log(rc)

    def operation_log(self, result: str) -> None:
        level = {"Upgrade": "MINOR", "Install": "SUGGESTION", "Uninstall": "MAJOR"}.get(
            self.operation, "UNKNOWN"
        )
        cmd = " ".join(self.argv)
        detail = (
            f"cmdlist={cmd}."
            if self.operation != "Install"
            else f"install_type={self.install_type}; cmdlist={cmd}."
        )
        path = simstate.p(simstate.OPERATION_LOG)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(
                f"{self.operation} {level} root {self.start_time} 127.0.0.1 {self.runfile} {result} "
                f"{detail}\n"
            )

    @property
    def install_type(self) -> str:
        return next((t for t in ("full", "run", "devel", "docker", "debug") if t in self.opts), "")

    def unrecognized(self, arg: str | None) -> NoReturn:
        if arg is None:  # errorUsage without an argument: no End time
            self.echo(
                "[ERROR]ERR_NO:0x0004;ERR_DES: Unrecognized parameters. Try './xxx.run --help' for more "
                "information."
            )
            raise Exit(1)
        self.echo(
            f"[ERROR]ERR_NO:0x0004;ERR_DES: Unrecognized parameters: {arg}. Try './xxx.run --help' for more "
            "information."
        )
        self.exit_log(1)

    # --- common steps
    def start(self) -> None:
        """startLog + the log file lines every run prints first (sample 6a)."""
        line = f"[INFO]Start time: {self.start_time}"
        self.echo(line)
        self.log(line)
        self.echo(f"[INFO]LogFile: {LOG_FILE}")
        self.echo(f"[INFO]OperationLogFile: {simstate.OPERATION_LOG}")
        self.log(f"[INFO]UserCommand: {self.runfile} {' '.join(self.argv)}")
        if os.geteuid() != 0:  # isRoot (args_parse.sh)
            self.echo(
                "[ERROR]ERR_NO:0x0093;ERR_DES:do not have root permission, operation failed, please use root "
                "permission!"
            )
            raise Exit(1)

    def check_product(self) -> None:
        """checkArch / checkDriverProduct (args_parse.sh): hardware.json's arch and PCI device must match."""
        hw_arch = (self.hw.raw.get("arch") if self.hw else None) or ""
        if hw_arch and hw_arch.replace("-", "_") != self.pkg["arch"].replace("-", "_"):
            self.echo(
                f"[ERROR]{RED}Arch mismatch, src package is {self.pkg['arch']}, cur os is {hw_arch} {RESET}"
            )
            self.exit_log(1)
        if self.hw is None or self.hw.family != self.pkg["chip_family"]:
            self.echo("[ERROR]The current installation package and environment is not match, please check.")
            raise Exit(1)

    def check_free_space(self, need_mb: int) -> None:
        """checkFreeSpace (env_check.sh); faults.json disk_full simulates a full disk."""
        if simstate.faults().get("disk_full"):
            self.error(
                f"[ERROR]free space only 12M, cannot install {self.tag.lower()} package (greater than "
                f"{need_mb}M), please make sure enough space under the installation path"
            )

    def progress(self, percent: int, space: bool = False) -> None:
        msg = f"[INFO]upgradePercentage:{' ' if space else ''}{percent}%"  # driver 6b / firmware 6c
        self.echo(msg)
        self.log(msg)

    def warn_no_power_off(self) -> None:
        self.echo(
            f"[WARNING]{YELLOW}Do not power off or restart the system during the installation/upgrade{RESET}"
        )

    def update_install_info(self, values: dict[str, str]) -> None:
        """updateInstallParam: each key is deleted and appended again (common.sh)."""
        lines = [
            ln
            for ln in simstate.read_text(simstate.INSTALL_INFO).splitlines()
            if ln.strip() and ln.partition("=")[0] not in values
        ]
        lines += [f"{k}={v}" for k, v in values.items()]
        simstate.write_text(simstate.INSTALL_INFO, "".join(f"{ln}\n" for ln in lines), 0o644)

    def drop_install_info(self, keys: tuple[str, ...]) -> None:
        lines = [
            ln
            for ln in simstate.read_text(simstate.INSTALL_INFO).splitlines()
            if ln.strip() and ln.partition("=")[0] not in keys
        ]
        if any("Install_Path_Param" in ln for ln in lines):
            simstate.write_text(simstate.INSTALL_INFO, "".join(f"{ln}\n" for ln in lines), 0o644)
        else:
            simstate.remove(simstate.INSTALL_INFO)

    def package_version_info(self) -> str:
        with open(os.path.join(self.pkgdir, "version.info"), encoding="utf-8") as f:
            return f.read()


def now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S")


def devices_busy() -> list[str]:
    """Why the davinci nodes are occupied, like checkUserDocker (common.sh), or [] when they are free.

    Mechanisms: (0) a process with an open file descriptor on a node (/proc/<pid>/fd, as checkUserProcess in
    common.sh looks; the simulator's npu-exporter holds them as the real one's DCMI handles do);
    (1) /var/lib/ascend-sim/processes.json lists a process on any device (written by the fake vLLM
    server / runtime); (2) $ASCEND_SIM_DEVICES_BUSY=1 (tests, fault injection); (3) on a real simulated server
    (ASCEND_SIM_ROOT unset or /): a running container of the server's docker engine has a /dev/davinci* device
    (`docker ps -q` + `docker inspect`, as the real installer does)."""
    reasons = [
        f"/dev/davinci{dev} has used by process {procs[0].get('pid')}"
        for dev, procs in sorted(simstate.processes().items())
        if procs
    ]
    reasons += _fd_holders()
    if os.environ.get("ASCEND_SIM_DEVICES_BUSY") == "1":
        reasons.append("/dev/davinci_manager has used by docker")
    if not simstate.under_test_root():
        reasons += _docker_users()
    return reasons


NODE_NAME = re.compile(r"^(davinci[0-9]+|davinci_manager|devmm_svm|hisi_hdc)$")


def _fd_holders() -> list[str]:
    """checkUserProcess: `proc:<node> has user process: <pids>` for the first node some process holds."""
    dev = simstate.p("/dev").rstrip("/") + "/"
    holders: dict[str, list[str]] = {}
    for pid in sorted((n for n in os.listdir("/proc") if n.isdigit()), key=int):
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"{fd_dir}/{fd}")
            except OSError:
                continue
            if target.startswith(dev) and NODE_NAME.match(target[len(dev):]):
                holders.setdefault("/dev/" + target[len(dev):], []).append(pid)
    return [f"proc:{node} has user process: {' '.join(sorted(set(pids), key=int))}"
            for node, pids in sorted(holders.items())][:1]  # fmt: skip


def _docker_users() -> list[str]:
    import subprocess

    try:
        ids = subprocess.run(["docker", "ps", "-q"], capture_output=True, text=True, timeout=20, check=False)
        if ids.returncode != 0 or not ids.stdout.split():
            return []
        res = subprocess.run(
            ["docker", "inspect", *ids.stdout.split()],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    for node in ("/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc", "/dev/davinci"):
        if node in res.stdout:
            return [f"{node} has used by docker"]
    return []


REQUIRED_TOOLS = ("lspci", "ifconfig")  # "[ERROR]The list of missing tools: lspci,ifconfig"


def missing_tools() -> list[str]:
    """Tools the driver installer needs that are not on PATH (pciutils, net-tools). Checked on a simulated
    server; under a test root only with $ASCEND_SIM_CHECK_TOOLS=1 (the test machine is not the host)."""
    if simstate.under_test_root() and os.environ.get("ASCEND_SIM_CHECK_TOOLS") != "1":
        return []
    return [tool for tool in REQUIRED_TOOLS if shutil.which(tool) is None]


def user_exists(name: str) -> bool:
    return any(ln.split(":", 1)[0] == name for ln in simstate.read_text("/etc/passwd").splitlines())


def group_gid(name: str) -> str | None:
    for ln in simstate.read_text("/etc/group").splitlines():
        parts = ln.split(":")
        if len(parts) >= 3 and parts[0] == name:
            return parts[2]
    return None


def user_in_group(user: str, group: str) -> bool:
    gid = group_gid(group)
    for ln in simstate.read_text("/etc/passwd").splitlines():
        parts = ln.split(":")
        if len(parts) >= 4 and parts[0] == user and parts[3] == gid:
            return True
    for ln in simstate.read_text("/etc/group").splitlines():
        parts = ln.split(":")
        if len(parts) >= 4 and parts[0] == group and user in parts[3].split(","):
            return True
    return False
