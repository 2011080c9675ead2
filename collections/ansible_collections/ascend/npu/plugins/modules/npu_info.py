#!/usr/bin/python
# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""ascend.npu.npu_info: read-only facts about a host's Ascend NPUs, driver and firmware."""

from __future__ import annotations

DOCUMENTATION = r"""
module: npu_info
short_description: Read the Ascend NPU driver, firmware and device state of a host
description:
  - Reads C(/usr/local/Ascend/driver/version.info), C(/usr/local/Ascend/firmware/version.info) and
    C(/etc/ascend_install.info), runs C(npu-smi info), C(npu-smi info -l), C(npu-smi info -m) and
    C(npu-smi info -t board -i N) for every NPU, C(upgrade-tool --device_index -1 --boot_status) when the
    driver ships it, and lists running containers that were given NPU device nodes.
  - Checks the driver/firmware pair in both directions from the two version.info files
    (C(compatible_version_fw) of the driver, C(compatible_version_drv) of the firmware).
  - Changes nothing; supports check mode.
options:
  boards:
    description: Query C(npu-smi info -t board -i N) for every NPU (active Software/Firmware Version).
    type: bool
    default: true
  containers:
    description: List running Docker containers that hold NPU device nodes (C(docker ps) + C(docker inspect)).
    type: bool
    default: true
  holders:
    description: List processes with an open file descriptor on an NPU device node (C(/proc/<pid>/fd), as
      the driver installer's checkUserProcess looks); the installer refuses an upgrade while one runs.
    type: bool
    default: false
  root:
    description: Root of the host file system the files and tools are read from (a chroot or image tree).
    type: path
    default: /
  driver_version:
    description: The driver version the host should run (the spec's); compared by meaning in C(wanted).
    type: str
  firmware_version:
    description: The firmware version the host should run (the spec's); compared by meaning in C(wanted).
    type: str
author: ascend-orchestrator
"""

EXAMPLES = r"""
- name: Read the NPU state
  ascend.npu.npu_info:
  register: npu

- name: Show the active driver
  ansible.builtin.debug:
    msg: "{{ npu.active.software_version }}"
"""

RETURN = r"""
driver:
  description: The installed driver (version.info); installed false when there is none; present and
    readable say whether the file exists and could be read.
  returned: always
  type: dict
  sample: {"installed": true, "version": "25.5.1", "info": {"compatible_version_fw": "[7.0.0,8.9.9]"}}
firmware:
  description: The installed firmware package (version.info); the factory firmware has none.
  returned: always
  type: dict
install_info:
  description: /etc/ascend_install.info as a dict.
  returned: always
  type: dict
install_info_file:
  description: path, present and readable of /etc/ascend_install.info.
  returned: always
  type: dict
pci_functions:
  description: Huawei PCI functions in /sys/bus/pci/devices (vendor 0x19e5) - address and device id - seen
    with or without the NPU driver.
  returned: always
  type: list
compatibility:
  description: The pair in both directions from the version.info files (ok, driver_accepts_firmware,
    firmware_accepts_driver, problems).
  returned: always
  type: dict
npu_smi:
  description: present, path, usable (npu-smi info exits 0) and error (its last line otherwise).
  returned: always
  type: dict
npus:
  description: NPU cards from npu-smi info -l (npu_id, chip_count).
  returned: always
  type: list
chips:
  description: NPU chips from npu-smi info -m with their health from npu-smi info (npu_id, chip_id,
    logic_id, phy_id, name, health).
  returned: always
  type: list
boards:
  description: Per NPU from npu-smi info -t board (software_version, firmware_version, compatibility,
    pci_device_id, chip_count).
  returned: always
  type: list
active:
  description: What the boards agree on (software_version, firmware_version, compatibility; null when they
    differ, see mixed and the plural lists).
  returned: always
  type: dict
health:
  description: ok (every chip OK) and unhealthy (chips whose health is not OK).
  returned: always
  type: dict
processes:
  description: Processes npu-smi shows on the NPUs (npu_id, chip, pid, name, memory_mb).
  returned: always
  type: list
containers:
  description: checked, reason, and items (id, name, image, devices) of running containers given NPU nodes.
  returned: always
  type: dict
holders:
  description: checked, reason, and items (pid, comm, cmdline, nodes) of processes holding NPU device nodes;
    checked false with reason "not requested" unless holders is true.
  returned: always
  type: dict
boot_status:
  description: available, devices (device id -> boot status, 16 = started), all_booted, error.
  returned: always
  type: dict
wanted:
  description: The given driver_version / firmware_version held to the host, compared by meaning (25.0.RC1
    equals 25.0.rc1) - driver_installed, driver_active, firmware_installed (a factory firmware without
    version.info counts as installed at the version it runs; firmware_factory says so), firmware_active,
    firmware_installed_version and current (all four; null when a version was not given).
  returned: always
  type: dict
"""

