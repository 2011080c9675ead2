"""The PD plan (planning/pd.py, pd_args.py, pd_peers.py) against values computed by hand from
launch_online_dp.py and mooncake_connector.py @v0.23.0 (vllm-project/vllm-ascend): rank layout, devices, API
ports, Mooncake handshake ports (kv_port + global dp_rank x tp x pp + device index), engine ids, kv roles,
worker URLs, the argv and environment of single ranks, HCCN peers, ports, phases; for the A3 example
(tutorial layout: 2 x prefill DP2 x TP8, decode DP32 x TP1 over two servers) and a small A2 layout."""

from __future__ import annotations

import json
from typing import Any

from orchestrator.planning.build import build_plan
from orchestrator.planning.model import SitePlan
from orchestrator.planning.pd_model import PdInstancePlan, PdPlan
from orchestrator.planning.phases import plan_phases
from orchestrator.planning.resolve import resolve_model
from orchestrator.spec.site import SiteSpec
from tests.helpers import load_example


def plan_of(data: dict[str, Any]) -> SitePlan:
    spec = SiteSpec.model_validate(data)
    return build_plan(spec, resolve_model(spec.model))


def a3() -> SitePlan:
    return plan_of(load_example("a3-pd-r1-w8a8"))


def pd_of(plan: SitePlan) -> PdPlan:
    assert plan.pd is not None
    return plan.pd


def inst(plan: SitePlan, name: str) -> PdInstancePlan:
    return next(i for i in pd_of(plan).instances if i.name == name)


def flag(args: tuple[str, ...], name: str) -> str:
    return args[args.index(name) + 1]


def test_a3_layout_ports_devices_and_engine_ids() -> None:
    plan = a3()
    assert plan.replicas == ()
    rows = [
        (i.name, i.role, i.engine_id, i.kv_port, r.server, r.dp_rank, r.port, r.devices, r.kv_handshake_port)
        for i in pd_of(plan).prefill
        for r in i.ranks
    ]
    assert rows == [
        ("p1", "prefill", "p1", 36000, "a3-p1", 0, 7100, tuple(range(8)), 36000),
        ("p1", "prefill", "p1", 36000, "a3-p1", 1, 7101, tuple(range(8, 16)), 36008),
        ("p2", "prefill", "p2", 36100, "a3-p2", 0, 7100, tuple(range(8)), 36100),
        ("p2", "prefill", "p2", 36100, "a3-p2", 1, 7101, tuple(range(8, 16)), 36108),
    ]
    d1 = inst(plan, "d1")
    assert (d1.engine_id, d1.kv_port, d1.dp_address, d1.dp_rpc_port, d1.dp_size_local) == (
        "d1", 36200, "10.30.1.13", 12321, 16
    )  # fmt: skip
    assert len(d1.ranks) == 32
    r0, r15, r16, r31 = d1.ranks[0], d1.ranks[15], d1.ranks[16], d1.ranks[31]
    assert (r0.server, r0.port, r0.devices, r0.kv_handshake_port) == ("a3-d1", 7100, (0,), 36200)
    assert (r15.server, r15.port, r15.devices, r15.kv_handshake_port) == ("a3-d1", 7115, (15,), 36215)
    # dp rank 16 is the first on a3-d2: local index 0, global rank 16 in the handshake port
    assert (r16.server, r16.local_index, r16.port, r16.devices, r16.kv_handshake_port) == (
        "a3-d2", 0, 7100, (0,), 36216
    )  # fmt: skip
    assert (r31.server, r31.port, r31.devices, r31.kv_handshake_port) == ("a3-d2", 7115, (15,), 36231)
    assert r31.container_name == "vllm-d1-dp31"
    assert inst(plan, "p1").ranks[1].kv_handshake_ports == tuple(range(36008, 36016))


def test_a3_worker_urls() -> None:
    pd = pd_of(a3())
    assert pd.worker_urls("prefill") == (
        "http://10.30.1.11:7100",
        "http://10.30.1.11:7101",
        "http://10.30.1.12:7100",
        "http://10.30.1.12:7101",
    )
    decode = pd.worker_urls("decode")
    assert decode[:2] == ("http://10.30.1.13:7100", "http://10.30.1.13:7101")
    assert decode[16] == "http://10.30.1.14:7100" and decode[-1] == "http://10.30.1.14:7115"
    assert len(decode) == 32


