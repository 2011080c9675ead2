#!/usr/bin/python
# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""ascend.npu.hdk_package: an Ascend HDK driver or firmware .run package, verified, installed or upgraded."""

from __future__ import annotations

DOCUMENTATION = r"""
module: hdk_package
short_description: Install or upgrade an Ascend HDK driver or firmware .run package
description:
  - Verifies the package file's SHA-256 before anything runs (a mismatch never executes the file), then runs
    its C(--check) integrity test.
  - With I(state=present), installs it (C(--full --quiet), the driver also C(--install-for-all)) when no
    package of this kind is installed, upgrades it (C(--upgrade --quiet)) over another version, and does
    nothing when the same version is installed.
  - Interprets the installer's exit code (0, or 2 = installed but the hot reset failed) and messages ("The new
    version takes effect immediately.", "Reboot needed for installation/upgrade to take effect!", the
    firmware's "Reboot now or after driver installation ..."), and the refusals (devices occupied, missing
    tools, missing run user) with how to fix them.
  - In check mode reports what it would do without executing the package.
options:
  path:
    description: The .run file on the host.
    type: path
    required: true
  kind:
    description: What the package is.
    type: str
    choices: [driver, firmware]
    required: true
  version:
    description: The package's version (as in its file name and version.info), e.g. 25.5.1 or 7.8.0.6.201.
    type: str
    required: true
  sha256:
    description: Expected lower-case hex SHA-256 of the file; the package is not executed when it differs.
    type: str
  partner_version:
    description:
      - The version of the other package of the pair (the firmware for a driver, the driver for a firmware).
        When set, the package's own version.info (extracted with C(--noexec --extract), after the SHA-256
        check) must accept it (C(compatible_version_fw) of a driver, C(compatible_version_drv) of a
        firmware); otherwise nothing is installed. Skipped in check mode.
    type: str
  state:
    description: C(present) installs or upgrades; C(verified) only checks the SHA-256 and runs C(--check).
    type: str
    choices: [present, verified]
    default: present
  timeout:
    description: Seconds an installer run may take.
    type: int
    default: 3600
  root:
    description: Root of the host file system the version files and tools are read from.
    type: path
    default: /
author: ascend-orchestrator
"""

EXAMPLES = r"""
- name: Install or upgrade the NPU driver
  ascend.npu.hdk_package:
    path: /var/cache/ascend-orchestrator/Ascend-hdk-910b-npu-driver_25.5.1_linux-aarch64.run
    kind: driver
    version: 25.5.1
    sha256: 90dbac2b52c361da24e1f46f890dd08a491a9c7394cc5933fdff3f7db9188078
  register: driver
"""

RETURN = r"""
operation:
  description: none (the version is installed), install, upgrade or downgrade.
  returned: always
  type: str
args:
  description: The installer options used (or that would be used in check mode).
  returned: always
  type: list
previous_version:
  description: The version installed before (a firmware without version.info, the factory firmware, as
    npu-smi reports it).
  returned: always
  type: str
installed_version:
  description: Version in the kind's version.info after the run.
  returned: always
  type: str
active_version:
  description: The version npu-smi reports as running after the run (null when npu-smi is not usable).
  returned: always
  type: str
reboot_required:
  description: The installer said a reboot is needed, or the installed version is not the active one yet.
  returned: always
  type: bool
reboot_reason:
  description: Why a reboot is needed (the installer's words; in check mode, why one will be).
  returned: always
  type: str
reboot_expected:
  description: Check mode, a package to install - the change takes effect only after a reboot (every
    firmware installer says so; whether a driver takes effect at once, only its installer knows).
  returned: always
  type: bool
check:
  description: Result of the --check integrity test (passed, skipped).
  returned: always
  type: str
installer_rc:
  description: Exit code of the installer run (null when it did not run). Not named rc, which Ansible reads
    as failed when it is not 0 (an rc 2 install, "hot reset failed", succeeded and needs a reboot).
  returned: always
  type: int
stdout_lines:
  description: Installer console without colour codes.
  returned: always
  type: list
"""

import os
import shutil
import subprocess
import tempfile
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ascend.npu.plugins.module_utils import (
    npu_host,
    runpkg,
    version_info,
)
from ansible_collections.ascend.npu.plugins.module_utils.command import execute as run_to_end


