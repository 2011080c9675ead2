"""Cross-field rules: references, serving args and env, host tuning, rollout, monitoring, drift."""

from __future__ import annotations

from typing import Any

from tests.helpers import validate_data


def _errors(data: dict[str, Any]) -> list[tuple[tuple[Any, ...], str, str]]:
    return [(f.path, f.message, f.fix or "") for f in validate_data(data).errors]


def test_every_example_is_valid_without_warnings(
    pair: dict, single: dict, a3: dict, duo: dict, fleet: dict
) -> None:
    for data in (pair, single, a3, duo, fleet):
        result = validate_data(data)
        assert result.ok, result.errors
        assert result.warnings == []


def test_references_and_uniqueness(single: dict) -> None:
    single["servers"].append(dict(single["servers"][0]))
    single["serving"]["replicas"][0]["servers"] = ["a2-01", "a2-09"]
    errs = _errors(single)
    assert any("server name 'a2-01' is used twice" in m for _, m, _ in errs)
    assert any("address 10.20.0.11 is already used" in m for _, m, _ in errs)
    assert any(p == ("serving", "replicas", 0, "servers", 1) and "not defined" in m for p, m, _ in errs)


def test_servers_in_replicas_need_the_npu_role_and_idle_servers_warn(fleet: dict) -> None:
    fleet["serving"]["replicas"][0]["servers"] = ["edge-01"]
    errs = _errors(fleet)
    assert any("has no 'npu' role" in m for _, m, _ in errs)
    fleet["serving"]["replicas"] = fleet["serving"]["replicas"][1:]
    fleet["rollout"]["min_available"] = 1
    result = validate_data(fleet)
    assert result.ok
    assert any("NPU server 'a2-01' serves no replica" in f.message for f in result.warnings)


def test_seed_article_myths_are_rejected_with_the_real_equivalent(single: dict) -> None:
    single["tuning"] = {"rdma_modules": {"rdma_ucm": {"use_centric_mode": 1}}}
    single["serving"]["env"] = {"ASCEND_GLOBAL_VISIBILITY": "0x0001"}
    single["serving"]["extra_args"] = ["--swap-space", "4"]
    msgs = " | ".join(m for _, m, _ in _errors(single))
    assert "rdma_ucm has no 'use_centric_mode' parameter" in msgs and "hccn_tool" in msgs
    assert (
        "ASCEND_GLOBAL_VISIBILITY is not an Ascend variable" in msgs and "ASCEND_RT_VISIBLE_DEVICES" in msgs
    )
    assert "--swap-space" in msgs


def test_module_options_known_unknown_and_allowed(single: dict) -> None:
    single["tuning"] = {"rdma_modules": {"mlx5_core": {"prof_sel": 2}}}
    assert validate_data(single).ok
    single["tuning"]["rdma_modules"]["mlx5_core"]["turbo"] = 1
    assert any(
        p[-1] == "turbo" and "'turbo' is not a parameter of mlx5_core" in m for p, m, _ in _errors(single)
    )
    single["tuning"]["rdma_modules"]["mlx5_core"] = {"prob_vf": 1}
    assert any("did you mean 'probe_vf'?" in f for _, _, f in _errors(single))
    single["tuning"]["rdma_modules"]["mlx5_core"] = {"turbo": 1}
    single["tuning"]["allow_unknown_module_options"] = True
    result = validate_data(single)
    assert result.ok and any(
        "allowed by tuning.allow_unknown_module_options" in f.message for f in result.warnings
    )


def test_extra_args_derived_unknown_short_and_values(single: dict) -> None:
    single["serving"]["extra_args"] = ["-tp", "8"]
    errs = _errors(single)
    assert any("-tp is set by serving.parallelism.tp" in m and "parallelism.tp" in f for _, m, f in errs)
    single["serving"]["extra_args"] = ["--enable-prefix-cachx"]
    assert any("did you mean --enable-prefix-caching" in f for _, _, f in _errors(single))
    single["serving"]["extra_args"] = ["--seed", "-1", "--enable-prefix-caching"]
    assert validate_data(single).ok
    single["serving"]["allow_unknown_args"] = True
    single["serving"]["extra_args"] = ["--my-build-only-flag"]
    assert validate_data(single).ok


