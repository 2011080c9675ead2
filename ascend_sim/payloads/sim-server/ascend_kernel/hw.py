"""The simulated server's CPUs, NUMA nodes, memory and NPU PCI functions, from hardware.json.

hardware.json keys read here (all optional; `sim up` writes them): "cpus" (logical CPUs, default 192: four
48-core Kunpeng 920, the CPU affinity ranges npu-smi prints go up to 191), "numa_nodes" (default 8: two per
socket, 24 CPUs each, so npu-smi's "144-167" is node 6), "memory_gb" (default 1024; caps hugepage
reservations), "modules_at_boot" (kernel modules udev loads for the server's own NICs at every boot,
default none), "cpufreq" (false: no cpufreq driver, so no scaling_governor anywhere; default true).
Servers without NPUs ("cards": 0) default to 16 CPUs on one node.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ascend_kernel.state import DRIVER_VERSION_INFO, HARDWARE_JSON, State, p, read_text

if TYPE_CHECKING:
    from ascend_fakes import simstate
else:
    try:
        from ascend_fakes import simstate
    except ImportError:  # inside a server: /opt/ascend-sim/fakes is on sys.path as plain modules
        import simstate


@dataclass(frozen=True)
class NpuFunction:
    """One NPU as the kernel sees it: its PCI function and the NUMA node of its CPU affinity."""

    logic_id: int
    bus: str  # sysfs spelling: 0000:c1:00.0
    numa_node: int
    device_id: str
    subsystem_id: str


class Hardware:
    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.npu = simstate.Hardware(raw) if raw.get("cards") else None
        default_cpus, default_nodes = (192, 8) if self.npu else (16, 1)
        self.cpus = int(raw.get("cpus") or default_cpus)
        self.nodes = max(1, min(int(raw.get("numa_nodes") or default_nodes), self.cpus))
        self.memory_gb = int(raw.get("memory_gb") or 1024)
        self.modules_at_boot = [str(m) for m in raw.get("modules_at_boot") or []]
        self.cpufreq = raw.get("cpufreq", True) is not False

    @property
    def cpus_per_node(self) -> int:
        return max(1, self.cpus // self.nodes)

    def node_of(self, cpu: int) -> int:
        return min(cpu // self.cpus_per_node, self.nodes - 1)

    def node_cpus(self, node: int) -> set[int]:
        return {c for c in range(self.cpus) if self.node_of(c) == node}

    def npu_functions(self) -> list[NpuFunction]:
        if self.npu is None:
            return []
        out = []
        for d in self.npu.devices:
            first = self.npu.cpu_affinity(d.logic_id).split("-")[0].split(",")[0]
            cpu = int(first) if first.isdigit() else 0
            out.append(
                NpuFunction(
                    logic_id=d.logic_id,
                    bus=d.bus_id.lower(),
                    numa_node=self.node_of(min(cpu, self.cpus - 1)),
                    device_id=self.npu.pci_device_id,
                    subsystem_id=str(self.raw.get("pci_subsystem_id") or "0000"),
                )
            )
        return out


def load() -> Hardware:
    try:
        raw = json.loads(read_text(HARDWARE_JSON) or "{}")
    except ValueError:
        raw = {}
    return Hardware(raw if isinstance(raw, dict) else {})


class Live:
    """hardware.json as it is now: reloaded when the file changes (a card taken out of a server, or put
    back, shows in the emulated /sys/bus/pci/devices at once, as in the fake lspci and npu-smi)."""

    def __init__(self) -> None:
        self._key: tuple[int, int, int] | None = None
        self._hw = Hardware({})

    def __call__(self) -> Hardware:
        try:
            st = os.stat(p(HARDWARE_JSON))
            key: tuple[int, int, int] | None = (st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            key = None
        if key != self._key or key is None:
            self._key, self._hw = key, load()
        return self._hw


class Reader:
    """Base of the parts of the emulated kernel that read the kernel state and the hardware (as it is now)."""

    def __init__(self, state: State, hw: Callable[[], Hardware]) -> None:
        self.state = state
        self._hw = hw

    @property
    def hw(self) -> Hardware:
        return self._hw()


def driver_loaded() -> bool:
    """The NPU driver's kernel modules are in once its package is installed (the installer loads them)."""
    return "Version=" in read_text(DRIVER_VERSION_INFO)
