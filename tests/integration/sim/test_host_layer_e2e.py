"""The whole host layer end to end on one simulated cluster (three Atlas 800T A2 servers, the first two
serving one multi-node replica, and a monitoring host, over real SSH): `orchestrator apply` of every
host-layer phase converges from bare servers (the hl golden's converging apply, goldens.py: this module
reads it and the servers it left), a second apply changes nothing, the settings survive a simulated reboot,
and after it check mode (`orchestrator apply --check` of every host-layer phase on every host) reports
nothing but one manual edit, on exactly that host, in phase host, by the task that owns it, without undoing
it. (Plain `ansible-playbook ... site.yml --tags P --check --diff` from the checkout's root:
test_status_served.py.)
The tests run in file order on one module-scoped copy of the golden."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.integration.sim import goldens
from tests.integration.sim.sim_helpers import Sim

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group(goldens.group("hl"))]

HOST_LAYER = ["preflight", "drivers", "host", "network"]
NPU = ["a2-01", "a2-02", "a2-03"]
MULTI_NODE = ["a2-01", "a2-02"]  # `sim up --span 2`: replica a2-01 over these two, data parallel
MONITORING = "mon-01"
# Which servers each phase touches, written out from docs/playbooks.md: preflight everywhere, drivers,
# tuning and HCCN on the NPU servers, the container engine also on the monitoring host.
PHASE_HOSTS = {
    "preflight": [*NPU, MONITORING],
    "drivers": NPU,
    "host": [*NPU, MONITORING],
    "network": NPU,
}
REBOOTED, DRIFTED = "a2-01", "a2-02"
HCCN_TOOL = "/usr/local/Ascend/driver/tools/hccn_tool"


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    """A copy of the hl golden: `sim up --nodes 3 --span 2 --monitoring`, the host layer applied once from
    bare servers (a restored copy is a rebooted converged cluster)."""
    yield from goldens.module_golden(tmp_path_factory, "hl")


def apply_json(sim: Sim, *args: str) -> dict[str, Any]:
    """`orchestrator apply` of the host layer (the later phases have their own tests: test_image_phase,
    test_weights_phase, test_serve_phase), or of the phases ``args`` names."""
    chosen = () if "--phases" in args else ("--phases", ",".join(HOST_LAYER))
    proc = sim.cli("apply", sim.name, "--yes", "--format", "json", *chosen, *args, check=False)
    assert proc.stdout.count("\n") == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    out: dict[str, Any] = json.loads(proc.stdout)
    out["exit"] = proc.returncode
    return out


def host_layer(out: dict[str, Any]) -> dict[str, dict[str, dict[str, int]]]:
    """{phase: {host: counts}} of the host-layer phases, after checking that each ran and finished."""
    phases = {p["name"]: p for p in out["phases"] if p["name"] in HOST_LAYER}
    assert list(phases) == HOST_LAYER, out
    for name, phase in phases.items():
        assert phase["status"] == "ok" and phase["excluded"] == {}, (name, phase)
        assert sorted(phase["hosts"]) == sorted(PHASE_HOSTS[name]), (name, phase["hosts"])
        for host, counts in phase["hosts"].items():
            assert counts["failed"] == 0 and counts["unreachable"] == 0, (name, host, counts)
    return {name: phase["hosts"] for name, phase in phases.items()}


def changed(out: dict[str, Any]) -> dict[tuple[str, str], int]:
    return {(p, h): c["changed"] for p, hosts in host_layer(out).items() for h, c in hosts.items()}


def converged(out: dict[str, Any]) -> None:
    assert out["exit"] == 0 and out["result"] == "ok" and out["failures"] == [], out
    assert changed(out) == dict.fromkeys(changed(out), 0), out


def changed_tasks(sim: Sim, out: dict[str, Any], phase: str) -> set[tuple[str, str]]:
    """(host, task) of every task that reported a change, from the run's ansible-runner job events."""
    number = HOST_LAYER.index(phase) + 1
    events = sim.root / ".orchestrator" / "runs" / sim.name / out["run_id"] / f"{number:02d}-{phase}"
    found = set()
    for path in events.glob("artifacts/*/job_events/*.json"):
        event = json.loads(path.read_text())
        data = event.get("event_data", {})
        if event.get("event") == "runner_on_ok" and data.get("res", {}).get("changed"):
            found.add((data["host"], data["task"]))
    return found


def sh(sim: Sim, server: str, script: str) -> str:
    return sim.exec(server, script).strip()


