"""Emulated sysfs and debugfs directories: transparent hugepages, hugepages, cpufreq + CPU topology, the
scheduler's debugfs tunables. Defaults: Debian 12's kernel (Linux 6.1, arm64, 4 KiB pages) on a Kunpeng 920.

Sources (torvalds/linux v6.1): mm/huge_memory.c (enabled: always/madvise/never; defrag: always/defer/
defer+madvise/madvise/never; Debian builds CONFIG_TRANSPARENT_HUGEPAGE_MADVISE, so enabled defaults to
madvise; defrag defaults to madvise; hpage_pmd_size 2 MiB), mm/shmem.c (shmem_enabled: always within_size
advise [never] deny force), mm/khugepaged.c (pages_to_scan 4096, scan_sleep_millisecs 10000,
alloc_sleep_millisecs 60000, max_ptes_none 511, max_ptes_swap 64, max_ptes_shared 256, defrag 1),
mm/hugetlb.c (hugepages-<size>kB/ nr_hugepages, nr_overcommit_hugepages, free/resv/surplus; arm64 4K sizes
64 KiB, 2 MiB, 32 MiB, 1 GiB; a reservation larger than memory gets what fits), drivers/cpufreq/cpufreq.c
(policyN/, cpuN/cpufreq -> ../cpufreq/policyN, governor names matched case-insensitively, unknown one EINVAL)
with the cppc_cpufreq driver of Kunpeng 920 (2.6 GHz) and the arm64 Kconfig default governor schedutil
(inferred: Debian's arm64 config is not in our sources), kernel/sched/debug.c (sched/migration_cost_ns
500000, latency_ns 6 ms, min_granularity_ns 0.75 ms, wakeup_granularity_ns 1 ms, the last three scaled by
1 + ilog2(min(cpus, 8)) = 4; nr_migrate 32; tunable_scaling 1; u32 files written with kstrtoull).
"""

from __future__ import annotations

import errno
import functools
from collections.abc import Callable

from ascend_kernel import hw as hwmod
from ascend_kernel import values
from ascend_kernel.state import KernelError
from ascend_kernel.sysctl import HUGE_DEFAULT
from ascend_kernel.tree import Dir, File, Link, Node, StaticDir, ro, static

THP = "/sys/kernel/mm/transparent_hugepage"
THP_CHOICES = {
    "enabled": (("always", "madvise", "never"), "madvise"),
    "defrag": (("always", "defer", "defer+madvise", "madvise", "never"), "madvise"),
    "shmem_enabled": (("always", "within_size", "advise", "never", "deny", "force"), "never"),
}
KHUGEPAGED = {"defrag": 1, "pages_to_scan": 4096, "scan_sleep_millisecs": 10000,
              "alloc_sleep_millisecs": 60000, "max_ptes_none": 511, "max_ptes_swap": 64,
              "max_ptes_shared": 256}  # fmt: skip
HUGEPAGE_KB = (64, 2048, 32768, 1048576)
GOVERNORS = ("conservative", "ondemand", "userspace", "powersave", "performance", "schedutil")
DEFAULT_GOVERNOR = "schedutil"
CPUINFO_MIN_KHZ, CPUINFO_MAX_KHZ = 200000, 2600000
SCHED = "/sys/kernel/debug/sched"
SCHED_FACTOR = 4  # 1 + ilog2(min(cpus, 8)) with SCHED_TUNABLESCALING_LOG, for 8 or more CPUs
SCHED_DEFAULTS = {"migration_cost_ns": 500000, "latency_ns": 6000000 * SCHED_FACTOR,
                  "min_granularity_ns": 750000 * SCHED_FACTOR,
                  "wakeup_granularity_ns": 1000000 * SCHED_FACTOR, "nr_migrate": 32,
                  "tunable_scaling": 1}  # fmt: skip


