"""Batched plays roll servers in inventory order, whatever order the group_by results arrived in: the
drivers rollout's batch play targets `phase_drivers:&npu_driver_pending`, and Ansible's own InventoryManager
keeps the order of the first group of an intersection (group_by alone would batch in arrival order, a race).
The serve rollout's batch play keeps the order add_host gave serve_update (the canary first)."""

from __future__ import annotations

from pathlib import Path

import yaml
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader

REPO = Path(__file__).resolve().parents[2]


def batch_play_hosts(playbook: str = "drivers.yml", group: str = "") -> str:
    """The hosts of the playbook's batched play (the one whose hosts name `group`, where there are several:
    serve.yml rolls replicas, then the PD pools)."""
    plays = yaml.safe_load((REPO / "playbooks" / playbook).read_text())
    (play,) = [p for p in plays if p.get("serial") and group in p["hosts"]]
    hosts: str = play["hosts"]
    return hosts


def test_the_drivers_batches_follow_inventory_order_not_result_arrival(tmp_path: Path) -> None:
    servers = [f"a2-0{i}" for i in range(1, 6)]
    inv = tmp_path / "hosts.yml"
    inv.write_text(
        yaml.safe_dump({"all": {"children": {"phase_drivers": {"hosts": {s: {} for s in servers}}}}})
    )
    manager = InventoryManager(loader=DataLoader(), sources=[str(inv)])
    manager.add_group("npu_driver_pending")
    for server in reversed(servers[1:]):  # results arrive last-first; a2-01 is already current
        manager.add_host(server, group="npu_driver_pending")
    pattern = batch_play_hosts()
    assert [h.name for h in manager.get_hosts(pattern)] == servers[1:]
    # the race this guards against: the bare group keeps the arrival order
    assert [h.name for h in manager.get_hosts("npu_driver_pending")] == list(reversed(servers[1:]))


def test_the_serve_batches_follow_the_order_add_host_gave(tmp_path: Path) -> None:
    servers = [f"a2-0{i}" for i in range(1, 6)]
    inv = tmp_path / "hosts.yml"
    inv.write_text(
        yaml.safe_dump({"all": {"children": {"phase_serve": {"hosts": {s: {} for s in servers}}}}})
    )
    manager = InventoryManager(loader=DataLoader(), sources=[str(inv)])
    manager.add_group("serve_update")
    canary_first = ["a2-04", "a2-02", "a2-05"]  # plan order of the replicas to roll, not inventory order
    for server in canary_first:
        manager.add_host(server, group="serve_update")
    assert [h.name for h in manager.get_hosts(batch_play_hosts("serve.yml", "serve_update:"))] == canary_first