def test_first_apply_converges_every_phase_on_every_host(sim: Sim) -> None:
    first = sim.converge  # the golden's `apply --phases HOST_LAYER` from bare servers, earlier in this run
    assert first is not None and goldens.GOLDENS["hl"].phases == ",".join(HOST_LAYER)
    assert first.stdout.count("\n") == 1, first.stdout[-3000:] + first.stderr[-3000:]
    out: dict[str, Any] = {**json.loads(first.stdout), "exit": first.returncode}
    assert out["exit"] == 0 and out["result"] == "ok" and out["failures"] == [], out
    counts = changed(out)
    assert all(counts[("preflight", h)] == 0 for h in PHASE_HOSTS["preflight"])  # read-only
    for phase in ("drivers", "host", "network"):
        for host in PHASE_HOSTS[phase]:
            assert counts[(phase, host)] > 0, (phase, host, counts)
    assert [p["name"] for p in out["phases"] if p["status"] != "not_implemented"] == HOST_LAYER, out
    # what the phases left behind, read on the servers
    for host in NPU:
        assert "Version=25.5.1" in sh(sim, host, "cat /usr/local/Ascend/driver/version.info")
        assert sh(sim, host, "sysctl -n vm.swappiness") == "0"
        assert sh(sim, host, "cat /sys/module/mlx5_core/parameters/probe_vf") == "N"
        assert sh(sim, host, f"{HCCN_TOOL} -i 0 -ip -g").count("ipaddr:127.100.0.") == 1
    # the multi-node replica: its HCCL rank table on both members (16 ranks, each member's 8 NPU-NIC
    # addresses), none on the single-node server; the gate pinged across the pair, not towards a2-03
    spec = yaml.safe_load((sim.root / "inventories" / sim.name / "site.yaml").read_text())
    address = {s["name"]: s["address"] for s in spec["servers"]}
    live = f"for i in $(seq 0 7); do {HCCN_TOOL} -i $i -ip -g; done"
    nics = {h: set(re.findall(r"ipaddr:(\S+)", sh(sim, h, live))) for h in MULTI_NODE}
    for host in MULTI_NODE:
        table = json.loads(sh(sim, host, "cat /etc/ascend-orchestrator/hccl/a2-01.json"))
        devices = [d for srv in table["server_list"] for d in srv["device"]]
        assert [srv["server_id"] for srv in table["server_list"]] == [address[h] for h in MULTI_NODE]
        assert {d["device_ip"] for d in devices} == nics["a2-01"] | nics["a2-02"] and len(devices) == 16
    assert sh(sim, "a2-03", "ls /etc/ascend-orchestrator/hccl/ 2>/dev/null | wc -l") == "0"
    assert "running" in sh(sim, MONITORING, "docker info --format '{{.ServerVersion}}' && echo running")


def test_second_apply_changes_nothing(sim: Sim) -> None:
    converged(apply_json(sim))


# The live state a reboot resets and the boot must bring back (sysctl.d, THP via tmpfiles.d, modprobe.d,
# irqbalance.service left disabled, the NPU NICs re-applied from /etc/hccn.conf by the driver).
LIVE_STATE = (
    "sysctl -n vm.swappiness kernel.numa_balancing; cat /sys/kernel/mm/transparent_hugepage/enabled; "
    "cat /sys/module/mlx5_core/parameters/probe_vf /sys/module/mlx5_core/parameters/debug_mask; "
    "systemctl is-active irqbalance.service || true; "
    f"for i in 0 1 2 3 4 5 6 7; do {HCCN_TOOL} -i $i -ip -g; done"
)


def test_reboot_keeps_the_settings_and_check_mode_names_one_manual_edit_only(sim: Sim) -> None:
    """One check run for both: the rebooted server must report nothing (its settings came back at boot), the
    server with a hand-set sysctl exactly that task in phase host, and check mode must leave the edit."""
    before = sh(sim, REBOOTED, LIVE_STATE)
    boot_id = sh(sim, REBOOTED, "cat /proc/sys/kernel/random/boot_id")
    sim.sim("reboot", REBOOTED)
    assert sh(sim, REBOOTED, "cat /proc/sys/kernel/random/boot_id") != boot_id  # it did reboot
    after = sh(sim, REBOOTED, LIVE_STATE)
    assert after == before
    # the values themselves (the sim spec's tuning, docs/spec.md defaults): not just "the same as before"
    lines = after.splitlines()
    assert lines[:5] == ["0", "0", "[always] madvise never", "N", "0"], after
    assert lines[5] == "inactive" and after.count("ipaddr:127.100.0.") == 8, after

    sh(sim, DRIFTED, "sysctl -w vm.swappiness=33")
    out = apply_json(sim, "--check")  # every host-layer phase on every host: only that edit may show
    assert out["check"] is True and out["exit"] == 0 and out["failures"] == [], out
    drift = {key: n for key, n in changed(out).items() if n}
    assert drift == {("host", DRIFTED): 1}, drift
    assert changed_tasks(sim, out, "host") == {(DRIFTED, "Set sysctls live and in the role's sysctl.d file")}
    assert sh(sim, DRIFTED, "sysctl -n vm.swappiness") == "33"  # check mode left it as it was
    fixed = apply_json(sim, "--phases", "host")
    assert fixed["exit"] == 0 and fixed["phases"][0]["hosts"][DRIFTED]["changed"] == 1, fixed
    assert sh(sim, DRIFTED, "sysctl -n vm.swappiness") == "0"