class Sysfs(hwmod.Reader):
    """The emulated /sys files: THP, hugepages, cpufreq, debugfs sched tunables."""

    # ---------------------------------------------------------------------------------------- helpers

    def stored(self, path: str, default: str, parse: Callable[[str], str], mode: int = 0o644) -> File:
        return File(
            lambda: (self.state.value(path) or default) + "\n",
            lambda text: self.state.set_value(path, parse(text)),
            mode,
        )

    def _choice(self, path: str, choices: tuple[str, ...], default: str) -> File:
        """A choice file: shows every choice with the active one in brackets, takes one choice."""

        def show() -> str:
            return values.bracketed(self.state.value(path) or default, choices)

        def store(text: str) -> None:
            self.state.set_value(path, values.sysfs_choice(text, choices))

        return File(show, store)

    # ------------------------------------------------------------------------------------ hugepages

    def thp(self) -> Dir:
        entries: dict[str, Node] = {}
        for name, (choices, default) in THP_CHOICES.items():
            entries[name] = self._choice(f"{THP}/{name}", choices, default)
        entries["use_zero_page"] = self.stored(f"{THP}/use_zero_page", "1", _zero_one)
        entries["hpage_pmd_size"] = ro("2097152")
        khp = {
            k: self.stored(f"{THP}/khugepaged/{k}", str(v), _uint32 if k != "defrag" else _zero_one)
            for k, v in KHUGEPAGED.items()
        }
        khp.update({"pages_collapsed": ro("0"), "full_scans": ro("0")})
        entries["khugepaged"] = static(khp)
        return static(entries)

    def hugepages(self) -> Dir:
        return static({f"hugepages-{kb}kB": self._hstate(kb) for kb in HUGEPAGE_KB})

    def nr_hugepages(self, kb: int) -> int:
        return int(self.state.value(f"/sys/kernel/mm/hugepages/hugepages-{kb}kB/nr_hugepages") or "0")

    def set_nr_hugepages(self, kb: int, text: str) -> None:
        """What fits in memory is reserved; the write itself succeeds (mm/hugetlb.c set_max_huge_pages)."""
        wanted = int(values.sysctl_int(text, 0, 2**64 - 1))
        others = sum(self.nr_hugepages(k) * k for k in HUGEPAGE_KB if k != kb)
        room = max(0, (self.hw.memory_gb * 1024 * 1024 * 9 // 10 - others) // kb)
        path = f"/sys/kernel/mm/hugepages/hugepages-{kb}kB/nr_hugepages"
        self.state.set_value(path, str(min(wanted, room)))

    def _hstate(self, kb: int) -> Dir:
        base = f"/sys/kernel/mm/hugepages/hugepages-{kb}kB"
        count = File(lambda: f"{self.nr_hugepages(kb)}\n", lambda text: self.set_nr_hugepages(kb, text))
        return static({
            "nr_hugepages": count,
            "nr_hugepages_mempolicy": count,
            "nr_overcommit_hugepages": self.stored(f"{base}/nr_overcommit_hugepages", "0", _ulong),
            "free_hugepages": ro(lambda: f"{self.nr_hugepages(kb)}\n"),
            "resv_hugepages": ro("0"),
            "surplus_hugepages": ro("0"),
        })  # fmt: skip

    def hugepages_default_path(self) -> str:
        return HUGE_DEFAULT

    # ----------------------------------------------------------------------------------------- cpus

    def governor(self, cpu: int) -> str:
        return self.state.value(self._gov_key(cpu)) or DEFAULT_GOVERNOR

    def _gov_key(self, cpu: int) -> str:
        return f"/sys/devices/system/cpu/cpufreq/policy{cpu}/scaling_governor"

    def _set_governor(self, cpu: int, text: str) -> None:
        word = values.first_word(text).lower()
        if word not in GOVERNORS:
            raise KernelError(errno.EINVAL, f"Invalid argument: {text!r}")
        self.state.set_value(self._gov_key(cpu), word)

    def _policy(self, cpu: int) -> Dir:
        base = f"/sys/devices/system/cpu/cpufreq/policy{cpu}"

        def freq(name: str, default: int) -> File:
            def parse(text: str) -> str:
                value = int(values.sysctl_int(text, 0, 2**32 - 1))
                return str(min(max(value, CPUINFO_MIN_KHZ), CPUINFO_MAX_KHZ))

            return self.stored(f"{base}/{name}", str(default), parse)

        def cur() -> str:
            gov = self.governor(cpu)
            lo = int(self.state.value(f"{base}/scaling_min_freq") or CPUINFO_MIN_KHZ)
            hi = int(self.state.value(f"{base}/scaling_max_freq") or CPUINFO_MAX_KHZ)
            return f"{hi if gov == 'performance' else lo if gov == 'powersave' else (lo + hi) // 2}\n"

        return static({
            "affected_cpus": ro(str(cpu)),
            "related_cpus": ro(str(cpu)),
            "cpuinfo_min_freq": ro(str(CPUINFO_MIN_KHZ)),
            "cpuinfo_max_freq": ro(str(CPUINFO_MAX_KHZ)),
            "cpuinfo_transition_latency": ro("10000"),
            "scaling_driver": ro("cppc_cpufreq"),
            "scaling_available_governors": ro(" ".join(GOVERNORS)),
            "scaling_governor": File(lambda: self.governor(cpu) + "\n", lambda t: self._set_governor(cpu, t)),
            "scaling_min_freq": freq("scaling_min_freq", CPUINFO_MIN_KHZ),
            "scaling_max_freq": freq("scaling_max_freq", CPUINFO_MAX_KHZ),
            "scaling_cur_freq": ro(cur),
            "scaling_setspeed": ro("<unsupported>"),
        })  # fmt: skip

    def cpu_dir(self) -> Dir:
        n = self.hw.cpus
        span = f"0-{n - 1}" if n > 1 else "0"
        sockets = max(1, self.hw.nodes // 2)
        per_socket = max(1, n // sockets)

        def cpu(c: int) -> Dir:
            package = {x for x in range(n) if x // per_socket == c // per_socket}
            topo = static({
                "physical_package_id": ro(str(c // per_socket)),
                "cluster_id": ro(str(c // 4)),
                "core_id": ro(str(c % per_socket)),
                "thread_siblings_list": ro(str(c)),
                "thread_siblings": ro(values.format_cpumask({c}, n)),
                "core_siblings_list": ro(values.format_cpulist(package)),
                "core_siblings": ro(values.format_cpumask(package, n)),
                "package_cpus_list": ro(values.format_cpulist(package)),
            })  # fmt: skip
            entries: dict[str, Node] = {"cpufreq": Link(f"../cpufreq/policy{c}"), "topology": topo}
            if c:
                entries["online"] = ro("1")
            without = {k: v for k, v in entries.items() if k != "cpufreq"}
            return StaticDir(lambda: entries if self.hw.cpufreq else without)

        # Built once: every file reads the state when it is shown, so the structure never changes. A CPU's
        # directory is built the first time it is entered (a glob over cpu*/cpufreq lists far more than it
        # enters), then kept.
        policies: dict[str, Node] = {
            f"policy{c}": _Lazy(functools.partial(self._policy, c)) for c in range(n)
        }
        # No cpufreq driver (hardware.json "cpufreq": false: P-states the firmware keeps, CPPC off in the
        # firmware, a VM): cpufreq_core_init still creates the empty cpufreq/ directory; policyN/ and the
        # cpuN/cpufreq links come only with a driver's policies (cpufreq_online, add_cpu_dev_symlink in
        # drivers/cpufreq/cpufreq.c, torvalds/linux v6.1).
        out: dict[str, Node] = {
            "online": ro(span), "possible": ro(span), "present": ro(span), "offline": ro(""),
            "isolated": ro(""), "cpufreq": StaticDir(lambda: policies if self.hw.cpufreq else {}),
        }  # fmt: skip
        out.update({f"cpu{c}": _Lazy(functools.partial(cpu, c)) for c in range(n)})
        return static(out)

    # ------------------------------------------------------------------------------------- debugfs

    def debugfs(self) -> Dir:
        sched = {
            name: self.stored(f"{SCHED}/{name}", str(default), _u32_trunc)
            for name, default in SCHED_DEFAULTS.items()
        }
        sched["verbose"] = self.stored(f"{SCHED}/verbose", "N", values.kstrtobool)
        return static({"sched": static(sched, 0o555)}, 0o700)


class _Lazy(Dir):
    """A directory built when it is first entered, then kept."""

    def __init__(self, build: Callable[[], Dir]) -> None:
        self.build = build
        self.built: Dir | None = None

    def _dir(self) -> Dir:
        if self.built is None:
            self.built = self.build()
        return self.built

    def child(self, name: str) -> Node | None:
        return self._dir().child(name)

    def names(self) -> list[str]:
        return self._dir().names()


def _zero_one(text: str) -> str:
    value = values.kstrtoull(text)
    if value > 1:
        raise KernelError(errno.EINVAL, f"Invalid argument: {text!r}")
    return str(value)


def _uint32(text: str) -> str:
    value = values.kstrtoull(text)
    if value >= 1 << 32:
        raise KernelError(errno.EINVAL, f"Invalid argument: {text!r}")
    return str(value)


def _ulong(text: str) -> str:
    return values.sysctl_int(text, 0, 2**64 - 1)


def _u32_trunc(text: str) -> str:
    """debugfs_create_u32 stores what kstrtoull parsed, truncated to 32 bits."""
    return str(values.kstrtoull(text) & 0xFFFFFFFF)
