"""The PD gateway's argv and variables, from a hand-built PdPlan of vllm-ascend's A3 "2P1D" tutorial layout
(vllm-project/vllm-ascend docs/source/tutorials/features/pd_disaggregation_mooncake_multi_node.md @v0.23.0:
two prefill instances of DP2 x TP8, ports 7100/7101 on each prefill server; one decode instance of
DP32 x TP1 on two servers, 16 ranks each on ports 7100-7115), and the gateway rules of a PD site.

The argv is also started with the real router in test_pd_contract.py (it must accept all of it together)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from orchestrator.pipeline import validate_text
from orchestrator.planning.model import Capacity, SitePlan
from orchestrator.planning.pd_model import PdInstancePlan, PdPlan, PdRankPlan, PdRole
from orchestrator.render.vars.gateway import gateway_vars, pd_router_args
from orchestrator.spec.findings import Finding
from orchestrator.spec.gateway import Gateway
from orchestrator.spec.site import SiteSpec
from orchestrator.validation import gateway_rules

ROOT = Path(__file__).resolve().parents[3]
FLEET = (ROOT / "inventories" / "a2-fleet-gateway" / "site.yaml").read_text(encoding="utf-8")
CAPACITY = Capacity(60.0, 55.0, 40.0, 3.0, 1.0, 8, 12)


def instance(
    name: str, role: PdRole, servers: list[str], dp: int, tp: int, port: int = 7100
) -> PdInstancePlan:
    per_server = dp // len(servers)
    ranks = tuple(
        PdRankPlan(
            server=server,
            address=address,
            dp_rank=s * per_server + i,
            local_index=i,
            port=port + i,
            devices=tuple(range(i * tp, (i + 1) * tp)),
            kv_handshake_port=36000 + i * tp,
            container_name=f"vllm-{name}-{s * per_server + i}",
            args=(),
            env=(),
        )
        for s, (server, address) in enumerate(servers_of(servers))
        for i in range(per_server)
    )
    return PdInstancePlan(
        name=name, role=role, engine_id=name, kv_port=36000, tp=tp, dp=dp, ep=True,
        dp_address=ranks[0].address, dp_rpc_port=12321, servers=tuple(servers), ranks=ranks,
        capacity=CAPACITY, startup_timeout_s=1800,
    )  # fmt: skip


def servers_of(names: list[str]) -> list[tuple[str, str]]:
    return [(n, f"10.60.0.{int(n[-2:])}") for n in names]


def a3_2p1d() -> PdPlan:
    """4 x Atlas 800T A3: p1 on a3-01, p2 on a3-02 (DP2 x TP8 each), d1 on a3-03 + a3-04 (DP32 x TP1)."""
    return PdPlan(
        connector="MooncakeConnectorV1",
        prefill=(instance("p1", "prefill", ["a3-01"], 2, 8), instance("p2", "prefill", ["a3-02"], 2, 8)),
        decode=(instance("d1", "decode", ["a3-03", "a3-04"], 32, 1),),
    )


def _site() -> tuple[SiteSpec, SitePlan]:
    result = validate_text(FLEET, "site.yaml")
    assert result.ok and result.spec is not None and result.plan is not None
    return result.spec, result.plan


def test_the_a3_tutorial_layout_renders_one_worker_per_dp_rank() -> None:
    args = pd_router_args(Gateway(), a3_2p1d())
    prefill = [
        "--prefill", "http://10.60.0.1:7100", "none", "--prefill", "http://10.60.0.1:7101", "none",
        "--prefill", "http://10.60.0.2:7100", "none", "--prefill", "http://10.60.0.2:7101", "none",
    ]  # fmt: skip
    decode = [
        a
        for s in ("10.60.0.3", "10.60.0.4")
        for p in range(7100, 7116)
        for a in ("--decode", f"http://{s}:{p}")
    ]
    assert args == [
        "--vllm-pd-disaggregation", "--kv-connector", "nixl", *prefill, *decode,
        "--prefill-policy", "cache_aware", "--decode-policy", "round_robin",
    ]  # fmt: skip
    assert args.count("--decode") == 32
    assert "--intra-node-data-parallel-size" not in args  # each URL is one DP rank


def test_gateway_vars_of_a_pd_plan() -> None:
    spec, plan = _site()
    gw = spec.gateway.model_copy(update={"prefill_policy": "round_robin", "decode_policy": "power_of_two"})
    spec = spec.model_copy(update={"gateway": gw})
    pd_vars: dict[str, Any] = gateway_vars(spec, dataclasses.replace(plan, pd=a3_2p1d()))
    plain = gateway_vars(spec, plan)
    assert pd_vars["gateway_pd"] is True and plain["gateway_pd"] is False
    # the front router on gateway.port is the regular one; the PD routers are the two slots behind it
    assert pd_vars["gateway_router_args"] == plain["gateway_router_args"]
    assert plain["gateway_pd_slots"] == []
    a, b = pd_vars["gateway_pd_slots"]
    assert (a["name"], a["port"], a["url"]) == ("a", 8081, "http://10.50.0.5:8081")
    assert (b["name"], b["port"], b["url"]) == ("b", 8082, "http://10.50.0.5:8082")
    for slot, port, prom in ((a, "8081", "29001"), (b, "8082", "29002")):
        args = slot["args"]
        assert args[args.index("--port") + 1] == port and args[args.index("--prometheus-port") + 1] == prom
        assert args[args.index("--vllm-pd-disaggregation") :] == pd_router_args(gw, a3_2p1d())
        assert args[-4:] == ["--prefill-policy", "round_robin", "--decode-policy", "power_of_two"]
    assert pd_vars["gateway_pd_prefill_urls"] == list(a3_2p1d().worker_urls("prefill"))
    assert len(pd_vars["gateway_pd_decode_urls"]) == 32
    assert "--vllm-pd-disaggregation" not in pd_vars["gateway_router_args"]
    assert plain["gateway_pd_prefill_urls"] == [] and plain["gateway_api_key_ref"] is None


def _pd_findings(spec: SiteSpec, pd: Any) -> list[Finding]:
    return list(gateway_rules.check_pd(spec, pd))


@pytest.mark.parametrize(
    ("stage", "dp", "refused"), [("decode", 1, True), ("decode", 2, False), ("prefill", 1, True)]
)
def test_power_of_two_needs_two_ranks_in_its_stage(stage: str, dp: int, refused: bool) -> None:
    from orchestrator.spec.disaggregation import Disaggregation

    spec, _plan = _site()
    pool = {"parallelism": {"tp": 1, "dp": dp}, "instances": [{"name": "i1", "servers": ["a2-01"]}]}
    other = {"parallelism": {"tp": 1, "dp": 2}, "instances": [{"name": "i2", "servers": ["a2-02"]}]}
    pd = Disaggregation.model_validate({stage: pool, ("decode" if stage == "prefill" else "prefill"): other})
    gw = spec.gateway.model_copy(update={f"{stage}_policy": "power_of_two"})
    found = [f for f in _pd_findings(spec.model_copy(update={"gateway": gw}), pd) if f.is_error]
    assert [f.path for f in found] == ([("gateway", f"{stage}_policy")] if refused else [])
    if refused:
        assert "power_of_two" in found[0].message and found[0].fix is not None


def test_a_pd_site_needs_the_gateway_and_a_prefill_first_connector() -> None:
    from orchestrator.spec.disaggregation import Disaggregation

    spec, _plan = _site()
    pool = {"parallelism": {"tp": 1, "dp": 2}, "instances": [{"name": "i1", "servers": ["a2-01"]}]}
    pd = Disaggregation.model_validate(
        {"prefill": pool, "decode": pool, "connector": "MooncakeLayerwiseConnector"}
    )
    off = spec.model_copy(update={"gateway": spec.gateway.model_copy(update={"enabled": False})})
    assert _pd_findings(off, pd) == []  # the pd-gateway rule (validation/pd_rules.py) names it once
    keyed = spec.model_copy(update={"serving": spec.serving.model_copy(update={"api_key": "env:KEY"})})
    (warned,) = [f for f in _pd_findings(keyed, pd) if not f.is_error]
    assert warned.path == ("serving", "api_key")
    assert "accepts clients without a key" in warned.message
    assert [f.path for f in _pd_findings(spec, pd) if f.is_error] == [
        ("serving", "disaggregation", "connector")
    ]


def test_a_pd_gateway_needs_six_ports() -> None:
    from orchestrator.spec.disaggregation import Disaggregation

    spec, _plan = _site()
    pool = {"parallelism": {"tp": 1, "dp": 2}, "instances": [{"name": "i1", "servers": ["a2-01"]}]}
    pd = Disaggregation.model_validate({"prefill": pool, "decode": pool})
    assert [f for f in _pd_findings(spec, pd) if f.is_error] == []
    near = spec.model_copy(update={"gateway": spec.gateway.model_copy(update={"prometheus_port": 8082})})
    assert [f.path for f in _pd_findings(near, pd) if f.is_error] == [("gateway", "prometheus_port")]