def test_a3_kv_transfer_config_and_rank_flags() -> None:
    plan = a3()
    r = inst(plan, "p2").ranks[1]
    assert json.loads(flag(r.args, "--kv-transfer-config")) == {
        "kv_connector": "MooncakeConnectorV1",
        "kv_role": "kv_producer",
        "kv_port": "36100",
        "engine_id": "p2",
        "kv_connector_extra_config": {
            "prefill": {"dp_size": 2, "tp_size": 8},
            "decode": {"dp_size": 32, "tp_size": 1},
        },
    }
    assert r.args[:2] == ("serve", "/data/models/DeepSeek-R1-W8A8")
    assert (flag(r.args, "--host"), flag(r.args, "--port"), flag(r.args, "--data-parallel-rank")) == (
        "10.30.1.12", "7101", "1"
    )  # fmt: skip
    assert flag(r.args, "--data-parallel-address") == "10.30.1.12"
    assert "--enforce-eager" in r.args and flag(r.args, "--max-num-seqs") == "8"
    d = inst(plan, "d1").ranks[20]
    kv = json.loads(flag(d.args, "--kv-transfer-config"))
    assert (kv["kv_role"], kv["kv_port"], kv["engine_id"]) == ("kv_consumer", "36200", "d1")
    assert (flag(d.args, "--data-parallel-rank"), flag(d.args, "--data-parallel-address")) == (
        "20",
        "10.30.1.13",
    )
    assert (flag(d.args, "--host"), flag(d.args, "--port")) == ("10.30.1.14", "7104")
    assert "--enforce-eager" not in d.args and flag(d.args, "--max-num-seqs") == "40"
    assert json.loads(flag(d.args, "--compilation-config")) == {"cudagraph_mode": "FULL_DECODE_ONLY"}


