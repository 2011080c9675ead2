"""The network phase (role hccn_network) on two simulated Atlas 800T A2 servers serving one replica over both,
with plain ansible-playbook and the rendered inventory: converge, a second run changes nothing, check mode
after it reports nothing, a hand-changed NIC address on one NPU is reported by --check (that host and task
only, nothing written) and fixed by a run, and a peer NPU whose link is down fails the gate naming the host,
the NPU and the peer."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.sim import serving_helpers as sv
from tests.integration.sim.sim_helpers import Sim, ansible_playbook, module_cluster, recap

pytestmark = pytest.mark.integration

SERVERS = ("a2-01", "a2-02")
HCCN_TOOL = "/usr/local/Ascend/driver/tools/hccn_tool"
# Files the NIC state lives in on a server: the live NICs (simulator), their record, the rank tables.
STATE_FILES = "/var/lib/ascend-sim/hccn_live.json /etc/hccn.conf /etc/ascend-orchestrator/hccl/*.json"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from module_cluster(tmp_path_factory, "hn", "--nodes", "2", "--no-image-base")


@pytest.fixture(scope="module")
def inventory(cluster: Sim) -> Path:
    """The cluster's spec with one replica over both servers (tp 16), rendered by the CLI; driver in."""
    site = yaml.safe_load((cluster.root / "inventories" / cluster.name / "site.yaml").read_text())
    site["site"] = f"{cluster.name}-net"
    site["serving"]["parallelism"] = {"tp": 16}
    site["serving"]["replicas"] = [{"name": "r16", "servers": list(SERVERS), "multi_node_tp": True}]
    folder = cluster.root / "inventories" / f"{cluster.name}-net"
    folder.mkdir()
    (folder / "site.yaml").write_text(yaml.safe_dump(site, sort_keys=False))
    cluster.cli("render", str(folder / "site.yaml"))
    sv.install_driver(cluster, ":".join(SERVERS))
    return folder


def playbook(cluster: Sim, inventory: Path, *args: str) -> tuple[int, str, dict[str, tuple[int, ...]]]:
    """playbooks/network.yml with plain ansible-playbook -> (rc, output, recap per host: ok, changed,
    unreachable, failed)."""
    fast_gate = ("-e", "hccn_network_gate_retries=2", "-e", "hccn_network_gate_delay=1")
    proc = ansible_playbook(
        cluster.root, inventory / "hosts.yml", "network.yml", *fast_gate, *args, timeout=900
    )
    out = proc.stdout + proc.stderr
    return proc.returncode, out, {h: tuple(c.values()) for h, c in recap(proc.stdout).items()}


def host_vars(inventory: Path, server: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((inventory / "host_vars" / f"{server}.yml").read_text())
    return data


def live_ip(cluster: Sim, server: str, dev: int) -> str:
    return cluster.exec(server, f"{HCCN_TOOL} -i {dev} -ip -g").strip()


def state(cluster: Sim) -> dict[str, str]:
    return {s: cluster.exec(s, f"sha256sum {STATE_FILES}") for s in SERVERS}


def test_converge_then_nothing_changes(cluster: Sim, inventory: Path) -> None:
    rc, out, recap = playbook(cluster, inventory, "-v")  # -v: the gate's message of an ok result
    assert rc == 0, out
    assert set(recap) == set(SERVERS) and all(r[1] > 0 and r[2:] == (0, 0) for r in recap.values()), out
    for server in SERVERS:
        hv = host_vars(inventory, server)
        for dev in hv["hccn_network_devices"]:
            assert (
                live_ip(cluster, server, dev["index"]) == f"ipaddr:{dev['address']}\nnetmask:{dev['netmask']}"
            )
        (table,) = hv["hccn_network_rank_tables"]
        written = json.loads(cluster.exec(server, "cat /etc/ascend-orchestrator/hccl/r16.json"))
        assert written == table["table"] and written["server_count"] == "2"
    # the address a2-01 NPU 0 got is what the single_subnet plan gives (sim spec: 127.100.0.0/24, from .10)
    assert live_ip(cluster, "a2-01", 0) == "ipaddr:127.100.0.10\nnetmask:255.255.255.0"
    assert live_ip(cluster, "a2-02", 7) == "ipaddr:127.100.0.25\nnetmask:255.255.255.0"
    assert "8 NPU NICs up, 8 pings to 8 peer NICs answered" in out

    rc, out, recap = playbook(cluster, inventory)
    assert rc == 0 and {h: r[1] for h, r in recap.items()} == dict.fromkeys(SERVERS, 0), out

    before = state(cluster)
    rc, out, recap = playbook(cluster, inventory, "--check", "--diff")
    assert rc == 0 and {h: r[1] for h, r in recap.items()} == dict.fromkeys(SERVERS, 0), out
    assert state(cluster) == before


def test_hand_changed_address_is_reported_by_check_and_fixed(cluster: Sim, inventory: Path) -> None:
    planned = host_vars(inventory, "a2-02")["hccn_network_devices"][3]
    cluster.exec("a2-02", f"{HCCN_TOOL} -i 3 -ip -s address 127.100.0.99 netmask 255.255.255.0")
    before = state(cluster)
    rc, out, recap = playbook(cluster, inventory, "--check", "--diff")
    assert rc == 0, out
    assert {h: r[1] for h, r in recap.items()} == {"a2-01": 0, "a2-02": 1}, out
    changed = re.findall(r"^changed: \[(\S+)\]", out, re.M)
    assert changed == ["a2-02"], out
    task = out.split("changed: [a2-02]")[0].rsplit("TASK [", 1)[1].split("]", 1)[0]
    assert task.startswith("hccn_network : Set NPU NIC address"), task
    assert "address: 127.100.0.99" in out and f"address: {planned['address']}" in out  # the diff
    assert state(cluster) == before  # --check wrote nothing on either host

    rc, out, recap = playbook(cluster, inventory)
    assert rc == 0 and {h: r[1] for h, r in recap.items()} == {"a2-01": 0, "a2-02": 1}, out
    assert live_ip(cluster, "a2-02", 3) == f"ipaddr:{planned['address']}\nnetmask:255.255.255.0"
    rc, out, recap = playbook(cluster, inventory)
    assert rc == 0 and {h: r[1] for h, r in recap.items()} == dict.fromkeys(SERVERS, 0), out


def test_peer_link_down_fails_the_gate_naming_host_npu_and_peer(cluster: Sim, inventory: Path) -> None:
    peer = host_vars(inventory, "a2-02")["hccn_network_devices"][5]["address"]
    mine = host_vars(inventory, "a2-01")["hccn_network_devices"][5]["address"]
    cluster.sim("fault", "link-down", "a2-02", "5")
    try:
        rc, out, recap = playbook(cluster, inventory)
    finally:
        cluster.sim("fault", "clear", "a2-02")
    assert rc != 0 and recap["a2-01"][3] == 1 and recap["a2-02"][3] == 1, out
    assert (
        f"a2-01 device 5 ({mine}) -> a2-02 device 5 ({peer}): 3 packets transmitted, 0 received, "
        f"100.00% packet loss (reproduce on a2-01: hccn_tool -i 5 -ping -g address {peer})"
    ) in out
    assert "a2-02 device 5: link DOWN" in out
    rc, out, _ = playbook(cluster, inventory)  # the link is back: the gate passes again
    assert rc == 0, out