def test_env_secrets_must_be_references_and_derived_env_is_protected(single: dict) -> None:
    single["serving"]["env"] = {"HF_TOKEN": "hf_abcdef"}
    errs = _errors(single)
    assert any("looks like a secret" in m for _, m, _ in errs)
    assert not any("hf_abcdef" in m + f for _, m, f in errs)
    # a reference would reach the container as its literal text: refused too, saying so
    single["serving"]["env"] = {"HF_TOKEN": "env:HF_TOKEN", "HCCL_BUFFSIZE": "512"}
    errs = _errors(single)
    assert [p for p, _, _ in errs] == [("serving", "env", "HCCL_BUFFSIZE"), ("serving", "env", "HF_TOKEN")]
    assert "would reach the container as that literal text" in errs[1][1]


def test_inline_api_key_is_rejected_without_echoing_it(single: dict) -> None:
    single["serving"]["api_key"] = "sk-live-0123456789"
    result = validate_data(single)
    (err,) = result.errors
    assert err.path == ("serving", "api_key")
    assert "sk-live" not in err.message + (err.fix or "")


def test_engine_limits(single: dict) -> None:
    single["serving"]["max_num_batched_tokens"] = 8
    assert any("below max_num_seqs 16" in m for _, m, _ in _errors(single))
    single["serving"]["max_num_batched_tokens"] = 8192
    single["serving"]["max_model_len"] = 200000
    assert any("exceeds the model's 131072 positions" in m for _, m, _ in _errors(single))


def test_rollout_monitoring_gateway_and_drift(fleet: dict) -> None:
    fleet["rollout"].update({"canary": 5, "batch_size": "150%", "min_available": 4})
    fleet["drift"]["schedule"] = "0 */6 * *"
    fleet["servers"][4]["roles"] = ["monitoring"]
    paths = {p for p, _, _ in _errors(fleet)}
    assert {
        ("rollout", "canary"),
        ("rollout", "batch_size"),
        ("rollout", "min_available"),
        ("drift", "schedule"),
        ("gateway", "host"),
    } <= paths


def test_cron_fields_are_range_checked(single: dict) -> None:
    for bad in ("61 * * * *", "*/0 * * * *", "5-1 * * * *", "a b c d e"):
        single["drift"] = {"schedule": bad}
        assert [p for p, _, _ in _errors(single)] == [("drift", "schedule")], bad
    for good in ("*/15 2-5 1,15 * 0", "0 0 * * 7"):
        single["drift"] = {"schedule": good}
        assert validate_data(single).ok, good


def test_monitoring_without_host_warns(single: dict) -> None:
    single["servers"][0]["roles"] = ["npu", "build"]
    result = validate_data(single)
    assert result.ok and any("no Prometheus" in f.message for f in result.warnings)


def test_custom_model_architecture(single: dict) -> None:
    single["model"] = {
        "name": "my-qwen-14b-finetune",
        "weights_path": "/data/models/ft",
        "architecture": {"params_b": 14.8, "layers": 48, "hidden_size": 5120, "heads": 40, "kv_heads": 8},
    }
    plan = validate_data(single).plan
    assert plan is not None and plan.model_name == "my-qwen-14b-finetune"
    single["model"]["architecture"]["kv_heads"] = 7
    assert any("kv_heads 7 must divide heads 40" in m for _, m, _ in _errors(single))
    del single["model"]["architecture"]
    single["model"]["name"] = "DeepSeek-R1-Distil-Qwen-14B"
    assert any("did you mean 'DeepSeek-R1-Distill-Qwen-14B'" in f for _, _, f in _errors(single))
