"""Batched plays roll servers in inventory order, whatever order the group_by results arrived in: the
drivers rollout's batch play targets `npu:&npu_driver_pending`, and Ansible's own InventoryManager keeps the
order of the first group of an intersection (group_by alone would batch in arrival order, a race)."""

from __future__ import annotations

from pathlib import Path

import yaml
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader

REPO = Path(__file__).resolve().parents[2]


def batch_play_hosts() -> str:
    plays = yaml.safe_load((REPO / "playbooks" / "drivers.yml").read_text())
    (play,) = [p for p in plays if p.get("serial")]
    hosts: str = play["hosts"]
    return hosts


def test_the_drivers_batches_follow_inventory_order_not_result_arrival(tmp_path: Path) -> None:
    servers = [f"a2-0{i}" for i in range(1, 6)]
    inv = tmp_path / "hosts.yml"
    inv.write_text(yaml.safe_dump({"all": {"children": {"npu": {"hosts": {s: {} for s in servers}}}}}))
    manager = InventoryManager(loader=DataLoader(), sources=[str(inv)])
    manager.add_group("npu_driver_pending")
    for server in reversed(servers[1:]):  # results arrive last-first; a2-01 is already current
        manager.add_host(server, group="npu_driver_pending")
    pattern = batch_play_hosts()
    assert [h.name for h in manager.get_hosts(pattern)] == servers[1:]
    # the race this guards against: the bare group keeps the arrival order
    assert [h.name for h in manager.get_hosts("npu_driver_pending")] == list(reversed(servers[1:]))
