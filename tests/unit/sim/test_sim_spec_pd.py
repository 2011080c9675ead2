"""`sim up --layout pd`: the site spec's serving.disaggregation for 3 simulated NPU servers and a gateway,
checked on the plan the orchestrator makes of it (not on the text the simulator writes), and the shapes
`sim up` refuses for it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from ascend_sim import cluster
from ascend_sim.engine import SimError
from ascend_sim.spec_writer import PROFILES, _packages, render_site
from ascend_sim.state import ClusterState, SimServer
from orchestrator.pipeline import validate_text
from orchestrator.planning.pd_model import PdPlan
from orchestrator.render import render_texts
from orchestrator.validation import ValidationResult


def pd_site(tmp_path: Path, profile: str = "atlas-800t-a2") -> str:
    from orchestrator.weights.manifest import MANIFEST_NAME

    state = ClusterState("tst", profile, 3, True, False, 1, "pd")
    state.servers = [
        SimServer(name, f"127.0.0.{i + 2}", roles, npu)  # as `sim up` numbers them
        for i, (name, roles, npu) in enumerate(cluster.plan_servers(state))
    ]
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    (folder / MANIFEST_NAME).write_text("{}\n")
    _, pkgs = _packages(tmp_path, PROFILES[profile])
    return render_site(state, tmp_path, pkgs, folder)


def validated(tmp_path: Path, profile: str = "atlas-800t-a2") -> tuple[ValidationResult, PdPlan]:
    result = validate_text(pd_site(tmp_path, profile), "site.yaml")
    assert result.ok, result.errors
    assert result.plan is not None and result.plan.pd is not None
    return result, result.plan.pd


def test_pd_layout_validates_without_replicas_or_warnings(tmp_path: Path) -> None:
    result, pd = validated(tmp_path)
    # the one warning: a PD gateway does not check clients' keys (docs/pd-gateway.md); the layout has a key
    assert [(w.code, w.path) for w in result.warnings] == [("gateway", ("serving", "api_key"))]
    assert result.plan is not None and result.plan.replicas == ()
    assert pd.connector == "MooncakeConnectorV1"
    assert render_texts(result)  # `sim up` renders the inventory beside the spec


def test_two_instances_per_pool_on_the_halves_of_each_server(tmp_path: Path) -> None:
    _, pd = validated(tmp_path)
    assert [i.name for i in pd.prefill] == ["p1", "p2"] and [i.name for i in pd.decode] == ["d1", "d2"]
    assert [[(r.server, r.devices, r.port) for r in i.ranks] for i in pd.prefill] == [
        [("a2-01", (0, 1, 2, 3), 7100)],
        [("a2-01", (4, 5, 6, 7), 7101)],
    ]
    assert [[(r.server, r.devices, r.port) for r in i.ranks] for i in pd.decode] == [
        [("a2-02", (0, 1, 2, 3), 7100), ("a2-03", (0, 1, 2, 3), 7100)],
        [("a2-02", (4, 5, 6, 7), 7101), ("a2-03", (4, 5, 6, 7), 7101)],
    ]
    for inst in pd.instances:
        assert inst.tp == 4
    d1, d2 = pd.decode
    assert (d1.dp_address, d1.dp_rpc_port, d2.dp_rpc_port) == ("127.0.0.3", 12321, 12322)  # DP master a2-02
    assert "--data-parallel-rpc-port" not in pd.prefill[0].ranks[0].args  # one rank: no DP coordinator
    d2_rank = d2.ranks[1].args
    assert d2_rank[d2_rank.index("--data-parallel-rpc-port") + 1] == "12322"


def test_ports_are_unique_per_server_and_kv_ports_clear_the_random_range(tmp_path: Path) -> None:
    _, pd = validated(tmp_path)
    ranks = [r for inst in pd.instances for r in inst.ranks]
    api = Counter((r.server, r.port) for r in ranks)
    assert max(api.values()) == 1, api
    kv = Counter((r.server, port) for r in ranks for port in r.kv_handshake_ports)
    assert max(kv.values()) == 1, kv
    assert min(port for _, port in kv) >= 28000  # AscendDirectTransport: [20000, 28000) on 8-NPU servers
    assert [inst.kv_port for inst in pd.instances] == [30000, 30100, 30200, 30300]
    assert len({inst.engine_id for inst in pd.instances}) == 4


def test_the_gateway_workers_are_the_ranks_on_loopback(tmp_path: Path) -> None:
    result, pd = validated(tmp_path)
    assert result.spec is not None and result.spec.gateway.enabled
    prefill, decode = pd.worker_urls("prefill"), pd.worker_urls("decode")
    assert prefill == ("http://127.0.0.2:7100", "http://127.0.0.2:7101")  # a2-01
    assert decode == (  # d1 over a2-02 and a2-03, then d2
        "http://127.0.0.3:7100",
        "http://127.0.0.4:7100",
        "http://127.0.0.3:7101",
        "http://127.0.0.4:7101",
    )


@pytest.mark.parametrize("profile", sorted(set(PROFILES) - {"atlas-800t-a2"}))
def test_pd_layout_validates_on_the_other_profiles(tmp_path: Path, profile: str) -> None:
    _, pd = validated(tmp_path, profile)
    devices = PROFILES[profile].devices
    assert [len(r.devices) for inst in pd.instances for r in inst.ranks] == [devices // 2] * 6
    assert min(inst.kv_port for inst in pd.instances) >= 20000 + 1000 * devices


@pytest.mark.parametrize(
    ("nodes", "span", "gateway"),
    [(2, 1, True), (4, 1, True), (3, 2, True), (3, 1, False)],
)
def test_pd_layout_needs_three_servers_no_span_and_the_gateway(
    tmp_path: Path, nodes: int, span: int, gateway: bool
) -> None:
    with pytest.raises(
        SimError,
        match=r"--layout pd needs exactly 3 NPU servers, .* Fix: `sim up --nodes 3 --gateway --layout pd`",
    ):
        cluster.up(tmp_path, ClusterState("tst", "atlas-800t-a2", nodes, gateway, False, span, "pd"), print)


def test_two_dp_instances_on_one_dp_master_server_need_their_own_rpc_port(tmp_path: Path) -> None:
    text = pd_site(tmp_path)
    assert text.count("dp_rpc_port: 12322}") == 1
    result = validate_text(text.replace("dp_rpc_port: 12322}", "dp_rpc_port: 12321}"), "site.yaml")
    found = [(f.code, f.path, f.message) for f in result.errors]
    path = ("serving", "disaggregation", "decode", "instances", 1, "dp_rpc_port")  # the field that collides
    assert [(c, p) for c, p, _ in found] == [("ports", path)], found
    assert "decode instance 'd2' DP RPC (12321) overlap decode instance 'd1' DP RPC (12321)" in found[0][2]