def execute(module: AnsibleModule, args: list[str]) -> tuple[int, str]:
    """bash <package> <args>, the way ascend-deployer runs it; stdin closed so no prompt can wait."""
    argv = [module.get_bin_path("bash", required=True), module.params["path"], *args]
    env = dict(os.environ, LC_ALL="C")
    try:
        proc = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            timeout=module.params["timeout"],
            check=False,
        )
    except subprocess.TimeoutExpired:
        module.fail_json(
            msg=f"{module.params['path']} {' '.join(args)} did not finish within "
            f"{module.params['timeout']} s; the host may be half-installed. Fix: read "
            "/var/log/ascend_seclog/ascend_install.log on the host and run again (raise the timeout if the "
            "installer was still progressing)."
        )
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


def active_version(module: AnsibleModule, kind: str) -> str | None:
    """What the NPU boards report as running (npu-smi info -t board), or None."""
    smi = npu_host.find_npu_smi(module.params["root"])
    if not smi["present"]:
        return None

    def run(argv: Any) -> Any:
        return run_to_end(argv, {"LC_ALL": "C"})  # not module.run_command: module_utils/command.py

    state = npu_host.npu_smi_state(run, smi["real"], boards=True)
    active = npu_host.summarise_boards(state["boards"])
    value = active["software_version" if kind == "driver" else "firmware_version"]
    return str(value) if value else None


def decide(installed: str | None, running: str | None, wanted: str) -> str:
    """none when the wanted version is installed (or, for a firmware without version.info, running from
    flash); install when no package of this kind is installed; else upgrade or downgrade."""
    if version_info.same_version(installed or running, wanted):
        return "none"
    if not installed:
        return "install"
    try:
        return "upgrade" if version_info.compare(installed, wanted) < 0 else "downgrade"
    except ValueError:
        return "upgrade"


def verify_file(module: AnsibleModule, result: dict[str, Any]) -> None:
    path = module.params["path"]
    if not os.path.isfile(path):
        module.fail_json(msg="package {} is not on the host. Fix: copy it there first (the npu_{} role "
                         "does).".format(path, module.params["kind"]), **result)  # fmt: skip
    actual = runpkg.sha256_file(path)
    result["sha256"] = actual
    wanted = (module.params["sha256"] or "").strip().lower()
    if wanted and actual != wanted:
        module.fail_json(
            msg="refusing to run {}: its sha256 is {}, the spec says {}. Nothing was executed. Fix: put the "
            "right file at the package's source, or correct software.{}.sha256 in the site spec.".format(
                path, actual, wanted, module.params["kind"]
            ),
            refused=True,
            **result,
        )


def run_check(module: AnsibleModule, result: dict[str, Any]) -> None:
    rc, out = execute(module, ["--nox11", "--check"])
    problem = runpkg.check_passed(rc, out)
    if problem:
        result["stdout_lines"] = runpkg.plain(out).splitlines()
        module.fail_json(
            msg="{} failed its --check integrity test ({}); it was not installed. Fix: download the package "
            "again and compare its sha256 with Huawei's published value.".format(
                module.params["path"], problem
            ),
            **result,
        )
    result["check"] = "passed"


def package_accepts_partner(module: AnsibleModule, result: dict[str, Any]) -> None:
    """Extract the package (no installer runs) and hold its version.info to the partner's version."""
    kind, partner = module.params["kind"], module.params["partner_version"]
    tmp = tempfile.mkdtemp(prefix="hdk-package-")
    try:
        rc, out = execute(module, ["--nox11", "--noexec", "--extract=" + tmp])
        if rc != 0:
            tail = runpkg.plain(out).strip()[-300:]
            module.fail_json(msg="{} could not be extracted (rc {}): {}. Fix: download the package "
                             "again.".format(module.params["path"], rc, tail), **result)  # fmt: skip
        found = sorted((root.count(os.sep), os.path.join(root, "version.info"))
                       for root, _dirs, files in os.walk(tmp) if "version.info" in files)  # fmt: skip
        info = {}
        if found:
            with open(found[0][1], encoding="utf-8", errors="replace") as handle:
                info = version_info.parse_kv(handle.read())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    key = "compatible_version_fw" if kind == "driver" else "compatible_version_drv"
    other = "firmware" if kind == "driver" else "driver"
    accepted = version_info.accepts(info.get(key), partner)
    result["partner_check"] = {
        "key": key,
        "range": info.get(key),
        "partner_version": partner,
        "accepts": accepted,
    }
    if accepted is False:
        module.fail_json(
            msg="refusing the pair: the {} {} accepts {} versions {} ({} in its version.info), the spec "
            "pairs it with {} {}. Nothing was installed. Fix: pick a driver and firmware that accept each "
            "other (Huawei's compatibility list for the HDK release) in software.driver / "
            "software.firmware.".format(
                kind, module.params["version"], other, info.get(key), key, other, partner
            ),
            refused=True,
            **result,
        )


