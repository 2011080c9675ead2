"""Which server plays a role: one answer for planning, phases and the inventory groups."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from orchestrator.planning.phases import plan_phases
from orchestrator.planning.roles import hosts_with_role, role_host
from orchestrator.render import render_texts
from tests.spec_text import check, printed

BASE = """\
site: lab
profiles:
  a2:
    chip: 910B3
servers:
  - {{name: a2-01, address: 10.0.0.11, profile: a2{roles1}}}
  - {{name: a2-02, address: 10.0.0.12, profile: a2{roles2}}}
  - {{name: edge-01, address: 10.0.0.5, roles: [{edge}]}}
  - {{name: edge-02, address: 10.0.0.6, roles: [{edge}]}}
serving:
  parallelism: {{tp: 8}}
  max_num_seqs: 32
  replicas:
    - {{name: r1, servers: [a2-01]}}
    - {{name: r2, servers: [a2-02]}}
{extra}"""


def _site(roles1: str = "", roles2: str = "", edge: str = "gateway, monitoring", extra: str = "") -> Any:
    result = check(BASE.format(roles1=roles1, roles2=roles2, edge=edge, extra=extra))
    assert result.ok, printed(result)
    return result


def _groups(result: Any) -> dict[str, list[str]]:
    hosts = yaml.safe_load(render_texts(result)["hosts.yml"])["all"]["children"]
    return {g: list(v.get("hosts") or {}) for g, v in hosts.items() if "hosts" in v}


def _phase_hosts(result: Any) -> dict[str, tuple[str, ...]]:
    return {p.name: p.hosts for p in plan_phases(result.spec, result.plan)}


@pytest.mark.parametrize(
    ("kwargs", "build", "gateway", "monitoring"),
    [
        # no server has 'build': the first NPU server builds; the first gateway / monitoring server serves
        ({}, "a2-01", "edge-01", "edge-01"),
        # the first server with the role
        ({"roles2": ", roles: [npu, build]"}, "a2-02", "edge-01", "edge-01"),
        # named in the spec beats the first with the role
        (
            {
                "roles1": ", roles: [npu, build]",
                "roles2": ", roles: [npu, build]",
                "extra": "image: {build_host: a2-02}\ngateway: {enabled: true, host: edge-02}\n"
                "monitoring: {host: edge-01}\n",
            },
            "a2-02",
            "edge-02",
            "edge-01",
        ),
        (
            {"extra": "gateway: {enabled: true, host: edge-02}\nmonitoring: {host: edge-02}\n"},
            "a2-01",
            "edge-02",
            "edge-02",
        ),
    ],
)
def test_role_host(kwargs: dict[str, str], build: str, gateway: str, monitoring: str) -> None:
    result = _site(**kwargs)
    spec = result.spec
    assert (role_host(spec, "build"), role_host(spec, "gateway"), role_host(spec, "monitoring")) == (
        build,
        gateway,
        monitoring,
    )
    phases = _phase_hosts(result)
    # built on the build host, shipped to the NPU servers (a2-01, a2-02)
    assert phases["image"] == tuple(dict.fromkeys((build, "a2-01", "a2-02")))
    assert "Prometheus on " + monitoring in next(
        p.summary for p in plan_phases(spec, result.plan) if p.name == "monitoring"
    )


def test_gateway_phase_runs_on_the_role_host_when_enabled() -> None:
    result = _site(extra="gateway: {enabled: true}\n")
    assert _phase_hosts(result)["gateway"] == ("edge-01",)
    assert ("edge-01", 8080) in {(h.name, p) for h in result.plan.hosts for p, _ in h.ports}


def test_inventory_groups_list_every_server_with_the_role_and_fall_back_for_build() -> None:
    groups = _groups(_site())
    assert groups["npu"] == ["a2-01", "a2-02"]
    assert groups["build"] == ["a2-01"]  # nobody has 'build': the first NPU server
    assert groups["gateway"] == ["edge-01", "edge-02"]
    assert groups["monitoring"] == ["edge-01", "edge-02"]
    groups = _groups(_site(roles2=", roles: [npu, build]"))
    assert groups["build"] == ["a2-02"]


def test_no_server_with_the_role() -> None:
    result = _site(edge="monitoring")
    assert hosts_with_role(result.spec, "gateway") == ()
    assert role_host(result.spec, "gateway") is None
    assert _groups(result)["gateway"] == []
