"""PD pool rules: additional_config against the pinned vllm-ascend, EPLB, MTP per role, pool extra_args and
env. Each test breaks one line of the valid 2P1D site (pd_site.BASE) and checks the unbroken site."""

from __future__ import annotations

import pytest

from tests.unit.pd.pd_site import BASE, clean, edit, expect, validate

P = "serving.disaggregation.prefill"
D = "serving.disaggregation.decode"
PREFILL_AC = "additional_config: {enable_shared_expert_dp: true}"
DECODE_AC = "additional_config: {recompute_scheduler_enable: true, multistream_overlap_shared_expert: true}"


@pytest.mark.parametrize(
    ("key", "release", "fix"),
    [
        ("torchair_graph_config: {enabled: true}", "v0.12.0rc1", "cudagraph_mode"),
        ("ascend_scheduler_config: {enabled: true}", "v0.12.0rc1", "vLLM's own scheduler"),
        ("chunked_prefill_for_mla: true", "v0.13.0rc1", "remove it"),
        ("enable_weight_nz_layout: true", "v0.10.0rc1", "weight_nz_mode"),
        ("enable_prefill_optimizations: true", "v0.10.0rc1", "remove it"),
        ("lmhead_tp_size: 8", "v0.10.0rc1", "lmhead_tensor_parallel_size"),
        ("num_iterations_eplb_update: 400", "v0.14.0rc1", "algorithm_execution_interval"),
        ("gate_eplb: true", "v0.14.0rc1", "remove it"),
        ("num_wait_worker_iterations: 30", "v0.14.0rc1", "remove it"),
        ("dynamic_eplb: true", "v0.14.0rc1", "eplb_config"),
    ],
)
def test_removed_additional_config_key(key: str, release: str, fix: str) -> None:
    name = key.split(":", maxsplit=1)[0]
    text = edit(BASE, (PREFILL_AC, f"additional_config: {{enable_shared_expert_dp: true, {key}}}"))
    f = expect(text, "pd-config", f"{P}.additional_config.{name}", f"{name}:")
    assert f"gone from vllm-ascend {release} on (the pinned release is v0.23.0)" in f.message
    assert f.fix and fix in f.fix
    clean(BASE, "pd-config")


def test_unknown_additional_config_key_suggests_the_close_one() -> None:
    text = edit(BASE, (PREFILL_AC, "additional_config: {enable_shared_expert_dpp: true}"))
    f = expect(
        text, "pd-config", f"{P}.additional_config.enable_shared_expert_dpp", "enable_shared_expert_dpp"
    )
    assert "ignores unknown keys" in f.message
    assert f.fix and f.fix.startswith("did you mean enable_shared_expert_dp?")


def test_unknown_key_is_a_warning_with_allow_unknown_args() -> None:
    text = edit(
        BASE,
        (PREFILL_AC, "additional_config: {enable_shared_expert_dpp: true}"),
        (
            "  max_num_seqs: 8\n  disaggregation:",
            "  max_num_seqs: 8\n  allow_unknown_args: true\n  disaggregation:",
        ),
    )
    f = expect(
        text, "pd-config", f"{P}.additional_config.enable_shared_expert_dpp", "enable_shared_expert_dpp"
    )
    assert not f.is_error


def test_recompute_scheduler_on_prefill_warns() -> None:
    text = edit(BASE, (PREFILL_AC, "additional_config: {recompute_scheduler_enable: true}"))
    f = expect(
        text,
        "pd-config",
        f"{P}.additional_config.recompute_scheduler_enable",
        "{recompute_scheduler_enable: true}",
    )
    assert not f.is_error and "ignored" in f.message and "platform.py" in f.message
    assert validate(text).plan is not None  # a warning: the site still deploys


def test_eplb_redundant_experts_not_divisible_by_ep() -> None:
    # decode EP = tp 1 x dp 32: 256 + 16 = 272 is not a multiple of 32
    text = edit(BASE, (DECODE_AC, "additional_config: {eplb_config: {num_redundant_experts: 16}}"))
    f = expect(
        text,
        "pd-eplb",
        f"{D}.additional_config.eplb_config.num_redundant_experts",
        "num_redundant_experts: 16",
    )
    assert "256 routed experts + 16 redundant" in f.message and "size 32 (tp 1 x dp 32)" in f.message
    assert f.fix and f.fix.startswith("set num_redundant_experts to 32")
    clean(edit(BASE, (DECODE_AC, "additional_config: {eplb_config: {num_redundant_experts: 32}}")), "pd-eplb")


def test_eplb_redundant_experts_from_extra_args() -> None:
    text = edit(
        BASE,
        ("      extra_args: []\n", "      extra_args: [--eplb-config, '{\"num_redundant_experts\": 8}']\n"),
    )
    f = expect(text, "pd-eplb", f"{D}.extra_args[0]", "extra_args: [--eplb-config")
    assert "(--eplb-config)" in f.message


