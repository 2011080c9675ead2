"""The sysctls a simulated server keeps for itself (/proc/sys), with Linux 6.1 limits and the defaults of a
Debian 12 kernel on a multi-node NUMA server. Every other /proc/sys entry is the controller's, read-only.

Sources (torvalds/linux v6.1): kernel/sysctl.c (vm.swappiness 0..200 default 60 mm/vmscan.c; vm.max_map_count
>= 0, DEFAULT_MAX_MAP_COUNT 65530 include/linux/mm.h; vm.nr_hugepages / nr_overcommit_hugepages unsigned long
mm/hugetlb.c), kernel/sched/core.c (kernel.numa_balancing 0..4 via SYSCTL_FOUR; enabled at boot on a
multi-node machine with CONFIG_NUMA_BALANCING_DEFAULT_ENABLED=y, mm/mempolicy.c check_numabalancing_enable),
fs/namei.c (fs.protected_{hardlinks,symlinks} 0..1, {fifos,regular} 0..2, kernel default
0; Debian's procps sets them through /usr/lib/sysctl.d/99-protect-links.conf at boot).
"""

from __future__ import annotations

from dataclasses import dataclass

INT_MAX = 2**31 - 1
ULONG_MAX = 2**64 - 1


@dataclass(frozen=True)
class Sysctl:
    key: str  # dotted name as sysctl(8) spells it
    lo: int
    hi: int
    default: int
    link: str = ""  # another emulated path that holds the value (nr_hugepages is hugepages-2048kB's)

    @property
    def path(self) -> str:
        return "/proc/sys/" + self.key.replace(".", "/")


HUGE_DEFAULT = "/sys/kernel/mm/hugepages/hugepages-2048kB"

SYSCTLS: tuple[Sysctl, ...] = (
    Sysctl("vm.swappiness", 0, 200, 60),
    Sysctl("vm.max_map_count", 0, INT_MAX, 65530),
    Sysctl("vm.nr_hugepages", 0, ULONG_MAX, 0, f"{HUGE_DEFAULT}/nr_hugepages"),
    Sysctl("vm.nr_overcommit_hugepages", 0, ULONG_MAX, 0, f"{HUGE_DEFAULT}/nr_overcommit_hugepages"),
    Sysctl("kernel.numa_balancing", 0, 4, 1),
    Sysctl("fs.protected_hardlinks", 0, 1, 0),
    Sysctl("fs.protected_symlinks", 0, 1, 0),
    Sysctl("fs.protected_fifos", 0, 2, 0),
    Sysctl("fs.protected_regular", 0, 2, 0),
)

BY_PATH = {s.path: s for s in SYSCTLS}
