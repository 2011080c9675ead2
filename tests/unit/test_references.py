"""References between sections as whole findings: roles and profiles of servers, servers of replicas, and
the hosts named for the build, the gateway and monitoring."""

from __future__ import annotations

from typing import Any

from tests.helpers import validate_data
from tests.spec_text import Described, described


def _findings(data: dict[str, Any]) -> list[Described]:
    return [described(f) for f in validate_data(data).findings]


def test_npu_server_without_a_profile(single: dict[str, Any]) -> None:
    single["servers"].append({"name": "a2-09", "address": "10.20.0.19", "roles": ["npu"]})
    assert _findings(single) == [
        (
            "servers[1].profile",
            "server 'a2-09' has role 'npu' but no profile",
            "set profile to one of: atlas-800t-a2",
            "reference",
            [],
        ),
        (
            "servers[1].name",
            "NPU server 'a2-09' serves no replica",
            "add it to a replica or remove the 'npu' role",
            "idle",
            [],
        ),
    ]


def test_a_server_without_roles_is_told_that_roles_defaults_to_npu(single: dict[str, Any]) -> None:
    """No roles, no profile: an ops box written like the docs' gateway host. 'set profile' alone would make
    it an NPU server; the fix names the roles the spec lacks (the gateway is on, no server has the role)."""
    single["gateway"] = {"enabled": True}
    single["servers"].append({"name": "edge-01", "address": "10.20.0.5"})
    assert _findings(single) == [
        (
            "gateway.host",
            "no server has role 'gateway'",
            "add 'gateway' to the roles of a server, or set gateway.host",
            "reference",
            [],
        ),
        (
            "servers[1]",
            "server 'edge-01' sets no 'roles', so roles defaults to [npu], and an NPU server needs a "
            "hardware 'profile'",
            "if 'edge-01' has no NPUs, set roles: [gateway] (what the spec still lacks); if it serves the "
            "model, set profile: atlas-800t-a2",
            "reference",
            [],
        ),
    ]


def test_a_role_listed_twice(single: dict[str, Any]) -> None:
    single["servers"][0]["roles"] = ["npu", "build", "monitoring", "build"]
    assert _findings(single) == [
        ("servers[0].roles", "a role is listed twice", "list each role once", "unique", [])
    ]


def test_a_server_listed_twice_in_a_replica(single: dict[str, Any]) -> None:
    single["serving"]["replicas"][0]["servers"] = ["a2-01", "a2-01"]
    assert (
        "serving.replicas[0].servers",
        "a server is listed twice in this replica",
        "list each server once",
        "unique",
        [],
    ) in _findings(single)


def test_hosts_named_for_build_and_monitoring_must_exist(single: dict[str, Any]) -> None:
    single["image"] = {"build_host": "nope"}
    single["monitoring"] = {"enabled": True, "host": "nope"}
    assert _findings(single) == [
        ("image.build_host", "server 'nope' is not defined", "use one of: a2-01", "reference", []),
        ("monitoring.host", "server 'nope' is not defined", "use one of: a2-01", "reference", []),
    ]


def test_monitoring_host_needs_the_role(single: dict[str, Any]) -> None:
    single["servers"].append({"name": "ops", "address": "10.20.0.5", "roles": ["build"]})
    single["monitoring"] = {"enabled": True, "host": "ops"}
    assert _findings(single) == [
        (
            "monitoring.host",
            "server 'ops' does not have role 'monitoring'",
            "add 'monitoring' to servers[1].roles",
            "reference",
            [],
        )
    ]


def test_monitoring_without_a_host_is_not_an_error(single: dict[str, Any]) -> None:
    # unlike the gateway, monitoring works without a Prometheus host: the exporters still run
    single["servers"][0]["roles"] = ["npu", "build"]
    assert _findings(single) == [
        (
            "monitoring.host",
            "no server has role 'monitoring': exporters are installed on the NPU servers, but no Prometheus",
            "add 'monitoring' to the roles of a server",
            "monitoring",
            [],
        )
    ]


def test_a_gateway_host_is_checked_even_with_the_gateway_off(single: dict[str, Any]) -> None:
    single["gateway"] = {"enabled": False, "host": "a2-01"}
    assert _findings(single) == [
        (
            "gateway.host",
            "server 'a2-01' does not have role 'gateway'",
            "add 'gateway' to servers[0].roles",
            "reference",
            [],
        )
    ]
