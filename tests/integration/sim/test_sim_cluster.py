"""One simulated cluster (2 x Atlas 800T A2): idempotent up, status, a valid spec, Ansible over real SSH,
ansible.builtin.reboot, a fresh-box hardware view and a round trip through every fault."""

from __future__ import annotations

import json
import re

import pytest

from tests.integration.sim.sim_helpers import Sim

pytestmark = pytest.mark.integration

SERVERS = ("a2-01", "a2-02")


def _results(output: str) -> dict[str, str]:
    """`ansible -o` lines -> {host: SUCCESS|CHANGED|FAILED!|UNREACHABLE!}."""
    return dict(re.findall(r"^(\S+) \| ([A-Z!]+)", output, re.M))


def test_up_again_changes_nothing(cluster: Sim) -> None:
    assert "created server a2-01" in cluster.up_output
    site = cluster.root / "inventories" / cluster.name / "site.yaml"
    before = (site.stat().st_mtime_ns, (cluster.state_dir / "known_hosts").read_text())
    ids = [cluster.exec(s, "cat /var/lib/ascend-sim/boot_id") for s in SERVERS]
    again = cluster.sim("up", "--nodes", "2", "--no-image-base").stdout  # as the fixture brought it up
    assert "nothing changed" in again
    assert (site.stat().st_mtime_ns, (cluster.state_dir / "known_hosts").read_text()) == before
    assert [cluster.exec(s, "cat /var/lib/ascend-sim/boot_id") for s in SERVERS] == ids


def test_up_with_another_shape_is_refused(cluster: Sim) -> None:
    proc = cluster.sim("up", "--nodes", "3", check=False)
    assert proc.returncode == 1
    assert "exists as 2 x atlas-800t-a2" in proc.stderr and "Fix:" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_status_lists_hosts(cluster: Sim) -> None:
    out = cluster.sim("status").stdout
    state = json.loads((cluster.state_dir / "cluster.json").read_text())
    for server in state["servers"]:
        line = next(line for line in out.splitlines() if line.split()[:1] == [server["name"]])
        assert server["address"] in line and " running " in line and " up " in line
        assert server["address"].startswith("127.0.0.")


def test_spec_is_valid_and_pins_the_cluster(cluster: Sim) -> None:
    cluster.cli("validate", f"inventories/{cluster.name}/site.yaml")
    text = (cluster.root / "inventories" / cluster.name / "site.yaml").read_text()
    assert f"known_hosts_file: {cluster.state_dir / 'known_hosts'}" in text
    assert "host_key_checking: true" in text
    for line in (cluster.state_dir / "known_hosts").read_text().splitlines():
        assert re.fullmatch(r"127\.0\.0\.\d+ ssh-ed25519 \S+", line)


def test_ansible_ping_over_ssh(cluster: Sim) -> None:
    cluster.cli("render", cluster.name)
    proc = cluster.ansible("all", "-m", "ping", "-o")
    assert _results(proc.stdout) == dict.fromkeys(SERVERS, "SUCCESS")


def test_fresh_atlas_box(cluster: Sim) -> None:
    out = cluster.exec("a2-01", "lspci -nn -d 19e5:")
    assert len(re.findall(r"Processing accelerators \[1200\]: .*\[19e5:d802\]", out)) == 8
    absent = cluster.exec(
        "a2-01", "command -v npu-smi || echo no-npu-smi; id HwHiAiUser 2>/dev/null || echo no-user; "
        "ls /dev/davinci0 2>/dev/null || echo no-dev"
    )  # fmt: skip
    assert absent.split() == ["no-npu-smi", "no-user", "no-dev"]
    hw = json.loads(cluster.exec("a2-02", "cat /var/lib/ascend-sim/hardware.json"))
    assert (hw["server"], hw["chip"], hw["cards"], hw["hbm_mb"], hw["pci_device_id"]) == (
        "a2-02", "910B3", 8, 65536, "d802"
    )  # fmt: skip
    assert len(hw["bus_ids"]) == 8


def test_ansible_reboot_changes_boot_id(cluster: Sim) -> None:
    cluster.cli("render", cluster.name)
    before = cluster.exec("a2-02", "cat /var/lib/ascend-sim/boot_id").strip()
    proc = cluster.ansible(
        "a2-02",
        "-m",
        "ansible.builtin.reboot",
        "-a",
        "boot_time_command='cat /var/lib/ascend-sim/boot_id'",
        "-o",
    )
    assert _results(proc.stdout) == {"a2-02": "CHANGED"}
    assert '"rebooted": true' in proc.stdout
    after = cluster.exec("a2-02", "cat /var/lib/ascend-sim/boot_id /proc/sys/kernel/random/boot_id").split()
    assert after[0] != before and after[0] == after[1]
    assert _results(cluster.ansible("all", "-m", "ping", "-o").stdout) == dict.fromkeys(SERVERS, "SUCCESS")


