# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""Ascend HDK `.run` packages: the options to run them with and what their exit code and console say
(standard library only).

Options (the Ascend HDK installation guide on hiascend.com; Ascend/ascend-deployer's runs):
  fresh driver    --nox11 --full --quiet --install-for-all
  fresh firmware  --nox11 --full --quiet
  over an older   --nox11 --upgrade --quiet
  integrity       --nox11 --check  ("SHA256 checksums are OK. All good.", public install logs; --check must
                  stand alone: the driver scripts refuse it with other options)
Outcomes (public install logs and github.com/verylucky01/driver driver_install.sh; rc 2 = "installation
successful but hotreset failed", install.sh):
  driver   "... successfully! The new version takes effect immediately."            rc 0, active now
           "... successfully! Reboot needed for installation/upgrade to take effect!" rc 2 (or 0), reboot
  firmware "... successfully! Reboot now or after driver installation for the installation/upgrade to take
           effect."                                                                 rc 0, reboot or driver
  errors   "[ERROR]The davinci nodes are occupied by some processes, ..."  devices busy
           "[ERROR]The list of missing tools: lspci,ifconfig,"               tools missing
           "[ERROR]ERR_NO:0x0091;ERR_DES:HwHiAiUser not exists! ..."          run user missing
           "[ERROR]Dkms install failed, ..." / "Driver_ko_install failed"      kernel module build failed
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

ANSI = re.compile(r"\x1b\[[0-9;]*m")
IMMEDIATE = "The new version takes effect immediately."
REBOOT = "Reboot needed for installation/upgrade to take effect!"
FIRMWARE_REBOOT = "Reboot now or after driver installation for the installation/upgrade to take effect"
CHECK_OK = "SHA256 checksums are OK. All good."
BUSY = "The davinci nodes are occupied by some processes"
MISSING_TOOLS = re.compile(r"The list of missing tools:\s*([^\s\[]*)")
USER_MISSING = re.compile(r"ERR_NO:0x009[16];ERR_DES:(.*)")
TOOL_PACKAGES = {"lspci": "pciutils", "ifconfig": "net-tools"}  # the installer names missing tools


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def install_args(kind: str, operation: str) -> list[str]:
    """Options for an install ("install": nothing of this kind yet) or an "upgrade" (another version is)."""
    if operation != "install":
        return ["--nox11", "--upgrade", "--quiet"]
    if kind == "driver":
        return ["--nox11", "--full", "--quiet", "--install-for-all"]
    return ["--nox11", "--full", "--quiet"]


def plain(output: str) -> str:
    return ANSI.sub("", output or "")


def _errors(text: str) -> list[str]:
    lines = []
    for line in text.splitlines():
        _, sep, rest = line.partition("[ERROR]")
        if sep:
            lines.append(rest.strip())
    return lines


def interpret(kind: str, rc: int, output: str) -> dict[str, Any]:
    """What a package run means. Keys: ok, reboot_required, reboot_reason, error, fix, busy, missing_tools."""
    text = plain(output)
    out: dict[str, Any] = {
        "ok": False,
        "reboot_required": False,
        "reboot_reason": "",
        "error": "",
        "fix": "",
        "busy": False,
        "missing_tools": [],
    }
    if BUSY in text:
        out.update(
            busy=True,
            error=f"the {kind} installer refused: the NPU devices are in use ({BUSY})",
            fix="stop the containers and processes that hold /dev/davinci* (see npu-smi info and "
            "`docker ps`), or set software.stop_serving: true in the site spec so that the drivers phase "
            "stops the serving containers for the upgrade",
        )
        return out
    tools = MISSING_TOOLS.search(text)
    if tools:
        names = [t for t in tools.group(1).split(",") if t]
        pkgs = sorted({TOOL_PACKAGES.get(t, t) for t in names})
        out.update(
            missing_tools=names,
            error="the {} installer needs tools that are not installed: {}".format(kind, ", ".join(names)),
            fix="install the packages {} (apt-get install / dnf install {}) and run again".format(
                ", ".join(pkgs), " ".join(pkgs)
            ),
        )
        return out
    user = USER_MISSING.search(text)
    if user:
        out.update(
            error=f"the {kind} installer refused its run user: {user.group(1).strip()}",
            fix="create the HwHiAiUser group and user (groupadd HwHiAiUser; useradd -g HwHiAiUser -d "
            "/home/HwHiAiUser -m HwHiAiUser -s /bin/bash) and run again",
        )
        return out
    if rc not in (0, 2):
        errors = _errors(text)
        last = (text.strip().splitlines() or ["no output"])[-1]
        out.update(
            error=f"the {kind} installer failed (rc {rc}): {'; '.join(errors[-3:]) or last}",
            fix="read /var/log/ascend_seclog/ascend_install.log on the host, fix the cause and run again",
        )
        if any("dkms" in e.lower() or "ko_install" in e.lower() for e in errors):
            out["fix"] = (
                "the kernel module did not build: check that the kernel headers of the running kernel "
                "(uname -r), dkms, gcc and make are installed, read "
                "/var/log/ascend_seclog/ascend_install.log, then uninstall, reboot and run again"
            )
        return out
    out["ok"] = True
    if rc == 2 or REBOOT in text:
        out.update(reboot_required=True, reboot_reason=f"{kind} installer: {REBOOT}")
    elif FIRMWARE_REBOOT in text:
        out.update(reboot_required=True, reboot_reason=f"{kind} installer: {FIRMWARE_REBOOT}.")
    return out


def check_passed(rc: int, output: str) -> str | None:
    """None when `--check` passed (rc 0 and the makeself integrity line), else why it did not."""
    text = plain(output)
    if rc == 0 and CHECK_OK in text:
        return None
    errors = _errors(text)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    detail = "; ".join(errors[-2:]) or (lines[-1] if lines else "no output")
    return f"rc {rc}: {detail}"
