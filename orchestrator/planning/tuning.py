"""Host tuning as the host-tuning role will apply it: sysctls split by the OS's kernel, IRQ policy.

- A sysctl that moved to debugfs (kernel.sched_migration_cost_ns left /proc/sys in Linux 5.13) is written
  to /sys/kernel/debug/<path> on newer kernels, or skipped with the reason when the kernel has neither
  (catalog: kernels.yaml).
- irqbalance is left alone by default. vllm-ascend's CPU-binding guide stops it only to keep IRQ affinity
  stable (docs/source/user_guide/feature_guide/cpu_binding.md @v0.23.0), so tuning.irq_affinity: npu-numa
  pins NPU IRQs to the NPU's NUMA node and disables irqbalance; tuning.irqbalance overrides explicitly.
"""

from __future__ import annotations

from collections.abc import Mapping

from orchestrator.catalog.kernels import os_kernel, placement
from orchestrator.planning.model import HostTuningPlan, SkippedSetting
from orchestrator.spec.site import SiteSpec

SysctlValue = int | str


def split_sysctls(
    settings: Mapping[str, SysctlValue], kernel: str
) -> tuple[dict[str, SysctlValue], dict[str, SysctlValue], list[SkippedSetting]]:
    """(sysctls, debugfs files, skipped) for these settings on this kernel line ('' = unknown: all sysctl)."""
    sysctls: dict[str, SysctlValue] = {}
    debugfs: dict[str, SysctlValue] = {}
    skipped: list[SkippedSetting] = []
    for name in sorted(settings):
        where, target = placement(name, kernel) if kernel else ("sysctl", name)
        if where == "sysctl":
            sysctls[name] = settings[name]
        elif where == "debugfs":
            debugfs[target] = settings[name]
        else:
            skipped.append(SkippedSetting(name, target))
    return sysctls, debugfs, skipped


def effective_irqbalance(spec: SiteSpec) -> str | None:
    """irqbalance as applied: the explicit setting, else disabled when IRQs are pinned, else left alone."""
    t = spec.tuning
    if t.irqbalance is not None:
        return t.irqbalance
    return "disabled" if t.irq_affinity is not None else None


def tuning_plan(spec: SiteSpec) -> HostTuningPlan:
    kernel = os_kernel(spec.os.distro, spec.os.version) or ""
    sysctls, debugfs, skipped = split_sysctls(spec.tuning.sysctls, kernel)
    return HostTuningPlan(
        kernel=kernel,
        sysctls=tuple(sysctls.items()),
        debugfs=tuple(debugfs.items()),
        skipped=tuple(skipped),
        irqbalance=effective_irqbalance(spec),
        irq_affinity=spec.tuning.irq_affinity,
    )