import os
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ascend.npu.plugins.module_utils import npu_host, version_info
from ansible_collections.ascend.npu.plugins.module_utils.command import execute


def gather(module: AnsibleModule) -> dict[str, Any]:
    root = module.params["root"]

    def run(argv: Any) -> Any:
        return execute(argv, {"LC_ALL": "C"})  # not module.run_command: module_utils/command.py

    driver = npu_host.version_file(root, "driver")
    firmware = npu_host.version_file(root, "firmware")
    install_text = npu_host.read_text(root, version_info.INSTALL_INFO)
    smi = npu_host.find_npu_smi(root)
    state: dict[str, Any] = {"usable": False, "error": smi["problem"] or "npu-smi is not installed",
                             "npus": [], "chips": [], "processes": [], "boards": []}  # fmt: skip
    if smi["present"]:
        state = npu_host.npu_smi_state(run, smi["real"], module.params["boards"])
    active = npu_host.summarise_boards(state["boards"])
    unhealthy = [c for c in state["chips"] if c.get("health") not in ("OK", None)]
    docker = module.get_bin_path("docker") if module.params["containers"] else None
    containers = (
        npu_host.device_containers(run, docker)
        if module.params["containers"]
        else {"checked": False, "reason": "not requested", "items": []}
    )
    return {
        "changed": False,
        "root": root,
        "driver": driver,
        "firmware": firmware,
        "install_info": version_info.parse_kv(install_text) if install_text is not None else {},
        "install_info_file": {
            "path": version_info.INSTALL_INFO,
            "present": os.path.lexists(npu_host.under(root, version_info.INSTALL_INFO)),
            "readable": install_text is not None,
        },
        "pci_functions": npu_host.pci_functions(root),
        "compatibility": version_info.pair_check(
            driver["info"],
            firmware["info"],
            firmware_version=firmware["version"] or active["firmware_version"],
        ),
        "npu_smi": {
            "present": smi["present"],
            "path": smi["path"],
            "usable": state["usable"],
            "error": state.get("error", ""),
        },
        "npus": state["npus"],
        "chips": state["chips"],
        "boards": state["boards"],
        "active": active,
        "health": {"ok": bool(state["chips"]) and not unhealthy, "unhealthy": unhealthy},
        "processes": state["processes"],
        "containers": containers,
        "holders": (
            npu_host.device_holders(root)
            if module.params["holders"]
            else {"checked": False, "reason": "not requested", "items": []}
        ),
        "boot_status": npu_host.boot_status(run, root),
        "wanted": version_info.wanted_state(
            driver["version"],
            firmware["version"],
            active,
            module.params["driver_version"],
            module.params["firmware_version"],
        ),
    }


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "boards": {"type": "bool", "default": True},
            "containers": {"type": "bool", "default": True},
            "holders": {"type": "bool", "default": False},
            "root": {"type": "path", "default": "/"},
            "driver_version": {"type": "str"},
            "firmware_version": {"type": "str"},
        },
        supports_check_mode=True,
    )
    if not os.path.isdir(module.params["root"]):
        module.fail_json(
            msg="root {} is not a directory; give the host's file system root".format(module.params["root"])
        )
    module.exit_json(**gather(module))


if __name__ == "__main__":
    main()