def test_a3_environment_per_role() -> None:
    plan = a3()
    p = dict(inst(plan, "p1").ranks[1].env)
    d = dict(inst(plan, "d1").ranks[17].env)
    assert p["ASCEND_RT_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"  # the container holds host NPUs 8-15 only
    assert d["ASCEND_RT_VISIBLE_DEVICES"] == "0"
    assert (p["HCCL_BUFFSIZE"], d["HCCL_BUFFSIZE"]) == ("256", "600")
    assert (p["HCCL_IF_IP"], d["HCCL_IF_IP"]) == ("10.30.1.11", "10.30.1.14")
    assert p["VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT"] == "480"
    assert "VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT" not in d
    assert d["HCCL_OP_EXPANSION_MODE"] == "AIV"  # A3: AIV across the servers of a supernode
    assert (d["OMP_NUM_THREADS"], d["GLOO_SOCKET_IFNAME"]) == ("10", "enp189s0f0")


def test_a3_hosts_phases_ports_and_peers() -> None:
    data = load_example("a3-pd-r1-w8a8")
    spec = SiteSpec.model_validate(data)
    plan = build_plan(spec, resolve_model(spec.model))
    serve = next(p for p in plan_phases(spec, plan) if p.name == "serve")
    assert serve.hosts == ("a3-p1", "a3-p2", "a3-d1", "a3-d2")
    ports = {h.name: dict(h.ports) for h in plan.hosts}
    assert 12321 in ports["a3-d1"] and 12321 not in ports["a3-d2"]  # the DP master only
    assert {7100, 7115, 36216, 36231} <= set(ports["a3-d2"])
    assert {7100, 7101, 36000, 36015} <= set(ports["a3-p1"]) and 36016 not in ports["a3-p1"]
    peers = {h.name: {(p.server, p.index) for p in h.hccn_peers} for h in plan.hosts}
    assert {s for s, _ in peers["a3-p1"]} == {"a3-d1", "a3-d2"}  # prefill instances do not talk
    assert len(peers["a3-p1"]) == 32
    assert {s for s, _ in peers["a3-d1"]} == {"a3-d2", "a3-p1", "a3-p2"} and len(peers["a3-d1"]) == 48
    assert all(h.rank_tables == () for h in plan.hosts)  # Mooncake needs no rank table


def _small() -> dict[str, Any]:
    """Four 8-NPU A2 servers: prefill p1 DP1 x TP2 on NPUs 2-3 of a2-01, p2 the same on a2-04 (kv_port by
    default), decode d1 DP2 x TP1 over a2-02 and a2-03."""
    data = load_example("a2-pair-r1-w8a8")
    servers = data["servers"]
    servers += [
        {"name": "a2-03", "address": "10.20.1.13", "profile": "atlas-800t-a2"},
        {"name": "a2-04", "address": "10.20.1.14", "profile": "atlas-800t-a2"},
    ]
    serving = data["serving"]
    serving["replicas"] = []
    serving["extra_args"] = []
    serving["disaggregation"] = {
        "prefill": {
            "parallelism": {"tp": 2, "dp": 1, "ep": True},
            "kv_port": 30000,
            "instances": [
                {"name": "p1", "servers": ["a2-01"], "devices": [2, 3]},
                {"name": "p2", "servers": ["a2-04"]},
            ],
        },
        "decode": {
            "parallelism": {"tp": 1, "dp": 2, "ep": True},
            "port": 7200,
            "kv_port": 31000,
            "dp_rpc_port": 12400,
            "instances": [{"name": "d1", "servers": ["a2-02", "a2-03"]}],
        },
    }
    return data


def test_small_a2_layout() -> None:
    plan = plan_of(_small())
    p1, p2, d1 = inst(plan, "p1"), inst(plan, "p2"), inst(plan, "d1")
    (r,) = p1.ranks
    assert (r.server, r.dp_rank, r.port, r.devices, r.kv_handshake_port) == ("a2-01", 0, 7100, (2, 3), 30000)
    assert r.visible_devices == "2,3" and dict(r.env)["ASCEND_RT_VISIBLE_DEVICES"] == "0,1"
    assert "--data-parallel-rank" not in r.args and "--data-parallel-size" not in r.args  # one rank
    assert (p2.kv_port, p2.ranks[0].devices, p2.ranks[0].kv_handshake_port) == (30100, (0, 1), 30100)
    assert [(x.server, x.dp_rank, x.port, x.devices, x.kv_handshake_port) for x in d1.ranks] == [
        ("a2-02", 0, 7200, (0,), 31000),
        ("a2-03", 1, 7200, (0,), 31001),
    ]
    second = d1.ranks[1].args
    assert (flag(second, "--data-parallel-size"), flag(second, "--data-parallel-rank")) == ("2", "1")
    assert (flag(second, "--data-parallel-address"), flag(second, "--data-parallel-rpc-port")) == (
        "10.20.1.12", "12400"
    )  # fmt: skip
    kv = json.loads(flag(second, "--kv-transfer-config"))
    assert kv["kv_connector_extra_config"] == {
        "prefill": {"dp_size": 1, "tp_size": 2},
        "decode": {"dp_size": 2, "tp_size": 1},
    }
    assert pd_of(plan).worker_urls("prefill") == ("http://10.20.1.11:7100", "http://10.20.1.14:7100")
    assert pd_of(plan).worker_urls("decode") == ("http://10.20.1.12:7200", "http://10.20.1.13:7200")
    # A2: AIV only inside one server (CANN): the decode instance spans two, the prefill instances one
    assert "HCCL_OP_EXPANSION_MODE" not in dict(d1.ranks[0].env)
    assert dict(r.env)["HCCL_OP_EXPANSION_MODE"] == "AIV"


def test_a3_capacity_per_role() -> None:
    """Each pool's settings feed its capacity: max_num_seqs (P 8, D 40), gpu_memory_utilization (0.9, 0.94)
    and HCCL_BUFFSIZE (256, 600 MB: runtime 1.5 GiB + 2 x buffer), MTP draft loaded on both."""
    plan = a3()
    p, d = inst(plan, "p1").capacity, inst(plan, "d1").capacity
    assert (p.max_num_seqs, d.max_num_seqs) == (8, 40)
    assert abs(p.budget_gib / 0.9 - p.usable_gib) < 1e-9 and abs(d.budget_gib / 0.94 - d.usable_gib) < 1e-9
    assert p.overhead_gib == 1.5 + 2 * 256 / 1024 and d.overhead_gib == 1.5 + 2 * 600 / 1024
    # MLA KV per token: (kv_lora_rank 512 + rope 64) x (61 layers + 1 MTP layer) x 2 bytes, 40000 tokens
    assert abs(p.kv_gib_per_seq - 576 * 62 * 2 * 40000 / 1024**3) < 1e-9
    assert p.kv_gib_per_seq == d.kv_gib_per_seq
