"""The site spec `orchestrator sim up` writes, for the shapes the integration tests ask for: with --span the
first replica is one multi-node replica (data parallel over its servers), the others stay single-node, and
the spec passes the same validation a real site does."""

from __future__ import annotations

from pathlib import Path

import pytest

from ascend_sim import cluster
from ascend_sim.engine import SimError
from ascend_sim.images import base_tag
from ascend_sim.spec_writer import PROFILES, _image_context, _packages, image_context_dir, render_site
from ascend_sim.state import ClusterState, SimServer
from orchestrator.pipeline import validate_text


def model(tmp_path: Path) -> Path:
    """The checkpoint folder as `sim up` leaves it: its manifest beside it (the spec pins its sha256)."""
    from orchestrator.weights.manifest import MANIFEST_NAME

    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    (folder / MANIFEST_NAME).write_text("{}\n")
    return folder


def site(tmp_path: Path, nodes: int, span: int, layout: str = "default") -> str:
    state = ClusterState("tst", "atlas-800t-a2", nodes, False, True, span, layout)
    state.servers = [
        SimServer(name, f"127.0.9.{i + 1}", roles, npu)
        for i, (name, roles, npu) in enumerate(cluster.plan_servers(state))
    ]
    _, pkgs = _packages(tmp_path, PROFILES[state.profile])
    return render_site(state, tmp_path, pkgs, model(tmp_path))


def test_span_makes_the_first_replica_multi_node(tmp_path: Path) -> None:
    result = validate_text(site(tmp_path, 3, 2), "site.yaml")
    assert result.ok and result.plan is not None, result.errors
    shapes = {r.name: [m.server for m in r.members] for r in result.plan.replicas}
    assert shapes == {"a2-01": ["a2-01", "a2-02"], "a2-03": ["a2-03"]}


def test_without_span_every_server_is_its_own_replica(tmp_path: Path) -> None:
    result = validate_text(site(tmp_path, 3, 1), "site.yaml")
    assert result.plan is not None
    assert [[m.server for m in r.members] for r in result.plan.replicas] == [["a2-01"], ["a2-02"], ["a2-03"]]


@pytest.mark.parametrize("span", [0, 4])
def test_span_out_of_range_is_refused_with_a_fix(tmp_path: Path, span: int) -> None:
    with pytest.raises(SimError, match=r"--span .* Fix: give 1 to --nodes"):
        cluster.up(tmp_path, ClusterState("tst", "atlas-800t-a2", 3, False, False, span), print)


def test_the_image_phase_builds_the_fake_vllm_image_from_the_assembled_context(tmp_path: Path) -> None:
    result = validate_text(site(tmp_path, 3, 1), "site.yaml")
    assert result.spec is not None
    assert result.spec.image.context == str(image_context_dir(tmp_path).resolve())
    assert _image_context(tmp_path) == [
        f"assembled the fake vLLM image's build context {image_context_dir(tmp_path)}"
    ]
    context = image_context_dir(tmp_path)
    # the fake's own Dockerfile (FROM the plan's BASE_IMAGE) and the flag table of the site's vLLM
    assert "FROM ${BASE_IMAGE}" in (context / "Dockerfile").read_text(encoding="utf-8")
    assert (context / "flags.json").is_file() and (context / "fake_vllm" / "server.py").is_file()
    assert _image_context(tmp_path) == []  # assembled again (same content), not reported


@pytest.mark.parametrize("nodes", [3, 4])
def test_mixed_layout_has_a_multi_node_replica_a_split_server_and_a_key_file(
    tmp_path: Path, nodes: int
) -> None:
    text = site(tmp_path, nodes, 1, "mixed")
    assert f"  api_key: file:{(tmp_path / 'api-key').resolve()}" in text
    result = validate_text(text, "site.yaml")
    assert result.ok and result.plan is not None, result.errors
    reps = {r.name: r for r in result.plan.replicas}
    assert [m.server for m in reps["mn"].members] == ["a2-01", "a2-02"] and reps["mn"].mode == "dp"
    split = [r for r in result.plan.replicas if [m.server for m in r.members] == ["a2-03"]]
    assert len(split) == 2
    a, b = (set(r.members[0].devices) for r in split)
    assert a and b and not a & b and len(a | b) == PROFILES["atlas-800t-a2"].devices
    assert len({r.port for r in split}) == 2
    assert len(reps) == 3 + (nodes - 3)


@pytest.mark.parametrize(("nodes", "span"), [(2, 1), (3, 2)])
def test_mixed_layout_needs_three_servers_and_no_span(tmp_path: Path, nodes: int, span: int) -> None:
    with pytest.raises(
        SimError, match=r"--layout mixed needs 3 or more .* Fix: `sim up --nodes 3 --layout mixed`"
    ):
        cluster.up(tmp_path, ClusterState("tst", "atlas-800t-a2", nodes, False, False, span, "mixed"), print)


def test_the_gateway_builds_the_router_from_the_base_sim_up_seeds_into_gw_01(tmp_path: Path) -> None:
    state = ClusterState("tst", "atlas-800t-a2", 3, True, False, 1, "mixed")
    state.servers = [
        SimServer(name, f"127.0.9.{i + 1}", roles, npu)
        for i, (name, roles, npu) in enumerate(cluster.plan_servers(state))
    ]
    _, pkgs = _packages(tmp_path, PROFILES[state.profile])
    result = validate_text(render_site(state, tmp_path, pkgs, model(tmp_path)), "site.yaml")
    assert result.ok and result.spec is not None, result.errors
    gw = result.spec.gateway
    assert gw.enabled and gw.router.base_image == base_tag() and gw.policy == "round_robin"
    assert [s.name for s in result.spec.servers if "gateway" in s.roles] == ["gw-01"]
