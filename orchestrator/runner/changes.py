"""What a check-mode run (plan, drift) found that an apply would change: one Change per host, phase and
changed task result (per loop item when the task loops).

The vocabulary shared by apply, plan and drift: the runner collects Changes from ansible-runner events
(PhaseTracker), `orchestrator plan` prints them, `orchestrator drift` turns them into its exit code and
its outputs (JSON, JUnit XML, Prometheus textfile). Plain data, JSON-ready.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


class ChangeKind(StrEnum):
    FILE = "file"  # a file or directory (copy, template, lineinfile, file): with its diff
    PACKAGE = "package"  # apt / pip packages installed, upgraded, removed
    SYSCTL = "sysctl"  # kernel parameters
    SERVICE = "service"  # systemd units started, stopped, enabled, restarted
    KERNEL = "kernel"  # modules, governor, THP, irqbalance, boot parameters
    NPU_NIC = "npu_nic"  # HCCN NPU-NIC addresses, netmasks, gateways, detect IPs (hccn_tool)
    DRIVER = "driver"  # NPU driver package (install, upgrade; reboot says whether it needs one)
    FIRMWARE = "firmware"  # NPU firmware (upgrade; takes effect after a reboot)
    IMAGE = "image"  # container images built, shipped, loaded
    WEIGHTS = "weights"  # model weight files copied, repaired
    REPLICA = "replica"  # serving containers (re)started; detail says why: image, arguments, weights
    GATEWAY = "gateway"  # the router container and its worker list
    OTHER = "other"


@dataclass(frozen=True)
class Change:
    phase: str
    host: str
    task: str  # the task's name as the playbook prints it
    action: str  # the module (FQCN when known), e.g. ansible.posix.sysctl
    kind: ChangeKind
    item: str = ""  # the loop item's label, "" for a task without a loop
    detail: str = ""  # one line a person reads: "vm.swappiness 60 -> 10", "restart: image differs"
    diff: str = ""  # unified diff (files) when Ansible produced one, else ""
    reboot: bool = False  # takes effect only after a reboot (driver / firmware upgrades)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["kind"] = str(self.kind)
        return out
