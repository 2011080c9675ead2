"""Peers of the HCCN gate and HCCL rank tables, from the plan: written-out expectations for the example sites
(addresses as test_network_plan numbers them; rank table layout of ascend-host.md "hccn_tool")."""

from __future__ import annotations

from typing import Any

from orchestrator.planning.model import HccnPeer, SitePlan
from tests.helpers import validate_data


def _plan(data: dict[str, Any]) -> SitePlan:
    plan = validate_data(data).plan
    assert plan is not None
    return plan


def hccn_peers(plan: SitePlan, server: str) -> tuple[HccnPeer, ...]:
    return plan.host(server).hccn_peers


def rank_tables(plan: SitePlan, server: str) -> dict[str, Any]:
    return dict(plan.host(server).rank_tables)


def test_a_two_server_replica_pings_every_nic_of_the_other_server(pair: dict[str, Any]) -> None:
    plan = _plan(pair)
    assert hccn_peers(plan, "a2-01") == tuple(HccnPeer("a2-02", i, f"192.168.100.{18 + i}") for i in range(8))
    assert hccn_peers(plan, "a2-02") == tuple(HccnPeer("a2-01", i, f"192.168.100.{10 + i}") for i in range(8))
    assert hccn_peers(plan, "ops-01") == ()


def test_rank_table_of_a_two_server_replica(pair: dict[str, Any]) -> None:
    plan = _plan(pair)
    expected = {
        "status": "completed",
        "version": "1.0",
        "server_count": "2",
        "server_list": [
            {
                "server_id": "10.20.1.11",
                "device": [
                    {"device_id": str(i), "device_ip": f"192.168.100.{10 + i}", "rank_id": str(i)}
                    for i in range(8)
                ],
            },
            {
                "server_id": "10.20.1.12",
                "device": [
                    {"device_id": str(i), "device_ip": f"192.168.100.{18 + i}", "rank_id": str(8 + i)}
                    for i in range(8)
                ],
            },
        ],
    }
    assert rank_tables(plan, "a2-01") == {"r1": expected}
    assert rank_tables(plan, "a2-02") == {"r1": expected}
    assert rank_tables(plan, "ops-01") == {}


def test_single_server_replicas_have_no_peers_and_no_rank_table(single: dict[str, Any]) -> None:
    plan = _plan(single)
    assert hccn_peers(plan, "a2-01") == () and rank_tables(plan, "a2-01") == {}


def test_npus_without_roce_have_neither(duo: dict[str, Any]) -> None:
    plan = _plan(duo)
    assert plan.host("duo-01").hccn == ()
    assert hccn_peers(plan, "duo-01") == () and rank_tables(plan, "duo-01") == {}


def test_a_three_server_replica_pings_both_other_servers_and_ranks_run_on(fleet: dict[str, Any]) -> None:
    fleet["network"] = {"hccn": {"plan": "single_subnet", "subnets": [{"cidr": "192.168.50.0/24"}]}}
    fleet["serving"]["parallelism"] = {"tp": 8, "dp": 3}
    fleet["serving"]["replicas"] = [{"name": "big", "servers": ["a2-01", "a2-02", "a2-03"]}]
    fleet["rollout"]["min_available"] = 0
    plan = _plan(fleet)
    # single_subnet numbers the NPU servers in spec order from .10: a2-01 .10-.17, a2-02 .18-.25, ...
    assert hccn_peers(plan, "a2-02") == tuple(
        [HccnPeer("a2-01", i, f"192.168.50.{10 + i}") for i in range(8)]
        + [HccnPeer("a2-03", i, f"192.168.50.{26 + i}") for i in range(8)]
    )
    assert hccn_peers(plan, "a2-04") == () and rank_tables(plan, "a2-04") == {}
    table = rank_tables(plan, "a2-03")["big"]
    assert table["server_count"] == "3"
    assert [d["rank_id"] for s in table["server_list"] for d in s["device"]] == [str(r) for r in range(24)]
    assert table["server_list"][2]["device"][7] == {
        "device_id": "7",
        "device_ip": "192.168.50.33",
        "rank_id": "23",
    }
