#!/usr/bin/python
"""ascend.npu.npu_irqs: the interrupts of the host's NPUs and the CPUs local to each NPU (read-only)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: npu_irqs
short_description: List the NPUs' interrupts and the CPUs of each NPU's NUMA node
description:
  - Reads C(/sys/bus/pci/devices/*) for Huawei (vendor C(0x19e5)) processing accelerators (class C(0x12xxxx))
    and returns each NPU's MSI interrupts (C(msi_irqs/)) and the CPUs local to its PCI function
    (C(local_cpulist)).
  - Read-only; the same result in check mode.
options: {}
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
author: ascend-orchestrator
"""

EXAMPLES = r"""
- name: NPU interrupts
  ascend.npu.npu_irqs:
  register: _irqs
- name: Pin each NPU interrupt to its NUMA node
  ascend.npu.kernel_param:
    settings: "{{ _irqs.affinity }}"
"""

RETURN = r"""
npus:
  description: One entry per NPU PCI function, in bus order.
  type: list
  elements: dict
  returned: always
  sample: [{"bus": "0000:c1:00.0", "numa_node": 6, "local_cpulist": "144-167", "irqs": [2753, 2754]}]
affinity:
  description: C(/proc/irq/<n>/smp_affinity_list) -> the CPU list local to the interrupt's NPU.
  type: dict
  returned: always
"""

import os
from typing import Any

from ansible.module_utils.basic import AnsibleModule

PCI = "/sys/bus/pci/devices"
HUAWEI = "0x19e5"
ACCELERATOR_CLASS = "0x12"


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


def npus(root: str = PCI) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for bus in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        dev = os.path.join(root, bus)
        if _read(f"{dev}/vendor") != HUAWEI or not _read(f"{dev}/class").startswith(ACCELERATOR_CLASS):
            continue
        msi = os.path.join(dev, "msi_irqs")
        irqs = sorted(int(n) for n in os.listdir(msi) if n.isdigit()) if os.path.isdir(msi) else []
        node = _read(f"{dev}/numa_node")
        out.append(
            {
                "bus": bus,
                "numa_node": int(node) if node.lstrip("-").isdigit() else -1,
                "local_cpulist": _read(f"{dev}/local_cpulist"),
                "irqs": irqs,
            }
        )
    return out


def main() -> None:
    module = AnsibleModule(argument_spec={}, supports_check_mode=True)
    found = npus()
    affinity = {
        f"/proc/irq/{irq}/smp_affinity_list": npu["local_cpulist"]
        for npu in found
        if npu["local_cpulist"]
        for irq in npu["irqs"]
    }
    module.exit_json(changed=False, npus=found, affinity=affinity)


if __name__ == "__main__":
    main()
