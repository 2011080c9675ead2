"""Values unique across the site: names, management addresses, HCCL_IF_IP; both positions reported.

Every spec here is literal YAML; the expected lines, columns and messages are read off that text.
"""

from __future__ import annotations

from orchestrator.spec.findings import Position
from tests.spec_text import TWO_A2_REPLICAS as SERVING
from tests.spec_text import check, described, errors_at, printed

FIX_IF_IP = (
    "HCCL_IF_IP is an address of the server itself (its host NIC for HCCL): set "
    "servers[{k}].overrides.hccl_if_ip to an address of '{name}', or leave it out to use its "
    "management address"
)


def test_copy_pasted_hccl_if_ip_is_reported_at_the_second_with_the_first_position() -> None:
    result = check(
        """
        site: lab
        profiles:
          a2:
            chip: 910B3
        servers:
          - name: a2-01
            address: 10.0.0.11
            profile: a2
            roles: [npu, build, monitoring]
            overrides:
              hccl_if_ip: 10.1.0.11
          - name: a2-02
            address: 10.0.0.12
            profile: a2
            overrides:
              hccl_if_ip: 10.1.0.11
        """,
        SERVING,
    )
    assert [f.path for f in result.errors] == [("servers", 1, "overrides", "hccl_if_ip")]
    (found,) = result.errors
    assert found.position == Position(16, 19)
    assert [(r.path, r.position) for r in found.related] == [
        (("servers", 0, "overrides", "hccl_if_ip"), Position(11, 19))
    ]
    assert printed(result) == (
        "site.yaml:16:19: error: servers[1].overrides.hccl_if_ip: HCCL_IF_IP 10.1.0.11 of server 'a2-02' "
        "is also the HCCL_IF_IP of server 'a2-01' (servers[0])\n"
        "    first defined at site.yaml:11:19 (servers[0].overrides.hccl_if_ip)\n"
        "    fix: HCCL_IF_IP is an address of the server itself (its host NIC for HCCL): set "
        "servers[1].overrides.hccl_if_ip to an address of 'a2-02', or leave it out to use its management "
        "address"
    )
    assert result.plan is None


def test_hccl_if_ip_that_is_another_servers_management_address() -> None:
    result = check(
        """
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
            overrides: {hccl_if_ip: 10.0.0.11}
        """,
        SERVING,
    )
    (found,) = result.errors
    assert found.position == Position(13, 29)
    assert described(found) == (
        "servers[1].overrides.hccl_if_ip",
        "HCCL_IF_IP 10.0.0.11 of server 'a2-02' is also the management address of server 'a2-01' "
        "(servers[0])",
        FIX_IF_IP.format(k=1, name="a2-02"),
        "unique",
        [("first defined", "servers[0].address")],
    )
    assert [r.position for r in found.related] == [Position(7, 14)]


def test_management_address_that_an_earlier_server_took_as_hccl_if_ip_names_the_override_to_fix() -> None:
    result = check(
        """
        site: lab
        profiles:
          a2:
            chip: 910B3
        servers:
          - name: a2-01
            address: 10.0.0.11
            profile: a2
            roles: [npu, build, monitoring]
            overrides: {hccl_if_ip: 10.0.0.12}
          - name: a2-02
            address: 10.0.0.12
            profile: a2
        """,
        SERVING,
    )
    (found,) = result.errors
    assert found.position == Position(12, 14)
    assert described(found) == (
        "servers[1].address",
        "management address 10.0.0.12 of server 'a2-02' is also the HCCL_IF_IP of server 'a2-01' "
        "(servers[0])",
        FIX_IF_IP.format(k=0, name="a2-01"),
        "unique",
        [("first defined", "servers[0].overrides.hccl_if_ip")],
    )
    assert [r.position for r in found.related] == [Position(10, 29)]


def test_own_address_as_hccl_if_ip_and_distinct_overrides_are_accepted() -> None:
    result = check(
        """
        site: lab
        profiles:
          a2:
            chip: 910B3
        servers:
          - name: a2-01
            address: 10.0.0.11
            profile: a2
            roles: [npu, build, monitoring]
            overrides: {hccl_if_ip: 10.0.0.11}
          - name: a2-02
            address: 10.0.0.12
            profile: a2
            overrides: {hccl_if_ip: 10.1.0.12}
        """,
        SERVING,
    )
    assert result.ok, printed(result)


def test_duplicate_server_name_names_the_first_and_its_line() -> None:
    result = check(
        """
        site: lab
        profiles:
          a2:
            chip: 910B3
        servers:
          - name: a2-01
            address: 10.0.0.11
            profile: a2
            roles: [npu, build, monitoring]
          - name: a2-01
            address: 10.0.0.12
            profile: a2
        serving:
          parallelism: {tp: 8}
          max_num_seqs: 32
          replicas:
            - {name: r1, servers: [a2-01]}
        """
    )
    assert [(f.path, f.position) for f in result.errors] == [(("servers", 1, "name"), Position(10, 11))]
    (found,) = result.errors
    assert found.message == "server name 'a2-01' is used twice (also servers[0])"
    assert found.fix == "give every server a unique name: it is the inventory host name"
    assert found.code == "unique"
    assert [(r.path, r.position) for r in found.related] == [(("servers", 0, "name"), Position(6, 11))]
    assert result.plan is None


