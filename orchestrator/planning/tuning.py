"""Host tuning as the host-tuning role will apply it: sysctls split by the OS's kernel, IRQ policy.

- A sysctl that moved to debugfs (kernel.sched_migration_cost_ns left /proc/sys in Linux 5.13) is written
  to /sys/kernel/debug/<path> on newer kernels, or skipped with the reason when the kernel has neither
  (catalog: kernels.yaml).
- irqbalance is left alone by default. vllm-ascend's CPU-binding guide stops it only to keep IRQ affinity
  stable (docs/source/user_guide/feature_guide/cpu_binding.md @v0.23.0), so tuning.irq_affinity: npu-numa
  pins NPU IRQs to the NPU's NUMA node and disables irqbalance; tuning.irqbalance overrides explicitly.
- Hugepages: 2 MiB pages (the default size) are the sysctl vm.nr_hugepages; any other size is written to
  /sys/kernel/mm/hugepages/hugepages-<size>kB/nr_hugepages (kernel admin-guide/mm/hugetlbpage.rst). THP is
  /sys/kernel/mm/transparent_hugepage/enabled.
- A server's overrides (servers[].overrides.sysctls / cpu_governor) are merged over the site's here: each
  NPU server's HostPlan.tuning is what the role applies there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from orchestrator.catalog.kernels import os_kernel, placement
from orchestrator.planning.model import HostTuningPlan, SkippedSetting
from orchestrator.spec.hardware import Server
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


DEFAULT_HUGEPAGE_KB = 2048
THP_SYSFS = "/sys/kernel/mm/transparent_hugepage/enabled"


def hugepages_sysfs(size_kb: int) -> str:
    return f"/sys/kernel/mm/hugepages/hugepages-{size_kb}kB/nr_hugepages"


def _split(spec: SiteSpec, kernel: str, settings: Mapping[str, SysctlValue]) -> HostTuningPlan:
    """The site's tuning with these sysctl settings, split for the kernel (hugepages included)."""
    t = spec.tuning
    sysctls, debugfs, skipped = split_sysctls(settings, kernel)
    sysfs: dict[str, SysctlValue] = {}
    if t.transparent_hugepages:
        sysfs[THP_SYSFS] = t.transparent_hugepages
    nr_hugepages = None
    if t.hugepages.count > 0 and t.hugepages.size_kb == DEFAULT_HUGEPAGE_KB:
        nr_hugepages = t.hugepages.count
    elif t.hugepages.count > 0:
        sysfs[hugepages_sysfs(t.hugepages.size_kb)] = t.hugepages.count
    return HostTuningPlan(
        kernel=kernel,
        sysctls=tuple(sysctls.items()),
        debugfs=tuple(debugfs.items()),
        skipped=tuple(skipped),
        irqbalance=effective_irqbalance(spec),
        irq_affinity=t.irq_affinity,
        governor=t.cpu_governor,
        nr_hugepages=nr_hugepages,
        sysfs=tuple(sysfs.items()),
    )


def tuning_plan(spec: SiteSpec) -> HostTuningPlan:
    """The site's tuning (group_vars/npu.yml)."""
    return _split(spec, os_kernel(spec.os.distro, spec.os.version) or "", spec.tuning.sysctls)


def host_tuning(spec: SiteSpec, site: HostTuningPlan, srv: Server) -> HostTuningPlan:
    """The site's tuning with the server's overrides (its sysctls over the site's, its governor)."""
    ov = srv.overrides
    out = _split(spec, site.kernel, {**spec.tuning.sysctls, **ov.sysctls}) if ov.sysctls else site
    return replace(out, governor=ov.cpu_governor) if ov.cpu_governor else out