def test_fault_round_trip(cluster: Sim) -> None:
    cluster.cli("render", cluster.name)
    cluster.sim("fault", "unreachable", "a2-02")
    down = cluster.ansible("all", "-m", "ping", "-o", check=False)
    assert _results(down.stdout) == {"a2-01": "SUCCESS", "a2-02": "UNREACHABLE!"}
    assert "unreachable" in cluster.sim("status").stdout
    cluster.sim("fault", "back", "a2-02")
    assert _results(cluster.ansible("all", "-m", "ping", "-o").stdout) == dict.fromkeys(SERVERS, "SUCCESS")

    cluster.sim("fault", "npu-unhealthy", "a2-01", "3")
    cluster.sim("fault", "link-down", "a2-01", "0")
    cluster.sim("fault", "driver-fails", "a2-01")
    cluster.sim("fault", "vllm", "a2-01", "--crash-after", "5", "--port", "8000")
    faults = json.loads(cluster.exec("a2-01", "cat /var/lib/ascend-sim/faults.json"))
    assert faults == {"npu_unhealthy": [3], "link_down": [0], "driver_fails": True}
    fabric = json.loads((cluster.state_dir / "fabric" / "a2-01.json").read_text())
    assert fabric["0"]["link"] == "DOWN" and fabric["1"]["link"] == "UP"
    vllm = json.loads(cluster.exec("a2-01", "cat /var/lib/ascend-sim/vllm-faults.json"))
    assert vllm == {"ports": {"8000": {"crash_after_s": 5.0}}}
    cluster.sim("fault", "disk-full", "a2-01")
    use = int(cluster.exec("a2-01", "df --output=pcent /data | tail -1").strip().rstrip("%"))
    assert use >= 95
    assert "No space left" in cluster.exec("a2-01", "head -c 1048576 /dev/zero > /data/x; rm -f /data/x")

    cluster.sim("fault", "clear", "a2-01")
    assert cluster.exec("a2-01", "cat /var/lib/ascend-sim/faults.json").strip() == "{}"
    assert json.loads((cluster.state_dir / "fabric" / "a2-01.json").read_text())["0"]["link"] == "UP"
    assert int(cluster.exec("a2-01", "df --output=pcent /data | tail -1").strip().rstrip("%")) < 5
    rows = [
        line.split()
        for line in cluster.sim("status").stdout.splitlines()
        if line.split()[:1] in (["a2-01"], ["a2-02"])
    ]
    assert [row[-1] for row in rows] == ["-", "-"]  # no fault left on either server


def test_fault_errors_are_sentences(cluster: Sim) -> None:
    proc = cluster.sim("fault", "link-down", "a2-09", "0", check=False)
    assert proc.returncode == 1 and "has no server 'a2-09'" in proc.stderr and "Fix:" in proc.stderr
    proc = cluster.sim("fault", "npu-unhealthy", "a2-01", "8", check=False)
    assert proc.returncode == 1 and "do not exist" in proc.stderr and "Traceback" not in proc.stderr


def test_driver_install_through_ansible_and_its_faults(cluster: Sim) -> None:
    """The fake driver package over real SSH: missing HwHiAiUser, the driver-fails fault, then a clean
    install; vLLM faults then also reach serving containers through /usr/local/dcmi."""
    cluster.cli("render", cluster.name)
    pkg = next((cluster.state_dir / "packages").glob("*npu-driver_*.run"))
    cluster.ansible("a2-02", "-m", "copy", "-a", f"src={pkg} dest=/root/{pkg.name} mode=0755")
    install = ("a2-02", "-m", "command", "-a", f"/root/{pkg.name} --full --install-for-all --quiet", "-o")
    assert _results(cluster.ansible(*install, check=False).stdout) == {"a2-02": "FAILED!"}  # no HwHiAiUser
    user = "groupadd HwHiAiUser && useradd -g HwHiAiUser -d /home/HwHiAiUser -m HwHiAiUser -s /bin/bash"
    cluster.ansible("a2-02", "-m", "shell", "-a", user)
    cluster.sim("fault", "driver-fails", "a2-02")
    assert _results(cluster.ansible(*install, check=False).stdout) == {"a2-02": "FAILED!"}
    cluster.sim("fault", "driver-fails", "a2-02", "--clear")
    assert _results(cluster.ansible(*install).stdout) == {"a2-02": "CHANGED"}
    assert "910B3" in cluster.exec("a2-02", "npu-smi info")
    assert re.search(r"a2-02 .* 25\.5\.1 ", cluster.sim("status").stdout)
    cluster.sim("fault", "vllm", "a2-02", "--never-healthy")
    mirror = cluster.exec("a2-02", "cat /usr/local/dcmi/ascend-sim-vllm-faults.json")
    assert json.loads(mirror) == {"never_healthy": True}
    cluster.sim("fault", "clear", "a2-02")
    assert json.loads(cluster.exec("a2-02", "cat /usr/local/dcmi/ascend-sim-vllm-faults.json")) == {}