def test_duplicate_replica_name() -> None:
    result = check(
        """
        site: lab
        profiles:
          a2:
            chip: 910B3
        servers:
          - name: a2-01
            address: 10.0.0.11
            profile: a2
            roles: [npu, build, monitoring]
        serving:
          parallelism: {tp: 4}
          max_num_seqs: 32
          replicas:
            - name: r1
              servers: [a2-01]
              devices: [0, 1, 2, 3]
            - name: r1
              servers: [a2-01]
              devices: [4, 5, 6, 7]
              port: 8001
        """
    )
    found = errors_at(result, "serving.replicas[1].name")
    assert [described(f) for f in found] == [
        (
            "serving.replicas[1].name",
            "replica name 'r1' is used twice (also serving.replicas[0])",
            "give every replica a unique name: it names the container and the inventory group",
            "unique",
            [("first defined", "serving.replicas[0].name")],
        )
    ]
    assert found[0].position == Position(17, 13)
    assert [r.position for r in found[0].related] == [Position(14, 13)]


def _two_hosts(first: str, second: str) -> str:
    return f"""
        site: lab
        profiles:
          a2:
            chip: 910B3
        servers:
          - name: a2-01
            address: 10.0.0.11
            profile: a2
            roles: [npu, build]
          - {first}
          - {second}
        serving:
          parallelism: {{tp: 8}}
          max_num_seqs: 32
          replicas:
            - {{name: r1, servers: [a2-01]}}
        gateway: {{enabled: true}}
        """


def test_same_address_and_ssh_port_is_one_machine_listed_twice() -> None:
    result = check(
        _two_hosts(
            "{name: gw-01, address: 10.0.0.5, roles: [gateway]}",
            "{name: mon-01, address: 10.0.0.5, roles: [monitoring]}",
        )
    )
    (found,) = result.errors
    assert found.position == Position(11, 29)
    assert described(found) == (
        "servers[2].address",
        "address 10.0.0.5 is already used by servers[1] (gw-01) with the same SSH port 22: "
        "both entries reach the same machine",
        "give every server its own management address; list a machine once, with all its roles "
        "(e.g. roles: [npu, build])",
        "unique",
        [("first defined", "servers[1].address")],
    )
    assert [r.position for r in found.related] == [Position(10, 28)]


def test_same_address_behind_port_forwarding_is_accepted_for_hosts_without_npus() -> None:
    result = check(
        _two_hosts(
            "{name: gw-01, address: 10.0.0.5, ssh_port: 2201, roles: [gateway]}",
            "{name: mon-01, address: 10.0.0.5, ssh_port: 2202, roles: [monitoring]}",
        )
    )
    assert result.ok, printed(result)


def test_same_address_with_other_ssh_port_is_refused_for_an_npu_server() -> None:
    result = check(
        _two_hosts(
            "{name: gw-01, address: 10.0.0.11, ssh_port: 2201, roles: [gateway]}",
            "{name: mon-01, address: 10.0.0.6, roles: [monitoring]}",
        )
    )
    (found,) = result.errors
    assert found.position == Position(10, 28)
    assert described(found) == (
        "servers[1].address",
        "address 10.0.0.11 is already used by servers[0] (a2-01) (SSH ports 22 and 2201); an NPU server's "
        "address is also its serving address (vLLM --host; unless overrides.hccl_if_ip is set, HCCL_IF_IP "
        "and the data-parallel address)",
        "give every NPU server its own address, reachable from the other servers",
        "unique",
        [("first defined", "servers[0].address")],
    )
    assert [r.position for r in found.related] == [Position(7, 14)]


def test_an_npu_server_behind_the_address_of_an_earlier_gateway_is_refused() -> None:
    result = check(
        """
        site: lab
        profiles:
          a2:
            chip: 910B3
        servers:
          - {name: gw-01, address: 10.0.0.5, ssh_port: 2201, roles: [gateway, monitoring]}
          - {name: a2-01, address: 10.0.0.5, profile: a2, roles: [npu, build]}
        serving:
          parallelism: {tp: 8}
          replicas:
            - {name: r1, servers: [a2-01]}
        """
    )
    assert [(described(f)[0], f.message.split(";")[0]) for f in result.errors] == [
        (
            "servers[1].address",
            "address 10.0.0.5 is already used by servers[0] (gw-01) (SSH ports 2201 and 22)",
        )
    ]


def test_duplicate_profile_name_is_a_duplicate_key_at_the_second_definition() -> None:
    result = check(
        """
        site: lab
        profiles:
          a2:
            chip: 910B3
          a2:
            chip: 910B4
        servers:
          - {name: a2-01, address: 10.0.0.11, profile: a2, roles: [npu, build, monitoring]}
        serving:
          parallelism: {tp: 8}
          replicas:
            - {name: r1, servers: [a2-01]}
        """
    )
    (found,) = result.errors
    assert found.position is not None and found.position.line == 5
    assert found.message.startswith('duplicate key "a2"')