def test_dynamic_eplb_needs_its_environment_variable() -> None:
    text = edit(BASE, (PREFILL_AC, "additional_config: {eplb_config: {dynamic_eplb: true}}"))
    f = expect(text, "pd-eplb", f"{P}.additional_config.eplb_config.dynamic_eplb", "dynamic_eplb: true")
    assert "DYNAMIC_EPLB=true" in f.message and f.fix and P + ".env" in f.fix
    fixed = edit(
        text,
        (
            '      env: {VLLM_RPC_TIMEOUT: "3600000"}\n      extra_args: [--seed',
            '      env: {VLLM_RPC_TIMEOUT: "3600000", DYNAMIC_EPLB: "true"}\n      extra_args: [--seed',
        ),
    )
    clean(fixed, "pd-eplb")


def test_unknown_eplb_config_key() -> None:
    text = edit(BASE, (PREFILL_AC, "additional_config: {eplb_config: {redundant_experts: 16}}"))
    f = expect(
        text, "pd-eplb", f"{P}.additional_config.eplb_config.redundant_experts", "redundant_experts: 16"
    )
    assert "Config has no attribute 'redundant_experts'" in f.message


def test_prefill_mtp_takes_one_speculative_token() -> None:
    text = edit(
        BASE,
        (
            "      speculative_config: {method: deepseek_mtp, num_speculative_tokens: 1}\n      env",
            "      speculative_config: {method: deepseek_mtp, num_speculative_tokens: 2}\n      env",
        ),
    )
    f = expect(text, "pd-mtp", f"{P}.speculative_config.num_speculative_tokens", "num_speculative_tokens: 2")
    assert "must be 1" in f.message
    clean(BASE, "pd-mtp")
    decode_three = edit(
        BASE,
        (
            "      speculative_config: {method: deepseek_mtp, num_speculative_tokens: 1}\n      compilation",
            "      speculative_config: {method: deepseek_mtp, num_speculative_tokens: 3}\n      compilation",
        ),
    )
    clean(decode_three, "pd-mtp")


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ("[--tensor-parallel-size, '4']", f"{P}.parallelism.tp"),
        ("[-tp, '4']", f"{P}.parallelism.tp"),
        ("[--kv-transfer-config, '{}']", "serving.disaggregation.connector"),
        ("[--additional-config, '{}']", f"{P}.additional_config"),
        ("[--speculative-config, '{}']", f"{P}.speculative_config"),
        ("[--compilation-config, '{}']", f"{P}.compilation_config"),
        ("[--port, '8000']", f"{P}.port"),
        ("[--data-parallel-rpc-port, '13000']", f"{P}.dp_rpc_port"),
        ("[--max-num-seqs, '4']", f"{P}.max_num_seqs"),
        ("[--data-parallel-address, 10.0.0.1]", f"{P}.instances[].servers"),
    ],
)
def test_pool_extra_args_may_not_set_what_the_plan_renders(args: str, field: str) -> None:
    text = edit(BASE, ('      extra_args: [--seed, "1024"]', f"      extra_args: {args}"))
    f = expect(text, "vllm-args", f"{P}.extra_args[0]", f"extra_args: {args}")
    assert f"is set by {field}" in f.message
    clean(BASE, "vllm-args")


def test_pool_extra_args_unknown_flag() -> None:
    text = edit(BASE, ('      extra_args: [--seed, "1024"]', "      extra_args: [--enable-fast-prefill]"))
    f = expect(text, "vllm-args", f"{P}.extra_args[0]", "extra_args: [--enable-fast-prefill]")
    assert "is not a `vllm serve` option" in f.message


@pytest.mark.parametrize(
    ("var", "field"),
    [
        ("HCCL_BUFFSIZE", f"{P}.hccl_buffsize_mb"),
        ("VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT", "serving.disaggregation.abort_request_timeout_s"),
        ("ASCEND_RT_VISIBLE_DEVICES", f"{P}.instances[].devices"),
    ],
)
def test_pool_env_may_not_set_what_the_plan_derives(var: str, field: str) -> None:
    text = edit(
        BASE,
        (
            '      env: {VLLM_RPC_TIMEOUT: "3600000"}\n      extra_args: [--seed',
            f'      env: {{{var}: "1"}}\n      extra_args: [--seed',
        ),
    )
    f = expect(text, "env", f"{P}.env.{var}", f"env: {{{var}")
    assert f"set by the plan from {field}" in f.message
    clean(BASE, "env")


def test_pool_env_secret_is_refused() -> None:
    text = edit(
        BASE,
        (
            '      env: {VLLM_RPC_TIMEOUT: "3600000"}\n      extra_args: [--seed',
            "      env: {HF_TOKEN: hf_abc}\n      extra_args: [--seed",
        ),
    )
    f = expect(text, "secret", f"{P}.env.HF_TOKEN", "env: {HF_TOKEN")
    assert "looks like a secret" in f.message


def test_pool_batched_tokens_below_its_max_num_seqs() -> None:
    text = edit(
        BASE,
        (
            "      max_num_seqs: 8\n      additional",
            "      max_num_seqs: 8\n      max_num_batched_tokens: 4\n      additional",
        ),
    )
    f = expect(text, "vllm-args", f"{D}.max_num_batched_tokens", "max_num_batched_tokens: 4")
    assert "decode: max_num_batched_tokens 4 is below max_num_seqs 8" in f.message
