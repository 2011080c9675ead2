"""The simulated server's emulated kernel interfaces (ascend_sim/payloads/sim-server/ascend_kernel), driven
the way the FUSE daemon drives them, under a temp ASCEND_SIM_ROOT. Expected values are the Linux 6.1 / Debian
12 behaviour as documented (Documentation/admin-guide/mm/transhuge.rst, sysctl/vm.rst, cpu-freq, kmod(8)),
written out here independently of the emulation's tables."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ascend_kernel import boot, modtools
from ascend_kernel.kernel import Kernel
from ascend_kernel.state import KernelError, reset
from tests.unit.sim.ascend_fake_helpers import HW_910B4, put

THP = "/sys/kernel/mm/transparent_hugepage"
GOV0 = "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ASCEND_SIM_ROOT", str(tmp_path))
    (tmp_path / "run/ascend-sim").mkdir(parents=True)
    (tmp_path / "run/ascend-sim/proc").symlink_to("/proc")  # the real procfs view, read only here
    put(tmp_path, "/var/lib/ascend-sim/hardware.json", {**HW_910B4, "cpus": 192, "numa_nodes": 8})
    return tmp_path


@pytest.fixture
def kernel(root: Path) -> Iterator[Kernel]:
    k = Kernel()
    yield k
    k.close()


def errno_of(k: Kernel, path: str, text: str) -> int:
    with pytest.raises(KernelError) as info:
        k.write(path, text)
    return info.value.errno or 0


def test_thp_shows_choices_with_the_active_one_in_brackets(kernel: Kernel) -> None:
    assert kernel.read(f"{THP}/enabled") == "always [madvise] never\n"  # Debian: THP_MADVISE
    assert kernel.read(f"{THP}/defrag") == "always defer defer+madvise [madvise] never\n"
    kernel.write(f"{THP}/enabled", "never\n")
    assert kernel.read(f"{THP}/enabled") == "always madvise [never]\n"
    assert errno_of(kernel, f"{THP}/enabled", "[always]") == errno.EINVAL
    assert errno_of(kernel, f"{THP}/defrag", "sometimes") == errno.EINVAL
    assert kernel.read(f"{THP}/enabled") == "always madvise [never]\n"


def test_sysctls_parse_like_proc_dointvec_minmax(kernel: Kernel) -> None:
    path = "/proc/sys/vm/swappiness"
    assert kernel.read(path) == "60\n"
    kernel.write(path, "  10\n")
    assert kernel.read(path) == "10\n"
    kernel.write(path, "0x10")
    assert kernel.read(path) == "16\n"
    assert errno_of(kernel, path, "201") == errno.EINVAL
    assert errno_of(kernel, path, "ten") == errno.EINVAL
    assert kernel.read("/proc/sys/vm/max_map_count") == "65530\n"
    assert kernel.read("/proc/sys/kernel/numa_balancing") == "1\n"
    assert kernel.emulated(path)


def test_the_controllers_own_sysctls_are_read_only(kernel: Kernel) -> None:
    path = "/proc/sys/kernel/ostype"  # real, not emulated: reads through, never writes
    assert kernel.read(path) == "Linux\n"
    assert not kernel.emulated(path)
    assert errno_of(kernel, path, "Hurd") == errno.EROFS


def test_nr_hugepages_is_the_2mib_pool(kernel: Kernel) -> None:
    kernel.write("/proc/sys/vm/nr_hugepages", "512")
    assert kernel.read("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages") == "512\n"
    meminfo = kernel.read("/proc/meminfo")
    assert any(line.split() == ["HugePages_Total:", "512"] for line in meminfo.splitlines())


def test_cpufreq_governor_per_cpu_through_the_policy_link(kernel: Kernel) -> None:
    avail = kernel.read("/sys/devices/system/cpu/cpu5/cpufreq/scaling_available_governors").split()
    assert {"performance", "powersave", "schedutil", "ondemand"} <= set(avail)
    assert kernel.read(GOV0) == "schedutil\n"
    kernel.write(GOV0, "Performance\n")  # cpufreq matches governor names case-insensitively
    assert kernel.read("/sys/devices/system/cpu/cpufreq/policy0/scaling_governor") == "performance\n"
    assert kernel.read("/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor") == "schedutil\n"
    assert errno_of(kernel, GOV0, "turbo") == errno.EINVAL
    cpus = list(kernel.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"))
    assert len(cpus) == 192


def test_a_server_without_cpufreq_has_no_governor_files(root: Path, kernel: Kernel) -> None:
    """No cpufreq driver (firmware-controlled P-states, CPPC off, a VM): cpufreq_core_init still makes the
    cpufreq/ directory, empty; policyN/ and cpuN/cpufreq come only with a driver (drivers/cpufreq/cpufreq.c,
    torvalds/linux v6.1). hardware.json is read live, so the change shows at once."""
    hw = {**HW_910B4, "cpus": 192, "numa_nodes": 8, "cpufreq": False}
    put(root, "/var/lib/ascend-sim/hardware.json", hw)
    assert list(kernel.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor")) == []
    assert kernel.listdir("/sys/devices/system/cpu/cpufreq") == []
    assert "cpufreq" not in kernel.listdir("/sys/devices/system/cpu/cpu0")
    assert "topology" in kernel.listdir("/sys/devices/system/cpu/cpu0")
    with pytest.raises(KernelError) as info:
        kernel.read(GOV0)
    assert info.value.errno == errno.ENOENT


def test_debugfs_sched_migration_cost(kernel: Kernel) -> None:
    path = "/sys/kernel/debug/sched/migration_cost_ns"
    assert kernel.read(path) == "500000\n"
    kernel.write(path, "50000\n")
    assert kernel.read(path) == "50000\n"
    assert errno_of(kernel, path, "-1") == errno.EINVAL


def run_tool(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = modtools.main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_modprobe_applies_modprobe_d_options_and_sysfs_shows_them(
    root: Path, kernel: Kernel, capsys: pytest.CaptureFixture[str]
) -> None:
    put(root, "/etc/modprobe.d/mlx5.conf", "options mlx5_core debug_mask=3 probe_vf=0\n")
    assert not kernel.listdir("/sys/module") or "mlx5_core" not in kernel.listdir("/sys/module")
    assert run_tool(["modprobe", "mlx5_ib"], capsys)[0] == 0
    params = "/sys/module/mlx5_core/parameters"
    assert kernel.read(f"{params}/debug_mask") == "3\n"
    assert kernel.read(f"{params}/probe_vf") == "N\n"
    assert kernel.read(f"{params}/prof_sel") == "2\n"  # default kept
    assert errno_of(kernel, f"{params}/prof_sel", "1") == errno.EACCES  # 0444 even for root
    lsmod = run_tool(["lsmod"], capsys)[1].splitlines()
    assert lsmod[0].split() == ["Module", "Size", "Used", "by"]
    used = {line.split()[0]: line.split()[2:] for line in lsmod[1:]}
    assert used["mlx5_core"] == ["1", "mlx5_ib"]
    assert set(used) == {"mlx5_ib", "mlx5_core", "ib_uverbs", "ib_core"}
    modules = kernel.read("/proc/modules")
    assert modules.splitlines()[0].startswith("mlx5_ib ")
    rc, _, err = run_tool(["rmmod", "mlx5_core"], capsys)
    assert rc == 1 and "in use" in err
    assert run_tool(["modprobe", "-r", "mlx5_ib"], capsys)[0] == 0
    assert kernel.read("/proc/modules") == ""


def test_modprobe_unknown_module_and_bad_option(
    root: Path, kernel: Kernel, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, _, err = run_tool(["modprobe", "nosuchmod"], capsys)
    assert rc == 1 and "Module nosuchmod not found in directory /lib/modules/" in err
    put(root, "/etc/modprobe.d/bad.conf", "options hns3 tx_sgl=lots\n")
    rc, _, err = run_tool(["modprobe", "hns3"], capsys)
    assert rc == 1 and "could not insert 'hns3': Invalid argument" in err
    assert "hns3: `lots' invalid for parameter `tx_sgl'" in run_tool(["dmesg"], capsys)[1]


def test_npu_irqs_exist_with_the_driver_and_take_an_affinity(root: Path, kernel: Kernel) -> None:
    assert "sq_send_trigger_irq" not in kernel.read("/proc/interrupts")
    put(root, "/usr/local/Ascend/driver/version.info", "Version=24.1.rc2\n")
    lines = [line for line in kernel.read("/proc/interrupts").splitlines() if "_irq" in line]
    names = [line.split()[-1] for line in lines]
    assert names == ["sq_send_trigger_irq", "cq_update_irq"] * 8
    irq = lines[0].split(":")[0].strip()
    assert kernel.read(f"/proc/irq/{irq}/smp_affinity_list") == "0-191\n"
    kernel.write(f"/proc/irq/{irq}/smp_affinity_list", "144-167\n")
    assert kernel.read(f"/proc/irq/{irq}/smp_affinity_list") == "144-167\n"
    # 192 CPUs = six 32-bit groups, most significant first: CPUs 144-159 and 160-167
    assert kernel.read(f"/proc/irq/{irq}/smp_affinity") == "000000ff,ffff0000" + ",00000000" * 4 + "\n"
    assert errno_of(kernel, f"/proc/irq/{irq}/smp_affinity_list", "192") == errno.ERANGE


def test_reset_then_boot_reapplies_the_persistent_files(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    k = Kernel()
    k.write("/proc/sys/vm/swappiness", "1")
    k.write(f"{THP}/enabled", "never")
    k.write(GOV0, "performance")
    assert run_tool(["modprobe", "hns3", "tx_sgl=4"], capsys)[0] == 0
    # persistent configuration, as the host roles write it
    put(root, "/usr/lib/sysctl.d/50-default.conf", "vm.swappiness = 30\nvm.max_map_count = 70000\n")
    put(root, "/etc/sysctl.d/50-default.conf", "vm.max_map_count = 80000\n")  # hides the /usr/lib file
    ascend = "vm.swappiness=10\n-kernel.nosuch = 1\nkernel.numa_balancing=0\n"
    put(root, "/etc/sysctl.d/90-ascend.conf", ascend)
    put(root, "/etc/tmpfiles.d/ascend.conf", f"w {THP}/enabled - - - - never\nw {THP}/defrag - - - - defer\n")
    put(root, "/etc/modules-load.d/rdma.conf", "# host RDMA\nmlx5_core\n")
    put(root, "/etc/modprobe.d/rdma.conf", "options mlx5_core debug_mask=1\n")
    reset()  # a reboot: every setting back to the kernel default, no module loaded
    assert k.read("/proc/sys/vm/swappiness") == "60\n"
    assert k.read(f"{THP}/enabled") == "always [madvise] never\n"
    assert k.read(GOV0) == "schedutil\n"
    assert k.read("/proc/modules") == ""
    log: list[str] = []
    boot.boot(k, log.append)
    assert k.read("/proc/sys/vm/swappiness") == "10\n"
    assert k.read("/proc/sys/vm/max_map_count") == "80000\n"
    assert k.read("/proc/sys/kernel/numa_balancing") == "0\n"
    assert k.read(f"{THP}/enabled") == "always madvise [never]\n"
    assert k.read(f"{THP}/defrag") == "always [defer] defer+madvise madvise never\n"
    assert k.read("/sys/module/mlx5_core/parameters/debug_mask") == "1\n"
    assert "hns3" not in k.read("/proc/modules")  # loaded by hand only: gone after a reboot
    assert k.read(GOV0) == "schedutil\n"  # nothing persistent sets it
    assert any("kernel.nosuch" in line and "skipped" in line for line in log)
    k.close()


def test_tmpfiles_w_lines_only_touch_emulated_files(root: Path, kernel: Kernel) -> None:
    put(root, "/etc/tmpfiles.d/x.conf", "w /proc/sys/kernel/ostype - - - - Hurd\nd /var/tmp/x 0755 - - -\n")
    log: list[str] = []
    boot.apply_tmpfiles(kernel, log.append)
    assert kernel.read("/proc/sys/kernel/ostype") == "Linux\n"
    assert log == ["tmpfiles: /proc/sys/kernel/ostype: not an emulated kernel file, left to the OS"]


def test_proc_itself_stays_the_kernels_procfs() -> None:
    """systemd's tools check statfs("/proc") == PROC_SUPER_MAGIC (systemd-tmpfiles refuses to run on a FUSE
    /proc): only entries under /proc are bound, never /proc itself."""
    from ascend_kernel.kernel import MOUNTS, TREES

    assert "/proc" not in MOUNTS and "/proc" in TREES
    assert {"/proc/sys", "/proc/meminfo", "/proc/modules", "/proc/interrupts", "/proc/irq"} <= set(MOUNTS)


def test_hardware_json_sizes_the_cpu_tree(root: Path) -> None:
    put(root, "/var/lib/ascend-sim/hardware.json", json.dumps({"cards": 0}))
    k = Kernel()
    assert k.read("/sys/devices/system/cpu/online") == "0-15\n"
    assert os.path.basename(next(iter(k.glob("/sys/devices/system/cpu/cpu1[0-5]")))) == "cpu10"
    k.close()


class _RecordingLibc:
    """The real statfs(2); umount2(2) recorded, never called."""

    def __init__(self) -> None:
        import ctypes

        self.real = ctypes.CDLL(None, use_errno=True)
        self.umounted: list[bytes] = []

    def statfs(self, path: bytes, buf: object) -> int:
        return int(self.real.statfs(path, buf))

    def umount2(self, target: bytes, flags: int) -> int:
        self.umounted.append(target)
        return 0


def test_taking_the_kernel_down_never_unmounts_the_real_proc_or_sys(monkeypatch: pytest.MonkeyPatch) -> None:
    from ascend_kernel import mounts

    libc = _RecordingLibc()
    monkeypatch.setattr(mounts, "_libc", libc)
    assert mounts.fs_type("/proc") == 0x9FA0  # PROC_SUPER_MAGIC: the real procfs, not ours
    mounts.down()  # nothing of the emulation is mounted here
    assert libc.umounted == []


def test_pci_bus_follows_hardware_json_when_a_card_is_taken_out(root: Path, kernel: Kernel) -> None:
    """A card removed from hardware.json (a fault the tests inject) leaves the emulated PCI bus at once, as
    it leaves the fake lspci and npu-smi; putting it back brings it back."""
    pci = "/sys/bus/pci/devices"
    before = kernel.listdir(pci)
    assert len(before) == 8 and all(kernel.read(f"{pci}/{b}/vendor") == "0x19e5\n" for b in before)
    hw = json.loads((root / "var/lib/ascend-sim/hardware.json").read_text())
    put(root, "/var/lib/ascend-sim/hardware.json", {**hw, "cards": 7, "bus_ids": hw["bus_ids"][:7]})
    after = kernel.listdir(pci)
    assert len(after) == 7 and set(after) < set(before)
    put(root, "/var/lib/ascend-sim/hardware.json", hw)
    assert kernel.listdir(pci) == before
