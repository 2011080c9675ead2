"""HCCN plan checks on literal specs: subnets, host addresses only, one address per NPU NIC.

Two Atlas 800T A2 servers (2 x 8 NPU NICs). Lines, columns, addresses and messages are worked out by hand
from the text of each spec (e.g. a /27 holds host numbers 1-30; 16 NICs from first_host 15 end at 30).
"""

from __future__ import annotations

import pytest

from orchestrator.spec.findings import Position
from tests.spec_text import TWO_A2_REPLICAS as SERVING
from tests.spec_text import check, described, errors_at, printed

OWN = "give every NPU NIC its own address"
DISJOINT = "use disjoint subnets: every address must belong to exactly one of network.hccn.subnets"
NO_HOSTS = "NPU NICs need addresses of their own: use an HCCN subnet that holds no host address"

SERVERS = """\
site: lab
profiles:
  a2:
    chip: 910B3
servers:
  - name: a2-01
    address: 10.0.0.11
    profile: a2
    roles: [npu, build, monitoring]
  - name: a2-02
    address: 10.0.0.12
    profile: a2
"""


def _hccn(network: str, servers: str = SERVERS) -> str:
    return servers + network + SERVING


def test_overlapping_subnet_is_reported_at_the_later_subnet_with_the_earlier_line() -> None:
    result = check(
        _hccn(
            """\
network:
  hccn:
    plan: per_index
    subnets:
      - cidr: 192.168.0.0/16
      - cidr: 192.168.100.0/24
"""
        )
    )
    assert [(f.path, f.position) for f in result.errors] == [
        (("network", "hccn", "subnets", 1, "cidr"), Position(18, 15))
    ]
    assert printed(result).startswith(
        "site.yaml:18:15: error: network.hccn.subnets[1].cidr: subnet 192.168.100.0/24 overlaps subnets[0] "
        "192.168.0.0/16 (both contain 192.168.100.0/24)\n"
        "    first defined at site.yaml:17:15 (network.hccn.subnets[0].cidr)\n"
        "    fix: use disjoint subnets"
    )


def test_duplicate_subnet_names_the_first() -> None:
    result = check(
        _hccn(
            """\
network:
  hccn:
    plan: per_index
    subnets:
      - cidr: 192.168.100.0/24
      - cidr: 192.168.101.0/24
      - cidr: 192.168.100.0/24
"""
        )
    )
    (found,) = result.errors
    assert found.path == ("network", "hccn", "subnets", 2, "cidr") and found.position == Position(19, 15)
    assert described(found) == (
        "network.hccn.subnets[2].cidr",
        "subnet 192.168.100.0/24 is listed twice (also subnets[0])",
        DISJOINT,
        "hccn",
        [("first defined", "network.hccn.subnets[0].cidr")],
    )
    assert [r.position for r in found.related] == [Position(17, 15)]


def _explicit_first(addresses: str) -> str:
    servers = SERVERS.replace(
        "    roles: [npu, build, monitoring]\n",
        f"    roles: [npu, build, monitoring]\n    overrides:\n      hccn_addresses: [{addresses}]\n",
    )
    return _hccn(
        """\
network:
  hccn:
    subnets:
      - cidr: 192.168.100.0/24
    first_host: 100
""",
        servers,
    )


def test_network_and_broadcast_addresses_are_refused_their_neighbours_are_not() -> None:
    middle = ", ".join(f"192.168.100.{n}" for n in range(2, 8))
    result = check(_explicit_first(f"192.168.100.0, {middle}, 192.168.100.255"))
    assert {f.code for f in result.errors} == {"hccn"}
    found = [(f.path[-1], f.message, f.fix) for f in result.errors]
    assert found == [
        (
            0,
            "HCCN address 192.168.100.0 of 'a2-01' NPU 0 is the network address of 192.168.100.0/24",
            "use a host address of 192.168.100.0/24: 192.168.100.1 to 192.168.100.254",
        ),
        (
            7,
            "HCCN address 192.168.100.255 of 'a2-01' NPU 7 is the broadcast address of 192.168.100.0/24",
            "use a host address of 192.168.100.0/24: 192.168.100.1 to 192.168.100.254",
        ),
    ]
    assert result.errors[0].position == Position(11, 24)
    assert check(_explicit_first(f"192.168.100.1, {middle}, 192.168.100.254")).ok


