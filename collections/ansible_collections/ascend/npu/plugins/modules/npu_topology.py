#!/usr/bin/python
# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""ascend.npu.npu_topology: each NPU's CPU affinity and NUMA node, from npu-smi info -t topo (read-only)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: npu_topology
short_description: Read each NPU's CPU affinity and NUMA node
description:
  - Runs C(npu-smi info -t topo) and reads its CPU Affinity column (the CPUs local to each NPU) and the link
    type between every pair of NPUs (HCCS, SIO, PIX, PHB, SYS, ...).
  - The NUMA node of an NPU is the node whose CPUs hold its CPU affinity, from
    C(/sys/devices/system/node/node*/cpulist), else from the NPU PCI functions (vendor C(0x19e5)) under
    C(/sys/bus/pci/devices) (C(numa_node), C(local_cpulist)); null when none holds it or npu-smi prints no
    affinity (A3).
  - Changes nothing; supports check mode.
options:
  missing_ok:
    description: When npu-smi is not installed (no driver yet), return I(present=false) instead of failing.
    type: bool
    default: false
  root:
    description: Root of the host file system the files and tools are read from (a chroot or image tree).
    type: path
    default: /
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
author: ascend-orchestrator
"""

EXAMPLES = r"""
- name: NPU topology
  ascend.npu.npu_topology:
  register: topo
"""

RETURN = r"""
present:
  description: npu-smi is installed (false only with I(missing_ok); everything else is then empty).
  returned: always
  type: bool
npus:
  description: NPU id (as text) -> label, cpu_affinity (CPU list or null), numa_node (int or null), links.
  returned: always
  type: dict
  sample: {"0": {"label": "NPU0", "cpu_affinity": "144-167", "numa_node": 6, "links": {"NPU1": "HCCS"}}}
numa_nodes:
  description: NUMA node -> its CPU list, as used for the mapping (source says where they were read).
  returned: always
  type: dict
source:
  description: Where the NUMA nodes came from (system, pci or none).
  returned: always
  type: str
fact:
  description: What a local fact file keeps - npus (NPU id -> cpu_affinity, numa_node) and numa_source.
  returned: always
  type: dict
  sample: {"npus": {"0": {"cpu_affinity": "144-167", "numa_node": 6}}, "numa_source": "system"}
"""

import os
import re
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ascend.npu.plugins.module_utils import npu_host, npu_smi
from ansible_collections.ascend.npu.plugins.module_utils.command import execute

NODES = "/sys/devices/system/node"
PCI = "/sys/bus/pci/devices"


def system_nodes(root: str) -> dict[int, str]:
    base = npu_host.under(root, NODES)
    out: dict[int, str] = {}
    for name in os.listdir(base) if os.path.isdir(base) else []:
        m = re.match(r"^node(\d+)$", name)
        text = npu_host.read_text(root, f"{NODES}/{name}/cpulist") if m else None
        if m and text and text.strip():
            out[int(m.group(1))] = text.strip()
    return out


def pci_nodes(root: str) -> dict[int, str]:
    base = npu_host.under(root, PCI)
    out: dict[int, str] = {}
    for bus in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        dev = f"{PCI}/{bus}"
        if (npu_host.read_text(root, f"{dev}/vendor") or "").strip() != "0x19e5":
            continue
        node = (npu_host.read_text(root, f"{dev}/numa_node") or "").strip()
        cpus = (npu_host.read_text(root, f"{dev}/local_cpulist") or "").strip()
        if node.isdigit() and cpus:
            out.setdefault(int(node), cpus)
    return out


def node_of(affinity: str | None, nodes: dict[int, str]) -> int | None:
    cpus = npu_smi.parse_cpulist(affinity or "")
    if not cpus:
        return None
    return next((n for n in sorted(nodes) if cpus <= npu_smi.parse_cpulist(nodes[n])), None)


def topology(rows: list[dict[str, Any]], root: str) -> dict[str, Any]:
    """The NUMA node source whose nodes hold every NPU's affinity: the system's, else the NPUs' PCI ones."""
    wanted = [r["cpu_affinity"] for r in rows if r["cpu_affinity"]]
    source, nodes = "none", {}
    for name, found in (("system", system_nodes(root)), ("pci", pci_nodes(root))):
        if found and all(node_of(a, found) is not None for a in wanted):
            source, nodes = name, found
            break
    npus = {
        str(r["id"]): {
            "label": r["label"],
            "cpu_affinity": r["cpu_affinity"],
            "numa_node": node_of(r["cpu_affinity"], nodes),
            "links": r["links"],
        }
        for r in rows
    }
    fact = {
        "npus": {
            k: {"cpu_affinity": v["cpu_affinity"], "numa_node": v["numa_node"]} for k, v in npus.items()
        },
        "numa_source": source,
    }
    return {
        "npus": npus,
        "numa_nodes": {str(n): c for n, c in sorted(nodes.items())},
        "source": source,
        "fact": fact,
    }


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "missing_ok": {"type": "bool", "default": False},
            "root": {"type": "path", "default": "/"},
        },
        supports_check_mode=True,
    )
    root = module.params["root"]
    smi = npu_host.find_npu_smi(root)
    if not smi["present"] and module.params["missing_ok"]:
        module.exit_json(changed=False, present=False, npus={}, numa_nodes={}, source="none", fact={})
    if not smi["present"]:
        module.fail_json(
            msg="npu-smi is not installed ({}); the NPU topology comes from `npu-smi info -t topo`. Fix: run "
            "the drivers phase first (orchestrator apply SITE --phases drivers).".format(
                smi["problem"] or "looked in " + ", ".join(npu_host.NPU_SMI_PATHS)
            )
        )
    rc, out, err = execute([smi["real"], "info", "-t", "topo"], {"LC_ALL": "C"})  # module_utils/command.py
    rows = npu_smi.parse_topo(out) if rc == 0 else []
    if not rows:
        last = (out.strip() or err.strip() or "no output").splitlines()[-1]
        module.fail_json(msg=f"`npu-smi info -t topo` gave no NPU rows (rc {rc}: {last}). Fix: check the "
                         "driver with `npu-smi info`.")  # fmt: skip
    module.exit_json(changed=False, present=True, **topology(rows, root))


if __name__ == "__main__":
    main()
