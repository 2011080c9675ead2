"""Host tuning: CPU governor, sysctls, THP, irqbalance, hugepages, host RDMA NIC module options."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from orchestrator.spec.common import KernelInt, SpecModel

SysctlValue = KernelInt | str


def _default_sysctls() -> dict[str, SysctlValue]:
    # vllm-project/vllm-ascend optimization_and_tuning.md and the MindIE tuning guide (hiascend.com).
    # kernel.sched_migration_cost_ns is a debugfs file from Linux 5.13 on: the plan writes it where the
    # site's kernel keeps it (catalog kernels.yaml).
    return {"vm.swappiness": 0, "kernel.numa_balancing": 0, "kernel.sched_migration_cost_ns": 50000}


class Hugepages(SpecModel):
    size_kb: Literal[2048, 524288, 1048576] = Field(2048, description="Page size in kB (2M, 512M, 1G).")
    count: int = Field(
        0, ge=0, le=33554432, description="Pages to reserve (vm.nr_hugepages for the default size)."
    )


# RLIMIT_MEMLOCK in KiB (limits.conf units) or "unlimited". It caps the memory an unprivileged process
# may lock (getrlimit(2): since Linux 2.6.9 it governs unprivileged processes only); RDMA memory
# registration (HCCL over RoCE, host RDMA NICs) locks pages, and RDMA hosts remove the limit (e.g.
# openSUSE's torque pbs_mom.sysconfig: 'Set this to "unlimited" if using infiniband to remove the
# locked memory limit').
Memlock = Literal["unlimited"] | Annotated[int, Field(ge=64, le=2**42)]


class Tuning(SpecModel):
    cpu_governor: Literal["performance", "ondemand", "powersave", "schedutil", "conservative"] | None = Field(
        "performance", description="cpufreq governor on every core; null leaves it alone."
    )
    sysctls: dict[str, SysctlValue] = Field(
        default_factory=_default_sysctls,
        description="sysctl name -> value, written to /etc/sysctl.d; scheduler settings that newer kernels "
        "keep in debugfs (kernel.sched_migration_cost_ns from Linux 5.13) are written there instead, or "
        "skipped with the reason in the plan.",
    )
    transparent_hugepages: Literal["always", "madvise", "never"] | None = Field(
        "always", description="/sys/kernel/mm/transparent_hugepage/enabled; null leaves it alone."
    )
    irqbalance: Literal["enabled", "disabled"] | None = Field(
        None,
        description="irqbalance service; null: leave it as the OS has it, unless irq_affinity pins IRQs "
        "(then it is disabled).",
    )
    irq_affinity: Literal["npu-numa"] | None = Field(
        None,
        description="npu-numa: pin each NPU's IRQs to CPUs of its NUMA node and disable irqbalance, as "
        "vllm-ascend's CPU-binding guide does for stable IRQ affinity; null: IRQs are not managed.",
    )
    hugepages: Hugepages = Field(default_factory=Hugepages)
    rdma_modules: dict[str, dict[str, KernelInt | str]] = Field(
        default_factory=dict,
        description="Host RDMA NIC kernel module -> options (/etc/modprobe.d). Only real module parameters; "
        "NPU NICs are configured with hccn_tool, not here.",
    )
    memlock: Memlock | None = Field(
        "unlimited",
        description="Locked-memory limit (RLIMIT_MEMLOCK, soft and hard, every user) in KiB or 'unlimited', "
        "written to /etc/security/limits.d: applies to new PAM sessions (logins, su). RDMA memory "
        "registration locks pages against it. null leaves the limits alone.",
    )
    allow_unknown_module_options: bool = Field(
        False, description="Accept module options the catalog does not know (turns the error into a warning)."
    )
