"""A simulated server's kernel settings are its own, a reboot resets them to the kernel defaults, and the boot
re-applies the persistent files the way systemd does (sysctl.d, modules-load.d + modprobe.d, tmpfiles.d `w`
lines, enabled units: systemd is PID 1). The controller's kernel is never written."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.sim.sim_helpers import Sim, module_cluster

pytestmark = pytest.mark.integration
SERVER = "a2-01"
THP = "/sys/kernel/mm/transparent_hugepage"
CONTROLLER = ("/proc/sys/vm/swappiness", f"{THP}/enabled", f"{THP}/defrag", "/proc/sys/vm/max_map_count")


@pytest.fixture(scope="module")
def one(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from module_cluster(tmp_path_factory, "kb", "--nodes", "1", "--no-image-base")


def controller() -> dict[str, str]:
    return {path: Path(path).read_text() for path in CONTROLLER}


def sh(sim: Sim, script: str) -> str:
    return sim.exec(SERVER, f"set -e; {script}").strip()


def test_settings_are_the_servers_own(one: Sim) -> None:
    before = controller()
    assert sh(one, "sysctl -n vm.swappiness") == "60"
    assert sh(one, "sysctl -w vm.swappiness=61 && cat /proc/sys/vm/swappiness").endswith("61")
    assert sh(one, f"echo never > {THP}/enabled && cat {THP}/enabled") == "always madvise [never]"
    # bash reports the write's errno (dash's echo says "I/O error" for any failed write)
    assert "Invalid argument" in sh(one, f"bash -c 'echo bogus > {THP}/enabled' 2>&1 || true")
    # the controller's own sysctls are refused (a 0444 file, like on any kernel) and stay as they are
    assert 'setting key "kernel.ostype"' in sh(one, "sysctl -w kernel.ostype=Hurd 2>&1 || true")
    assert sh(one, "cat /proc/sys/kernel/ostype") == "Linux"
    assert controller() == before


def test_reboot_resets_and_boot_reapplies(one: Sim) -> None:
    before = controller()
    persist = (
        "printf 'vm.swappiness = 11\\nvm.max_map_count = 262144\\n' > /etc/sysctl.d/90-test.conf; "
        f"printf 'w {THP}/enabled - - - - never\\n' > /etc/tmpfiles.d/90-test.conf; "
        "echo mlx5_core > /etc/modules-load.d/90-test.conf; "
        "echo 'options mlx5_core debug_mask=3' > /etc/modprobe.d/90-test.conf; "
        "systemctl disable --quiet irqbalance.service; "
        # live-only changes, which a reboot must undo
        "echo performance > /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor; "
        "echo 50000 > /sys/kernel/debug/sched/migration_cost_ns; "
        f"echo always > {THP}/defrag; modprobe hns3"
    )
    sh(one, persist)
    assert "hns3" in sh(one, "lsmod")
    out = one.sim("reboot", SERVER).stdout
    assert "rebooted" in out
    assert sh(one, "cat /proc/sys/vm/swappiness") == "11"
    assert sh(one, "sysctl -n vm.max_map_count") == "262144"
    assert sh(one, f"cat {THP}/enabled") == "always madvise [never]"
    assert sh(one, f"cat {THP}/defrag") == "always defer defer+madvise [madvise] never"
    assert sh(one, "cat /sys/module/mlx5_core/parameters/debug_mask") == "3"
    assert "hns3" not in sh(one, "lsmod")
    assert sh(one, "cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") == "schedutil"
    assert sh(one, "cat /sys/kernel/debug/sched/migration_cost_ns") == "500000"
    assert sh(one, "systemctl is-active irqbalance.service || true") == "inactive"
    assert sh(one, "systemctl is-active docker.service") == "active"
    # a clean boot: no unit failed (the emulated /proc entries do not upset systemd's own tools)
    assert sh(one, "systemctl is-system-running || true") == "running"
    assert controller() == before


def test_service_module_drives_systemd_units(one: Sim) -> None:
    res = one.ansible(
        SERVER, "-m", "ansible.builtin.service", "-a", "name=irqbalance state=started enabled=true"
    )
    assert '"changed": true' in res.stdout
    assert sh(one, "systemctl is-active irqbalance.service; systemctl is-enabled irqbalance.service") == (
        "active\nenabled"
    )
    facts = one.ansible(SERVER, "-m", "ansible.builtin.setup", "-a", "filter=ansible_service_mgr").stdout
    assert '"ansible_service_mgr": "systemd"' in facts
