"""Role host_tuning on a one-server simulated cluster (the sim spec's tuning: defaults + irq_affinity npu-numa
+ an mlx5_core host NIC module): converge, idempotence, check mode that names the drift, and tuning that
survives a reboot. Values expected are the spec's (docs/spec.md defaults), written out here."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.integration.sim.sim_helpers import Sim, ansible_playbook, module_cluster, recap

pytestmark = pytest.mark.integration
SERVER = "a2-01"


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    # `sim down` when the loop ends
    for sim in module_cluster(tmp_path_factory, "ht", "--nodes", "1", "--no-image-base"):
        # an installed NPU driver (what the drivers phase leaves): the NPUs' interrupts exist
        sh(
            sim,
            "mkdir -p /usr/local/Ascend/driver; echo Version=25.5.1 > /usr/local/Ascend/driver/version.info",
        )
        # and its npu-smi (a copy of the fake, as the driver package installs it) and device nodes
        sh(sim, "install -m 0755 /opt/ascend-sim/fakes/npu_smi.py /usr/local/sbin/npu-smi")
        sh(sim, "cd /dev && touch davinci_manager " + " ".join(f"davinci{i}" for i in range(8)))
        yield sim


def sh(sim: Sim, script: str) -> str:
    return sim.exec(SERVER, script).strip()


def playbook(sim: Sim, *args: str) -> tuple[str, dict[str, int]]:
    proc = ansible_playbook(sim.root, f"inventories/{sim.name}/hosts.yml", "host.yml", *args, timeout=600)
    stats = recap(proc.stdout)
    assert proc.returncode == 0 and SERVER in stats, proc.stdout[-4000:] + proc.stderr[-2000:]
    return proc.stdout, {"changed": stats[SERVER]["changed"], "failed": stats[SERVER]["failed"]}


def changed_tasks(out: str) -> list[str]:
    tasks, current = [], ""
    for line in out.splitlines():
        if line.startswith("TASK ["):
            current = line[6 : line.rindex("]")]
        elif line.startswith("changed: "):
            tasks.append(current)
    return sorted(set(tasks))


def test_converge_then_nothing_to_change(tuned: Sim) -> None:
    _, first = playbook(tuned)
    assert first["changed"] > 0
    assert sh(tuned, "cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") == "performance"
    assert sh(tuned, "cat /sys/devices/system/cpu/cpu191/cpufreq/scaling_governor") == "performance"
    assert sh(tuned, "cat /sys/kernel/mm/transparent_hugepage/enabled") == "[always] madvise never"
    assert sh(tuned, "sysctl -n vm.swappiness kernel.numa_balancing").split() == ["0", "0"]
    # Debian 12 runs Linux 6.1: the migration cost lives in debugfs there (Linux >= 5.13)
    assert sh(tuned, "cat /sys/kernel/debug/sched/migration_cost_ns") == "50000"
    assert sh(tuned, "systemctl is-active irqbalance.service || true") == "inactive"
    assert sh(tuned, "cat /sys/module/mlx5_core/parameters/probe_vf") == "N"
    irq = sh(tuned, "ls /sys/bus/pci/devices/0000:c1:00.0/msi_irqs | head -1")
    local = sh(tuned, "cat /sys/bus/pci/devices/0000:c1:00.0/local_cpulist")
    assert sh(tuned, f"cat /proc/irq/{irq}/smp_affinity_list") == local != "0-191"
    # tuning.memlock defaults to unlimited: one `-` (soft and hard) line for every user
    assert "*\t-\tmemlock\tunlimited" in sh(tuned, "cat /etc/security/limits.d/90-ascend-orchestrator.conf")
    # the NPU topology as a local fact: the fake npu-smi's 910B affinities (sample 3) on 24-CPU NUMA nodes
    fact = json.loads(sh(tuned, "cat /etc/ansible/facts.d/ascend_npu.fact"))
    assert fact["npus"]["0"] == {"cpu_affinity": "144-167", "numa_node": 6}
    assert fact["npus"]["4"] == {"cpu_affinity": "0-23", "numa_node": 0} and len(fact["npus"]) == 8
    _, second = playbook(tuned)
    assert second == {"changed": 0, "failed": 0}
    _, check = playbook(tuned, "--check", "--diff")
    assert check == {"changed": 0, "failed": 0}


def test_check_mode_names_manual_edits_and_changes_nothing(tuned: Sim) -> None:
    playbook(tuned)
    sh(tuned, "sysctl -w vm.swappiness=5; echo 1 > /sys/module/mlx5_core/parameters/debug_mask")
    sh(tuned, "echo never > /sys/kernel/mm/transparent_hugepage/enabled")
    out, check = playbook(tuned, "--check", "--diff")
    assert changed_tasks(out) == [
        "host_tuning : Set kernel attributes in sysfs and debugfs (THP, hugepages, scheduler)",
        "host_tuning : Set sysctls live and in the role's sysctl.d file",
        "host_tuning : Unload modules whose live options differ",
    ]
    assert check["changed"] == 3  # in check mode the module is still loaded: no reload to report
    assert sh(tuned, "sysctl -n vm.swappiness") == "5"  # check mode left the host as it was
    assert sh(tuned, "cat /sys/module/mlx5_core/parameters/debug_mask") == "1"
    _, fix = playbook(tuned)
    assert fix["changed"] == 4
    assert sh(tuned, "cat /sys/module/mlx5_core/parameters/debug_mask") == "0"


def test_tuning_survives_a_reboot(tuned: Sim) -> None:
    playbook(tuned)
    tuned.sim("reboot", SERVER)
    assert sh(tuned, "cat /sys/kernel/mm/transparent_hugepage/enabled") == "[always] madvise never"
    assert sh(tuned, "cat /sys/kernel/debug/sched/migration_cost_ns") == "50000"
    _, check = playbook(tuned, "--check")
    assert check == {"changed": 0, "failed": 0}


def test_check_mode_names_a_tampered_limit_and_fact(tuned: Sim) -> None:
    playbook(tuned)
    sh(tuned, "sed -i 's/unlimited/65536/' /etc/security/limits.d/90-ascend-orchestrator.conf")
    sh(tuned, "echo '{}' > /etc/ansible/facts.d/ascend_npu.fact")
    out, check = playbook(tuned, "--check", "--diff")
    assert changed_tasks(out) == [
        "host_tuning : Save the NPU topology as a local fact for the serving phase",
        "host_tuning : Set the locked-memory limit in the role's limits.d file",
    ]
    assert check["changed"] == 2 and sh(tuned, "cat /etc/ansible/facts.d/ascend_npu.fact") == "{}"
    _, fix = playbook(tuned)
    assert fix["changed"] == 2


def test_a_server_without_cpufreq_skips_the_governor_with_a_warning(tuned: Sim) -> None:
    """No cpufreq driver (firmware P-states, CPPC off, a VM): no scaling_governor file matches the glob; the
    phase goes on and says what it skipped (a run; check mode takes the same path in the module)."""
    tuned.sim("fault", "no-cpufreq", SERVER)
    try:
        assert sh(tuned, "ls /sys/devices/system/cpu/cpufreq | wc -l") == "0"
        proc = ansible_playbook(tuned.root, f"inventories/{tuned.name}/hosts.yml", "host.yml")
        out = proc.stdout
        failed = recap(out)[SERVER]["failed"]
        assert proc.returncode == 0 and failed == 0, out[-3000:] + proc.stderr[-2000:]
        glob = "/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"
        warned = " ".join(proc.stderr.split())  # Ansible prints a module's warnings on stderr
        said = f"No kernel attribute at {glob}, skipped: the kernel has no cpufreq driver"
        assert said in warned, warned
        report = out.split("TASK [host_tuning : Report the skipped governor in the apply summary]")[1]
        assert f"ok: [{SERVER}]" in report.split("TASK [")[0], report[:500]
    finally:
        tuned.sim("fault", "no-cpufreq", SERVER, "--clear")
    assert sh(tuned, "cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") == "performance"
