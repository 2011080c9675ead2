"""HCCN plan: NPU-NIC addresses per device, subnet layouts, and the checks on them."""

from __future__ import annotations

from typing import Any

from tests.helpers import validate_data
from tests.spec_text import described


def _messages(data: dict[str, Any]) -> list[str]:
    return [f.message for f in validate_data(data).errors if f.code == "hccn"]


def test_single_subnet_numbers_devices_server_by_server(pair: dict) -> None:
    plan = validate_data(pair).plan
    assert plan is not None
    a, b = plan.host("a2-01").hccn, plan.host("a2-02").hccn
    assert [d.address for d in a] == [f"192.168.100.{10 + i}" for i in range(8)]
    assert [d.address for d in b] == [f"192.168.100.{18 + i}" for i in range(8)]
    assert {d.netmask for d in a + b} == {"255.255.255.0"}
    assert {d.gateway for d in a} == {"192.168.100.1"} and {d.netdetect for d in a} == {"192.168.100.1"}
    assert plan.host("ops-01").hccn == ()


def test_per_index_puts_the_two_dies_of_an_a3_card_in_different_subnets(a3: dict) -> None:
    plan = validate_data(a3).plan
    assert plan is not None
    devices = plan.host("a3-01").hccn
    assert len(devices) == 16
    assert devices[0].address == "192.168.110.10" and devices[1].address == "192.168.111.10"
    assert devices[2].address == "192.168.110.11" and devices[15].address == "192.168.111.17"
    assert devices[0].gateway is None and devices[0].netdetect is None


def test_old_atlas_800_four_subnets_pair_npu_i_and_i_plus_4(pair: dict) -> None:
    pair["network"]["hccn"] = {
        "plan": "per_index",
        "subnets": [{"cidr": f"192.168.{10 + i}.0/24", "gateway": f"192.168.{10 + i}.1"} for i in range(4)],
    }
    plan = validate_data(pair).plan
    assert plan is not None
    dev = plan.host("a2-01").hccn
    assert dev[0].address == "192.168.10.10" and dev[4].address == "192.168.10.11"
    assert dev[3].address == "192.168.13.10" and dev[7].address == "192.168.13.11"
    second = plan.host("a2-02").hccn
    assert second[0].address == "192.168.10.12" and second[0].gateway == "192.168.10.1"


def test_explicit_addresses_per_server(pair: dict) -> None:
    pair["network"]["hccn"]["plan"] = "explicit"
    for i, srv in enumerate(pair["servers"][:2]):
        srv["overrides"] = {"hccn_addresses": [f"192.168.100.{100 + 10 * i + d}" for d in range(8)]}
    plan = validate_data(pair).plan
    assert plan is not None
    assert plan.host("a2-02").hccn[7].address == "192.168.100.117"
    pair["servers"][1]["overrides"]["hccn_addresses"][7] = "192.168.100.100"
    assert any("already used by 'a2-01' NPU 0" in m for m in _messages(pair))
    pair["servers"][1]["overrides"]["hccn_addresses"][7] = "10.1.1.1"
    assert any("is in none of the HCCN subnets" in m for m in _messages(pair))
    pair["servers"][1]["overrides"]["hccn_addresses"] = pair["servers"][1]["overrides"]["hccn_addresses"][:4]
    assert any("has 8 NPU devices but 4 HCCN addresses" in m for m in _messages(pair))


def test_subnet_too_small_and_gateway_collision(pair: dict) -> None:
    pair["network"]["hccn"]["subnets"][0] = {"cidr": "192.168.100.0/28"}
    assert any("is too small" in m for m in _messages(pair))
    pair["network"]["hccn"]["subnets"][0] = {"cidr": "192.168.100.0/24", "gateway": "192.168.100.12"}
    assert any(
        "the gateway of subnets[0] (192.168.100.12) is also the address the plan gives" in m
        for m in _messages(pair)
    )
    pair["network"]["hccn"]["subnets"][0] = {"cidr": "192.168.100.0/24", "gateway": "192.168.200.1"}
    assert any("outside its subnet" in m for m in _messages(pair))


def test_multi_node_replica_needs_an_hccn_plan(pair: dict) -> None:
    del pair["network"]
    assert any("there is no HCCN plan" in m for m in _messages(pair))


def test_hccn_plan_on_300i_is_ignored_with_a_warning(duo: dict) -> None:
    duo["network"] = {"hccn": {"subnets": [{"cidr": "192.168.9.0/24"}]}}
    result = validate_data(duo)
    assert result.ok
    assert [described(f) for f in result.warnings] == [
        (
            "network.hccn",
            "no server has NPUs with RoCE NICs (300I cards have none); the HCCN plan is ignored",
            "remove network.hccn",
            "hccn",
            [],
        )
    ]
    assert result.plan is not None and result.plan.host("duo-01").hccn == ()