def _sized(cidr: str, first_host: int, gateway: str = "") -> str:
    gw = f"\n        gateway: {gateway}" if gateway else ""
    return _hccn(
        f"""\
network:
  hccn:
    plan: single_subnet
    subnets:
      - cidr: {cidr}{gw}
    first_host: {first_host}
"""
    )


def test_single_subnet_holds_every_nic_up_to_the_last_host_address() -> None:
    result = check(_sized("192.168.100.0/27", 15))
    assert result.ok, printed(result)
    assert result.plan is not None
    first, second = result.plan.host("a2-01").hccn, result.plan.host("a2-02").hccn
    assert (first[0].address, second[-1].address) == ("192.168.100.15", "192.168.100.30")


def test_single_subnet_one_nic_too_many_would_take_the_broadcast_address() -> None:
    result = check(_sized("192.168.100.0/27", 16))
    (found,) = result.errors
    assert found.path == ("network", "hccn", "subnets", 0, "cidr") and found.position == Position(17, 15)
    assert found.message == (
        "subnet 192.168.100.0/27 is too small: the plan needs host numbers up to 31 (2 servers, 16 "
        "addresses per subnet from first_host 16), the last host number of a /27 is 30 (192.168.100.30)"
    )
    assert (found.code, found.related) == ("hccn", ())


def test_single_subnet_with_fewer_host_addresses_than_nics() -> None:
    result = check(_sized("192.168.100.0/28", 1))
    (found,) = result.errors
    assert found.message == (
        "subnet 192.168.100.0/28 is too small: the plan needs host numbers up to 16 (2 servers, 16 "
        "addresses per subnet from first_host 1), the last host number of a /28 is 14 (192.168.100.14)"
    )
    assert found.fix == "use a larger subnet (e.g. a /24) or lower first_host"


def test_gateway_inside_the_planned_range_is_reported_at_the_gateway() -> None:
    result = check(_sized("192.168.100.0/24", 10, gateway="192.168.100.12"))
    (found,) = result.errors
    assert found.path == ("network", "hccn", "subnets", 0, "gateway") and found.position == Position(18, 18)
    assert described(found)[1:] == (
        "the gateway of subnets[0] (192.168.100.12) is also the address the plan gives 'a2-01' NPU 2",
        "move the gateway below network.hccn.first_host (e.g. host number 1) or raise first_host",
        "hccn",
        [],
    )


def test_planned_nic_address_that_is_a_management_address() -> None:
    result = check(_sized("10.0.0.0/24", 10))
    found = [(f.path, f.message, [r.position for r in f.related]) for f in result.errors]
    assert {(f.fix, f.code) for f in result.errors} == {(NO_HOSTS, "hccn")}
    assert {r.note for f in result.errors for r in f.related} == {"also used"}
    subnet = ("network", "hccn", "subnets", 0, "cidr")
    assert found == [
        (
            subnet,
            "the plan gives 'a2-01' NPU 1 the address 10.0.0.11, which is the management address of 'a2-01'",
            [Position(7, 14)],
        ),
        (
            subnet,
            "the plan gives 'a2-01' NPU 2 the address 10.0.0.12, which is the management address of 'a2-02'",
            [Position(11, 14)],
        ),
    ]


def test_explicit_address_that_the_plan_gives_a_later_server() -> None:
    addresses = ", ".join(f"192.168.100.{n}" for n in range(18, 26))
    result = check(_explicit_first(addresses).replace("first_host: 100", "first_host: 10"))
    found = errors_at(result, "servers[0].overrides.hccn_addresses[0]")
    assert [f.message for f in found] == [
        "HCCN address 192.168.100.18 of 'a2-01' NPU 0 is also the address the plan gives 'a2-02' NPU 0 "
        "(host numbers from first_host 10)"
    ]
    assert [(r.note, r.position) for r in found[0].related] == [("planned from", Position(18, 15))]
    assert (found[0].fix, found[0].code) == (
        OWN + ": pick an explicit address outside the planned range, or change network.hccn.first_host",
        "hccn",
    )
    assert len(result.errors) == 8  # each of the eight explicit addresses is planned for a2-02


def test_nic_addresses_are_not_reported_at_keys_the_user_did_not_write() -> None:
    result = check(_sized("10.0.0.0/24", 10))
    assert result.errors
    assert not [f for f in result.errors if f.path[:1] == ("servers",)]