def expect_reboot(result: dict[str, Any]) -> None:
    """Check mode: whether the install a run would do takes effect only after a reboot (runpkg: the firmware
    installer always asks for one; the driver's decides at install time)."""
    if result["changed"] and result["kind"] == "firmware":
        result["reboot_expected"] = True
        result["reboot_reason"] = "firmware {} takes effect after a reboot".format(result["version"])


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "required": True},
            "kind": {"type": "str", "required": True, "choices": ["driver", "firmware"]},
            "version": {"type": "str", "required": True},
            "sha256": {"type": "str"},
            "partner_version": {"type": "str"},
            "state": {"type": "str", "default": "present", "choices": ["present", "verified"]},
            "timeout": {"type": "int", "default": 3600},
            "root": {"type": "path", "default": "/"},
        },
        supports_check_mode=True,
    )
    kind, wanted, root = module.params["kind"], module.params["version"], module.params["root"]
    before = npu_host.version_file(root, kind)["version"]
    active = active_version(module, kind)
    previous = before or (active if kind == "firmware" else None)
    operation = decide(before, active if kind == "firmware" else None, wanted)
    result: dict[str, Any] = {
        "changed": False,
        "kind": kind,
        "version": wanted,
        "operation": operation,
        "args": runpkg.install_args(kind, operation) if operation != "none" else [],
        "previous_version": previous,
        "installed_version": before,
        "active_version": active,
        "reboot_required": False,
        "reboot_reason": "",
        "reboot_expected": False,
        "check": "skipped",
        "installer_rc": None,
        "stdout_lines": [],
        "sha256": None,
    }
    if module.check_mode and not os.path.isfile(module.params["path"]):
        # check mode on a host the package was never staged to: the role's copy did not run, so there is
        # nothing to hash yet; report what an apply would do (stage, then install when the version differs)
        # (state verified only reads: it changes nothing, staged or not)
        result["changed"] = operation != "none" and module.params["state"] == "present"
        result["check"] = "not staged yet"
        expect_reboot(result)
        module.exit_json(**result)
    verify_file(module, result)
    if module.params["state"] == "verified":
        if not module.check_mode:
            run_check(module, result)
            if module.params["partner_version"]:
                package_accepts_partner(module, result)
        module.exit_json(**result)
    if operation == "none":
        if active and not version_info.same_version(active, wanted):
            result.update(
                reboot_required=True,
                reboot_reason=f"{kind} {wanted} is installed but {active} is running",
            )
        module.exit_json(**result)
    missing_tool = not os.path.isfile(npu_host.under(root, npu_host.UPGRADE_TOOL))
    # in check mode the driver this play would install first is not there yet: not an error
    if kind == "firmware" and missing_tool and not module.check_mode:
        module.fail_json(
            msg=f"the firmware package needs the driver's upgrade-tool ({npu_host.UPGRADE_TOOL}), which is "
            "not installed. Fix: install the driver first (a fresh host gets the driver, then the firmware).",
            **result,
        )
    result["changed"] = True
    if module.check_mode:
        expect_reboot(result)
        module.exit_json(**result)
    run_check(module, result)
    if module.params["partner_version"]:
        package_accepts_partner(module, result)
    rc, out = execute(module, result["args"])
    outcome = runpkg.interpret(kind, rc, out)
    result.update(installer_rc=rc, stdout_lines=runpkg.plain(out).splitlines(), busy=outcome["busy"],
                  missing_tools=outcome["missing_tools"])  # fmt: skip
    if not outcome["ok"]:
        module.fail_json(msg="{}. Fix: {}.".format(outcome["error"], outcome["fix"]), **result)
    after = npu_host.version_file(root, kind)["version"]
    result.update(
        installed_version=after,
        active_version=active_version(module, kind),
        reboot_required=outcome["reboot_required"],
        reboot_reason=outcome["reboot_reason"],
    )
    if not outcome["reboot_required"] and not version_info.same_version(after, wanted):
        module.fail_json(
            msg="the {} installer reported success without a reboot, but {} says {}, not {}. Fix: read "
            "/var/log/ascend_seclog/ascend_install.log on the host.".format(
                kind, npu_host.version_file(root, kind)["path"], after, wanted
            ),
            **result,
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
