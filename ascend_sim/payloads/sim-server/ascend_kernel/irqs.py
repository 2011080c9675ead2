"""Interrupts of the simulated server: /proc/interrupts, /proc/irq/<n>/, and the NPUs' PCI functions in
/sys/bus/pci/devices (numa_node, local_cpulist, msi_irqs/) through which tools map an IRQ to its NPU.

Formats from torvalds/linux v6.1 kernel/irq/proc.c (show_interrupts: a header of "CPU%-8d" columns after
prec+8 blanks, each line "%*d: " then "%10u " per online CPU, " %8s" chip name, " %*lu" hwirq, " %-8s"
Edge/Level, "  " action name; prec = digits of nr_irqs, at least 3), arch/arm64/kernel/smp.c (IPI lines,
"Err:"), drivers/pci/msi (an ITS-MSI hwirq is the PCI requester id << 11 | vector index).
The NPU driver registers, per NPU, "sq_send_trigger_irq" and right after it "cq_update_irq" (vllm-ascend
cpu_binding.py binds cq = sq + 1; its logs show NPU0 at 0000:c1:00.0 with sq 2753 and NPU1 at c2:00.0 with
3009): here NPU n gets sq = 2753 + 256 n and cq = sq + 1, and they exist only while the driver is installed.
Writing an affinity validates it like irq_affinity_proc_write / write_irq_affinity: a CPU beyond the last one
is ERANGE (list) or EOVERFLOW (mask), a mask with no online CPU is EINVAL; the per-CPU timer refuses with EIO.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass

from ascend_kernel import hw as hwmod
from ascend_kernel import values
from ascend_kernel.state import KernelError
from ascend_kernel.tree import Dir, File, Node, StaticDir, ro, static

NR_IRQS = 8192
PREC = 4  # digits of NR_IRQS
NPU_SQ_BASE = 2753
NPU_STRIDE = 256
IPIS = (
    "Rescheduling interrupts", "Function call interrupts", "CPU stop interrupts",
    "CPU stop (for crash dump) interrupts", "Timer broadcast interrupts", "IRQ work interrupts",
    "CPU wake-up interrupts",
)  # fmt: skip


@dataclass(frozen=True)
class Irq:
    number: int
    chip: str
    hwirq: int
    trigger: str
    name: str
    percpu: bool = False
    bus: str = ""  # the PCI function of an MSI


def irqs(hw: hwmod.Hardware, driver: bool) -> list[Irq]:
    out = [
        Irq(11, "GICv3", 27, "Level", "arch_timer", percpu=True),
        Irq(14, "GICv3", 33, "Level", "uart-pl011"),
    ]
    if driver:
        for f in hw.npu_functions():
            bus = int(f.bus.split(":")[1], 16)
            requester = (bus << 8) | (int(f.bus.split(":")[2].split(".")[0], 16) << 3)
            sq = NPU_SQ_BASE + NPU_STRIDE * f.logic_id
            out.append(Irq(sq, "ITS-MSI", requester << 11 | (2 * f.logic_id), "Edge", "sq_send_trigger_irq",
                           bus=f.bus))  # fmt: skip
            out.append(Irq(sq + 1, "ITS-MSI", requester << 11 | (2 * f.logic_id + 1), "Edge", "cq_update_irq",
                           bus=f.bus))  # fmt: skip
    return sorted(out, key=lambda i: i.number)


class Interrupts(hwmod.Reader):
    """NPU interrupts: /proc/interrupts, /proc/irq, the PCI functions' msi_irqs."""

    def current(self) -> list[Irq]:
        return irqs(self.hw, hwmod.driver_loaded())

    def key(self, irq: int) -> str:
        return f"/proc/irq/{irq}/smp_affinity_list"

    def affinity(self, irq: Irq) -> set[int]:
        if irq.percpu:
            return set(range(self.hw.cpus))
        stored = self.state.value(self.key(irq.number)) or self.state.value("/proc/irq/default_smp_affinity")
        return values.parse_cpulist(stored, self.hw.cpus) if stored else set(range(self.hw.cpus))

    def set_affinity(self, irq: Irq, cpus: set[int]) -> None:
        if irq.percpu:
            raise KernelError(errno.EIO, "Input/output error")
        if not cpus:
            raise KernelError(errno.EINVAL, "Invalid argument")
        self.state.set_value(self.key(irq.number), values.format_cpulist(cpus))

    def default_affinity(self) -> set[int]:
        stored = self.state.value("/proc/irq/default_smp_affinity")
        return values.parse_cpulist(stored, self.hw.cpus) if stored else set(range(self.hw.cpus))

    def text(self) -> str:
        n = self.hw.cpus
        lines = [" " * (PREC + 8) + "".join(f"CPU{c:<8d}" for c in range(n))]
        zeros = "".join(f"{0:10d} " for _ in range(n))
        for i in self.current():
            head = f"{i.number:{PREC}d}: {zeros}"
            lines.append(f"{head} {i.chip:>8} {i.hwirq:{PREC}d} {i.trigger:<8}  {i.name}")
        for k, name in enumerate(IPIS):
            lines.append(f"{'IPI':>{PREC - 1}}{k}: {zeros}      {name}")
        lines.append(f"{'Err':>{PREC}}: {0:10d}")
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------------------------------- /proc/irq

    def proc_irq(self) -> Dir:
        def entries() -> dict[str, Node]:
            out: dict[str, Node] = {"default_smp_affinity": self._mask_file(None)}
            for i in self.current():
                out[str(i.number)] = self._irq_dir(i)
            return out

        return StaticDir(entries)

    def _irq_dir(self, irq: Irq) -> Dir:
        n = self.hw.cpus

        def first() -> int:  # the effective target of an ITS MSI
            return min(self.affinity(irq))

        node = next((f.numa_node for f in self.hw.npu_functions() if f.bus == irq.bus), 0)
        entries: dict[str, Node] = {
            "smp_affinity": self._mask_file(irq),
            "smp_affinity_list": self._list_file(irq),
            "effective_affinity": ro(lambda: values.format_cpumask({first()}, n) + "\n"),
            "effective_affinity_list": ro(lambda: f"{first()}\n"),
            "affinity_hint": ro(values.format_cpumask(set(), n)),
            "node": ro(str(node)),
            "spurious": ro("count 0\nunhandled 0\nlast_unhandled 0 ms"),
            irq.name: static({}),
        }
        return static(entries)

    def _mask_file(self, irq: Irq | None) -> File:
        n = self.hw.cpus

        def show() -> str:
            cpus = self.default_affinity() if irq is None else self.affinity(irq)
            return values.format_cpumask(cpus, n) + "\n"

        def store(text: str) -> None:
            self._store(irq, values.parse_cpumask(text, n))

        return File(show, store)

    def _list_file(self, irq: Irq) -> File:
        n = self.hw.cpus
        return File(
            lambda: values.format_cpulist(self.affinity(irq)) + "\n",
            lambda text: self._store(irq, values.parse_cpulist(text, n)),
        )

    def _store(self, irq: Irq | None, cpus: set[int]) -> None:
        if irq is None:
            if not cpus:
                raise KernelError(errno.EINVAL, "Invalid argument")
            self.state.set_value("/proc/irq/default_smp_affinity", values.format_cpulist(cpus))
        else:
            self.set_affinity(irq, cpus)

    # ---------------------------------------------------------------------------- /sys/bus/pci/devices

    def pci_devices(self) -> Dir:
        def entries() -> dict[str, Node]:
            out: dict[str, Node] = {}
            by_bus: dict[str, list[Irq]] = {}
            for i in self.current():
                if i.bus:
                    by_bus.setdefault(i.bus, []).append(i)
            for f in self.hw.npu_functions():
                if f.bus in out:
                    continue
                cpus = self.hw.node_cpus(f.numa_node)
                msi = {str(i.number): ro("msi") for i in by_bus.get(f.bus, [])}
                dev: dict[str, Node] = {
                    "vendor": ro("0x19e5"),
                    "device": ro(f"0x{f.device_id}"),
                    "subsystem_vendor": ro("0x19e5"),
                    "subsystem_device": ro(f"0x{f.subsystem_id}"),
                    "class": ro("0x120000"),
                    "numa_node": ro(str(f.numa_node)),
                    "local_cpulist": ro(values.format_cpulist(cpus)),
                    "local_cpus": ro(values.format_cpumask(cpus, self.hw.cpus)),
                    "irq": ro("0"),
                    "enable": ro("1" if msi else "0"),
                }
                if msi:
                    dev["msi_irqs"] = static(msi)
                out[f.bus] = static(dev)
            return out

        return StaticDir(entries)