def _network(network: str, first: str = "", second: str = "") -> str:
    servers = SERVERS.replace(
        "    roles: [npu, build, monitoring]\n", "    roles: [npu, build, monitoring]\n" + first
    )
    return _hccn(network, servers + second)


NET_24 = """\
network:
  hccn:
    subnets:
      - cidr: 192.168.100.0/24
        gateway: 192.168.100.1
    first_host: {first_host}
"""


def test_explicit_address_that_is_the_gateway() -> None:
    nics = ", ".join(f"192.168.100.{n}" for n in range(1, 9))
    result = check(
        _network(NET_24.format(first_host=100), first=f"    overrides: {{hccn_addresses: [{nics}]}}\n")
    )
    assert [described(f) for f in result.errors] == [
        (
            "servers[0].overrides.hccn_addresses[0]",
            "HCCN address 192.168.100.1 of 'a2-01' NPU 0 is the gateway of subnets[0]",
            "give the NPU NIC another address",
            "hccn",
            [("also used", "network.hccn.subnets[0].gateway")],
        )
    ]


def test_explicit_addresses_of_two_servers_that_clash() -> None:
    first = ", ".join(f"192.168.100.{n}" for n in range(50, 58))
    second = ", ".join(f"192.168.100.{n}" for n in (60, 61, 62, 55, 64, 65, 66, 67))
    result = check(
        _network(
            NET_24.format(first_host=100),
            first=f"    overrides: {{hccn_addresses: [{first}]}}\n",
            second=f"    overrides: {{hccn_addresses: [{second}]}}\n",
        )
    )
    assert [described(f) for f in result.errors] == [
        (
            "servers[1].overrides.hccn_addresses[3]",
            "HCCN address 192.168.100.55 of 'a2-02' NPU 3 is already used by 'a2-01' NPU 5",
            OWN,
            "hccn",
            [("first defined", "servers[0].overrides.hccn_addresses[5]")],
        )
    ]


def test_explicit_address_of_a_later_server_that_the_plan_gave_an_earlier_one() -> None:
    second = ", ".join(f"192.168.100.{n}" for n in (12, 30, 31, 32, 33, 34, 35, 36))
    result = check(
        _network(NET_24.format(first_host=10), second=f"    overrides: {{hccn_addresses: [{second}]}}\n")
    )
    assert [described(f) for f in result.errors] == [
        (
            "servers[1].overrides.hccn_addresses[0]",
            "HCCN address 192.168.100.12 of 'a2-02' NPU 0 is already used by 'a2-01' NPU 2",
            OWN,
            "hccn",
            [("planned from", "network.hccn.subnets[0].cidr")],
        )
    ]


def test_explicit_address_that_is_a_management_address() -> None:
    nics = ", ".join(["10.0.0.12"] + [f"10.0.0.{n}" for n in range(50, 57)])
    network = (
        NET_24.format(first_host=100)
        .replace("192.168.100.0/24", "10.0.0.0/24")
        .replace("192.168.100.1", "10.0.0.1")
    )
    result = check(_network(network, first=f"    overrides: {{hccn_addresses: [{nics}]}}\n"))
    assert [described(f) for f in result.errors] == [
        (
            "servers[0].overrides.hccn_addresses[0]",
            "HCCN address 10.0.0.12 of 'a2-01' NPU 0 is the management address of 'a2-02'",
            NO_HOSTS,
            "hccn",
            [("also used", "servers[1].address")],
        )
    ]


def test_planned_address_that_is_a_servers_hccl_if_ip() -> None:
    result = check(
        _network(NET_24.format(first_host=10), second="    overrides: {hccl_if_ip: 192.168.100.12}\n")
    )
    assert [described(f)[1:] for f in result.errors] == [
        (
            "the plan gives 'a2-01' NPU 2 the address 192.168.100.12, which is the HCCL_IF_IP of 'a2-02'",
            NO_HOSTS,
            "hccn",
            [("also used", "servers[1].overrides.hccl_if_ip")],
        )
    ]


