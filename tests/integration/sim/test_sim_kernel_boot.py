"""A simulated server's kernel settings are its own, a reboot resets them to the kernel defaults, and the boot
re-applies the persistent files the way systemd does (sysctl.d, modules-load.d + modprobe.d, tmpfiles.d `w`
lines, enabled units: systemd is PID 1). The controller's kernel is never written."""

from __future__ import annotations

import re
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ascend_sim.images import LABEL_CLUSTER
from tests.integration.sim.sim_helpers import REPO, Sim, engine, module_cluster

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


# this checkout first on sys.path (the virtualenv may point at another checkout: an editable install)
PYTHONPATH = {"PYTHONPATH": str(REPO)}


def _controller_on_systemd(one: Sim) -> object:
    """A container of the server image (systemd as PID 1) that acts as the controller: this checkout, its
    virtualenv and Python bound read-only at their own paths, the cluster's project root read-write. No
    network: the drift check it schedules finds every host unreachable (exit 4), quickly."""
    docker = engine()
    image = docker.containers.get(one.container(SERVER)).image
    binds = {str(one.root): {"bind": str(one.root), "mode": "rw"}}
    for path in (REPO, Path(sys.prefix), Path(sys.base_prefix)):
        inside = path != REPO and path.resolve().is_relative_to(REPO.resolve())
        if not inside and not str(path).startswith("/usr"):  # a Debian python3.11 is the image's own
            binds[str(path.resolve())] = {"bind": str(path.resolve()), "mode": "ro"}
    return docker.containers.run(
        image.id,
        name=f"ascend-sim-{one.name}-controller-{uuid.uuid4().hex[:6]}",
        hostname="controller",
        network_mode="none",
        cap_add=["SYS_ADMIN"],
        devices=["/dev/fuse:/dev/fuse:rwm"],  # the emulated kernel's unit waits for it
        security_opt=["seccomp=unconfined", "apparmor=unconfined"],
        volumes={"/sys/fs/cgroup": {"bind": "/sys/fs/cgroup", "mode": "rw"}, **binds},
        tmpfs={"/run": "mode=755"},
        labels={LABEL_CLUSTER: one.name},  # `sim down` removes it whatever happens here
        detach=True,
    )


def test_drift_schedule_enables_and_removes_its_timer_where_systemd_runs(one: Sim) -> None:
    """`orchestrator drift schedule` on a controller that runs systemd: it writes the units into
    /etc/systemd/system, runs `systemctl daemon-reload` and `systemctl enable --now`, the service it wrote
    runs the drift check (its textfile reports the unreachable host), and --remove disables and deletes
    both."""
    ctr = _controller_on_systemd(one)
    unit = f"orchestrator-drift-{one.name}"

    def run(script: str) -> tuple[int, str]:
        res = ctr.exec_run(["sh", "-c", script], environment=PYTHONPATH)  # type: ignore[attr-defined]
        return int(res.exit_code), str(res.output.decode())

    try:
        boot = "until [ -S /run/systemd/private ]; do sleep 0.1; done; systemctl is-system-running --wait"
        code, out = run(f"timeout 60 sh -c '{boot}'")
        assert out.strip() in ("running", "degraded"), out
        run(f"systemctl set-environment PYTHONPATH={REPO}")  # for the service the timer starts, too
        cli = f"{sys.executable} -m orchestrator --root {one.root}"
        code, out = run(f"cd {one.root} && {cli} drift schedule {one.name} --every 1h 2>&1")
        assert code == 0, out
        assert f"enabled {unit}.timer" in out, out
        code, out = run(f"systemctl is-enabled {unit}.timer; systemctl is-active {unit}.timer")
        assert out.split() == ["enabled", "active"], out
        code, out = run(f"systemctl show -P NextElapseUSecMonotonic {unit}.timer")
        assert out.strip() not in ("", "0", "infinity"), out
        # the service the timer starts: a oneshot whose exit 4 (unreachable) is a finding, not a failure
        code, out = run(f"systemctl start {unit}.service; systemctl show -P Result {unit}.service")
        assert code == 0 and out.strip().endswith("success"), out
        code, out = run(f"cat /var/lib/prometheus/node-exporter/orchestrator_drift_{one.name}.prom")
        unreachable = rf'^orchestrator_drift_host_unreachable{{host="{SERVER}".*}} 1\.0$'
        assert code == 0 and re.search(unreachable, out, re.M), out
        code, out = run(f"cd {one.root} && {cli} drift schedule {one.name} --remove 2>&1")
        assert code == 0 and "removed" in out, out
        code, out = run(f"systemctl is-enabled {unit}.timer 2>&1; ls /etc/systemd/system/{unit}.* 2>&1")
        assert "enabled" not in out.split() and "No such file" in out, out
    finally:
        ctr.remove(force=True)  # type: ignore[attr-defined]
