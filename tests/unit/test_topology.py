"""Replica topology: members, device masks, DP ranks, the rendered `vllm serve` arguments, layout rules."""

from __future__ import annotations

from typing import Any

from orchestrator.planning.model import MemberPlan
from tests.helpers import validate_data


def _flag(args: tuple[str, ...], flag: str) -> str | None:
    return args[args.index(flag) + 1] if flag in args else None


def _codes(data: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f.code, f.message) for f in validate_data(data).errors]


def test_two_a2_servers_follow_the_vllm_ascend_multi_node_recipe(pair: dict) -> None:
    plan = validate_data(pair).plan
    assert plan is not None
    (rep,) = plan.replicas
    assert rep.mode == "dp" and rep.world_size == 16 and rep.ep_size == 16
    head, second = rep.members
    assert (head.role, second.role) == ("head", "headless")
    assert head.args[:2] == ("serve", "/data/models/DeepSeek-R1-W8A8")
    for m in (head, second):
        assert _flag(m.args, "--tensor-parallel-size") == "4"
        assert _flag(m.args, "--data-parallel-size") == "4"
        assert _flag(m.args, "--data-parallel-size-local") == "2"
        assert _flag(m.args, "--data-parallel-address") == "10.20.1.11"
        assert _flag(m.args, "--data-parallel-rpc-port") == "13389"
        assert _flag(m.args, "--quantization") == "ascend"
        assert "--enable-expert-parallel" in m.args
    assert "--headless" not in head.args and "--headless" in second.args
    assert _flag(second.args, "--data-parallel-start-rank") == "2"
    assert "--data-parallel-start-rank" not in head.args
    assert _flag(head.args, "--port") == "8000" and "--port" not in second.args
    assert _flag(head.args, "--served-model-name") == "deepseek-r1"
    env0, env1 = dict(head.env), dict(second.env)
    assert env0["HCCL_IF_IP"] == "10.20.1.11" and env1["HCCL_IF_IP"] == "10.20.1.12"
    assert env0["ASCEND_RT_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"
    assert env0["HCCL_INTRA_PCIE_ENABLE"] == "1" and env0["HCCL_INTRA_ROCE_ENABLE"] == "0"
    assert env0["GLOO_SOCKET_IFNAME"] == "enp189s0f0"


def test_two_replicas_share_a_server_with_disjoint_masks(single: dict) -> None:
    plan = validate_data(single).plan
    assert plan is not None
    masks = [r.head.visible_devices for r in plan.replicas]
    assert masks == ["0,1,2,3", "4,5,6,7"]
    assert [r.port for r in plan.replicas] == [8000, 8001]
    assert all("HCCL_IF_IP" in dict(r.head.env) for r in plan.replicas)  # tp 4: multi-device


def test_a3_counts_dies_not_cards(a3: dict) -> None:
    plan = validate_data(a3).plan
    assert plan is not None
    (rep,) = plan.replicas
    assert rep.head.devices == tuple(range(16))
    assert plan.host("a3-01").devices == 16
    i = rep.head.args.index("--compilation-config")
    assert rep.head.args[i + 1] == '{"cudagraph_mode": "FULL_DECODE_ONLY"}'
    assert "--speculative-config" in rep.head.args


def test_310p_serves_float16_and_rejects_bfloat16(duo: dict) -> None:
    plan = validate_data(duo).plan
    assert plan is not None
    assert _flag(plan.replicas[0].head.args, "--dtype") == "float16"
    duo["model"]["dtype"] = "bfloat16"
    assert ("model", "310P3 has no bfloat16 support") in _codes(duo)


def test_world_size_mismatch_suggests_a_dp(pair: dict) -> None:
    pair["serving"]["parallelism"]["dp"] = 2
    result = validate_data(pair)
    (err,) = [f for f in result.errors if f.code == "topology"]
    assert "tp x pp x dp = 4 x 1 x 2 = 8" in err.message and "owns 16 NPU devices" in err.message
    assert "dp: 4" in (err.fix or "")
    assert err.path == ("serving", "parallelism")


def test_tensor_parallelism_across_servers_needs_opt_in_and_runs_on_ray(pair: dict) -> None:
    pair["serving"]["parallelism"] = {"tp": 16, "dp": 1, "ep": True}
    assert any("spans servers" in m for _, m in _codes(pair))
    pair["serving"]["replicas"][0]["multi_node_tp"] = True
    plan = validate_data(pair).plan
    assert plan is not None
    rep = plan.replicas[0]
    assert rep.mode == "ray"
    assert _flag(rep.head.args, "--distributed-executor-backend") == "ray"
    worker: MemberPlan = rep.members[1]
    assert worker.role == "ray-worker" and worker.args == ()
    assert dict(worker.env)["RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES"] == "1"


def test_pipeline_parallel_across_servers_is_ray_and_dp_must_be_one(pair: dict) -> None:
    pair["serving"]["parallelism"] = {"tp": 8, "pp": 2, "dp": 1, "ep": True}
    plan = validate_data(pair).plan
    assert plan is not None and plan.replicas[0].mode == "ray"
    assert _flag(plan.replicas[0].head.args, "--pipeline-parallel-size") == "2"
    pair["serving"]["parallelism"] = {"tp": 4, "pp": 2, "dp": 2, "ep": True}
    assert any("dp=1 only" in m for _, m in _codes(pair))


def test_heads_and_kv_heads_divisibility(single: dict) -> None:
    single["serving"]["parallelism"] = {"tp": 3}
    single["serving"]["replicas"][0]["devices"] = [0, 1, 2]
    single["serving"]["replicas"][1]["devices"] = [3, 4, 5]
    msgs = [m for _, m in _codes(single)]
    assert any("40 attention heads" in m for m in msgs)
    assert any("8 KV heads" in m for m in msgs)


def test_tp_above_kv_heads_is_fine_when_a_multiple(single: dict) -> None:
    single["model"]["name"] = "DeepSeek-R1-Distill-Qwen-1.5B"
    single["model"]["weights_path"] = "/data/models/small"
    single["serving"]["max_model_len"] = 8192
    assert validate_data(single).ok  # 12 heads, 2 KV heads, tp 4: KV heads replicated


def test_expert_parallel_needs_moe(single: dict) -> None:
    single["serving"]["parallelism"]["ep"] = True
    assert any("needs a mixture-of-experts model" in m for _, m in _codes(single))


def test_device_lists_are_checked_and_must_not_overlap(single: dict) -> None:
    single["serving"]["replicas"][1]["devices"] = [3, 4, 5, 6]
    assert any("used by replicas 'r0' and 'r1'" in m for _, m in _codes(single))
    single["serving"]["replicas"][1]["devices"] = [4, 5, 6, 9]
    assert any("not a set of distinct indices in 0..7" in m for _, m in _codes(single))


def test_replicas_of_one_group_share_a_profile(fleet: dict) -> None:
    fleet["profiles"]["atlas-800t-a2-b4"] = {"chip": "910B4", "cards": 8, "hbm_gb": 64}
    fleet["servers"][3]["profile"] = "atlas-800t-a2-b4"
    assert any("use different profiles" in m for _, m in _codes(fleet))
    fleet["serving"]["replicas"][3]["group"] = "b4"
    assert validate_data(fleet).ok


def test_port_clashes_on_a_host(single: dict) -> None:
    single["serving"]["replicas"][1]["port"] = 8000
    assert any("port 8000 on 'a2-01' is used by both" in m for _, m in _codes(single))
    single["serving"]["replicas"][1]["port"] = 9100
    assert any("node_exporter" in m for _, m in _codes(single))


def test_single_device_replica_has_no_hccl_env(duo: dict) -> None:
    duo["serving"]["parallelism"] = {"tp": 1}
    duo["serving"]["replicas"] = [
        {"name": f"chip{i}", "servers": ["duo-01"], "devices": [i], "port": 8000 + i} for i in range(4)
    ]
    plan = validate_data(duo).plan
    assert plan is not None and len(plan.replicas) == 4
    assert "HCCL_IF_IP" not in dict(plan.replicas[0].head.env)
    assert plan.replicas[3].head.devices == (3,)
    assert dict(plan.replicas[3].head.env)["ASCEND_RT_VISIBLE_DEVICES"] == "0"  # davinci3 is logical 0 inside


def test_startup_timeout_grows_with_weights(pair: dict, single: dict) -> None:
    big, small = validate_data(pair).plan, validate_data(single).plan
    assert big is not None and small is not None
    assert big.replicas[0].startup_timeout_s > small.replicas[0].startup_timeout_s >= 180
    pair["rollout"] = {"gates": {"startup_timeout_s": 600}}
    fixed = validate_data(pair).plan
    assert fixed is not None and fixed.replicas[0].startup_timeout_s == 600