def test_netdetect_outside_its_subnet_without_a_gateway() -> None:
    network = "network:\n  hccn:\n    subnets:\n      - {cidr: 192.168.100.0/24, netdetect: 192.168.200.1}\n"
    result = check(_hccn(network))
    assert [described(f) for f in result.errors] == [
        (
            "network.hccn.subnets[0].netdetect",
            "netdetect 192.168.200.1 is outside its subnet 192.168.100.0/24",
            "use an address inside 192.168.100.0/24",
            "hccn",
            [],
        )
    ]


@pytest.mark.parametrize(
    ("cidrs", "message", "earlier"),
    [
        (
            ["192.168.100.0/24", "192.168.101.0/24", "192.168.101.128/25"],
            "subnet 192.168.101.128/25 overlaps subnets[1] 192.168.101.0/24 "
            "(both contain 192.168.101.128/25)",
            1,
        ),
        (
            ["192.168.100.0/24", "192.168.0.0/16"],
            "subnet 192.168.0.0/16 overlaps subnets[0] 192.168.100.0/24 (both contain 192.168.100.0/24)",
            0,
        ),
    ],
)
def test_overlap_names_the_earlier_subnet_and_the_shared_range(
    cidrs: list[str], message: str, earlier: int
) -> None:
    subnets = "".join(f"      - cidr: {c}\n" for c in cidrs)
    result = check(_hccn(f"network:\n  hccn:\n    plan: per_index\n    subnets:\n{subnets}"))
    assert [described(f) for f in result.errors] == [
        (
            f"network.hccn.subnets[{len(cidrs) - 1}].cidr",
            message,
            DISJOINT,
            "hccn",
            [("first defined", f"network.hccn.subnets[{earlier}].cidr")],
        )
    ]


@pytest.mark.parametrize(
    ("network", "expected"),
    [
        (
            "network:\n  hccn:\n    subnets: []\n",
            (
                "network.hccn.subnets",
                "the HCCN plan has no subnets",
                "add at least one subnet, e.g. subnets: [{cidr: 192.168.100.0/24}]",
            ),
        ),
        (
            "network:\n  hccn:\n    subnets: [{cidr: 192.168.100.0/24}, {cidr: 192.168.101.0/24}]\n",
            (
                "network.hccn.subnets",
                "plan 'single_subnet' takes exactly one subnet, 2 given",
                "use plan: per_index for several subnets",
            ),
        ),
        (
            "network:\n  hccn:\n    plan: explicit\n    subnets: [{cidr: 192.168.100.0/24}]\n",
            (
                "servers[0].overrides.hccn_addresses",
                "server 'a2-01' has 8 NPU devices but 0 HCCN addresses",
                "list exactly 8 addresses, one per device index",
            ),
        ),
    ],
)
def test_plans_that_cannot_be_laid_out(network: str, expected: tuple[str, str, str]) -> None:
    result = check(_hccn(network))
    assert [described(f)[:4] for f in result.errors][:1] == [(*expected, "hccn")]


def test_explicit_addresses_outside_every_subnet_are_each_reported() -> None:
    nics = ", ".join(["10.1.1.1", "10.1.1.2"] + [f"192.168.10{d % 2}.{50 + d}" for d in range(2, 8)])
    network = (
        "network:\n  hccn:\n    plan: per_index\n"
        "    subnets: [{cidr: 192.168.100.0/24}, {cidr: 192.168.101.0/24}]\n"
    )
    result = check(_network(network, first=f"    overrides: {{hccn_addresses: [{nics}]}}\n"))
    assert [described(f) for f in result.errors] == [
        (
            f"servers[0].overrides.hccn_addresses[{d}]",
            f"address 10.1.1.{d + 1} is in none of the HCCN subnets (192.168.100.0/24, 192.168.101.0/24)",
            "pick an address inside one of network.hccn.subnets",
            "hccn",
            [],
        )
        for d in (0, 1)
    ]


@pytest.mark.parametrize(
    ("cidr", "tail"),
    [
        ("192.168.100.0/30", "the last host number of a /30 is 2 (192.168.100.2)"),
        ("192.168.100.0/31", "a /31 has no host addresses"),
        ("192.168.100.7/32", "a /32 has no host addresses"),
    ],
)
def test_tiny_subnets_say_how_many_hosts_they_hold(cidr: str, tail: str) -> None:
    (found,) = check(_sized(cidr, 1)).errors
    assert found.message.endswith(f"from first_host 1), {tail}")
