"""Launch failures found by validate: batched tokens vs model length, HCCL buffer vs EP, one HCCL base port.

The HCCL_BUFFSIZE formula is checked against the operator's own log line (vllm-ascend PR #5287, the doctor's
fixture F2): maxBs 512, h 2048, epWorldSize 2, localMoeExpertNum 64, tokenNeedSizeDispatch 4608,
tokenNeedSizeCombine 4096, k 8 -> NEEDED_HCCL_BUFFSIZE 609MB.
"""

from __future__ import annotations

import re
from typing import Any

from orchestrator.pipeline import validate_text
from orchestrator.spec.findings import Finding, format_path
from orchestrator.validation.prelaunch_rules import DispatchShape, needed_hccl_buffsize_mb
from tests.helpers import to_yaml

# Verbatim from vllm-ascend PR #5287 (https://github.com/vllm-project/vllm-ascend/pull/5287), as quoted by
# orchestrator/doctor/rules_hccl.py's example.
_LOG = (
    "EZ9999[PID: 17833] 2025-12-23-07:36:19.237.396 (EZ9999):  HCCL_BUFFSIZE is too SMALL, maxBs = 512, "
    "h = 2048, epWorldSize = 2, localMoeExpertNum = 64, sharedExpertNum = 0, tokenNeedSizeDispatch = 4608, "
    "tokenNeedSizeCombine = 4096, k = 8, NEEDED_HCCL_BUFFSIZE(((maxBs * tokenNeedSizeDispatch * ep_worldsize "
    "* localMoeExpertNum) + (maxBs * tokenNeedSizeCombine * (k + sharedExpertNum))) * 2) = 609MB, "
    "HCCL_BUFFSIZE=200MB."
)


def _validate(data: dict[str, Any]) -> tuple[list[Finding], list[str]]:
    text = to_yaml(data)
    return list(validate_text(text, "site.yaml").findings), text.splitlines()


def _at(findings: list[Finding], path: str, code: str) -> list[Finding]:
    return [f for f in findings if format_path(f.path) == path and f.code == code]


def _line(f: Finding, lines: list[str]) -> str:
    assert f.position is not None
    return lines[f.position.line - 1]


def test_needed_buffsize_matches_the_operators_log() -> None:
    terms = {k: int(v) for k, v in re.findall(r"(\w+) = (\d+)", _LOG)}
    shape = DispatchShape(
        max_bs=terms["maxBs"],
        token_need_size_dispatch=terms["tokenNeedSizeDispatch"],
        token_need_size_combine=terms["tokenNeedSizeCombine"],
        ep_world_size=terms["epWorldSize"],
        local_moe_expert_num=terms["localMoeExpertNum"],
        k=terms["k"],
        shared_expert_num=terms["sharedExpertNum"],
    )
    logged = re.search(r"= (\d+)MB, HCCL_BUFFSIZE", _LOG)
    assert logged is not None
    assert needed_hccl_buffsize_mb(shape) == int(logged.group(1)) == 609


def test_batched_tokens_below_model_len_with_chunked_prefill_off(single: dict[str, Any]) -> None:
    single["serving"]["extra_args"] = ["--no-enable-chunked-prefill"]
    findings, lines = _validate(single)
    [f] = _at(findings, "serving.max_num_batched_tokens", "vllm-args")
    assert f.is_error
    assert f.message == (
        "max_num_batched_tokens 8192 is smaller than max_model_len 32768 and chunked prefill is off "
        "(--no-enable-chunked-prefill); vLLM refuses to start"
    )
    assert f.fix is not None and "raise max_num_batched_tokens to 32768" in f.fix
    assert "max_num_batched_tokens: 8192" in _line(f, lines)
    single["serving"]["max_num_batched_tokens"] = 32768
    findings, _ = _validate(single)
    assert _at(findings, "serving.max_num_batched_tokens", "vllm-args") == []


def test_batched_tokens_below_model_len_is_fine_with_chunked_prefill_on(single: dict[str, Any]) -> None:
    # vLLM's default: chunked prefill on (SchedulerConfig.enable_chunked_prefill), long prompts are split
    findings, _ = _validate(single)
    assert _at(findings, "serving.max_num_batched_tokens", "vllm-args") == []
    single["serving"]["extra_args"] = ["--enable-chunked-prefill"]
    findings, _ = _validate(single)
    assert _at(findings, "serving.max_num_batched_tokens", "vllm-args") == []


def test_ascend_scheduler_without_chunked_prefill(single: dict[str, Any]) -> None:
    single["serving"]["extra_args"] = [
        "--additional-config",
        '{"ascend_scheduler_config": {"enabled": true}}',
    ]
    findings, _ = _validate(single)
    [f] = _at(findings, "serving.max_num_batched_tokens", "vllm-args")
    assert f.is_error and "ascend_scheduler_config enabled" in f.message
    single["serving"]["extra_args"].append("--enable-chunked-prefill")
    findings, _ = _validate(single)
    assert _at(findings, "serving.max_num_batched_tokens", "vllm-args") == []


def test_hccl_buffer_too_small_for_moe_dispatch(pair: dict[str, Any]) -> None:
    # DeepSeek-R1-W8A8, EP over tp 4 x dp 4 = 16 ranks: 16 experts per rank, top-8, hidden 7168.
    # At max_num_seqs 8 the lower bound is 31 MB (fits 200); at 128 it is about 482 MB.
    findings, _ = _validate(pair)
    assert _at(findings, "serving.hccl.buffsize_mb", "hccl") == []
    pair["serving"]["max_num_seqs"] = 128
    pair["serving"]["max_num_batched_tokens"] = 8192
    pair["serving"]["hccl"] = {"buffsize_mb": 200}
    findings, lines = _validate(pair)
    [f] = _at(findings, "serving.hccl.buffsize_mb", "hccl")
    assert not f.is_error
    need = needed_hccl_buffsize_mb(
        DispatchShape(
            max_bs=128,
            token_need_size_dispatch=7168,
            token_need_size_combine=2 * 7168,
            ep_world_size=16,
            local_moe_expert_num=16,
            k=8,
        )
    )
    assert f"at least about {need} MB" in f.message and "replica 'r1'" in f.message
    assert f.fix == "set serving.hccl.buffsize_mb to 512 or more, or lower max_num_seqs"
    assert "buffsize_mb: 200" in _line(f, lines)
    pair["serving"]["hccl"] = {"buffsize_mb": 512}
    findings, _ = _validate(pair)
    assert _at(findings, "serving.hccl.buffsize_mb", "hccl") == []


def test_hccl_buffer_is_not_checked_without_expert_parallelism(pair: dict[str, Any]) -> None:
    pair["serving"]["max_num_seqs"] = 128
    pair["serving"]["max_num_batched_tokens"] = 8192
    pair["serving"]["parallelism"]["ep"] = False
    findings, _ = _validate(pair)
    assert _at(findings, "serving.hccl.buffsize_mb", "hccl") == []


def test_one_base_port_for_two_replicas_on_one_server(single: dict[str, Any]) -> None:
    single["serving"]["env"] = {"HCCL_IF_BASE_PORT": "60000"}
    findings, lines = _validate(single)
    [f] = _at(findings, "serving.env.HCCL_IF_BASE_PORT", "hccl")
    assert f.is_error
    assert f.message == (
        "replicas 'r0' and 'r1' share server 'a2-01' and all get HCCL_IF_BASE_PORT=60000 from serving.env; "
        "only the first can bind its HCCL ports"
    )
    assert "HCCL_IF_BASE_PORT" in _line(f, lines)
    # one replica per server: the same base port is fine
    single["serving"]["replicas"] = single["serving"]["replicas"][:1]
    findings, _ = _validate(single)
    assert _at(findings, "serving.env.HCCL_IF_BASE_PORT", "hccl") == []


def test_one_device_replicas_open_no_hccl_ports(duo: dict[str, Any]) -> None:
    duo["serving"]["env"] = {"HCCL_IF_BASE_PORT": "60000"}
    findings, _ = _validate(duo)
    assert len(_at(findings, "serving.env.HCCL_IF_BASE_PORT", "hccl")) == 1
    duo["serving"]["parallelism"] = {"tp": 1}
    for replica in duo["serving"]["replicas"]:
        replica["devices"] = replica["devices"][:1]
    findings, _ = _validate(duo)
    assert _at(findings, "serving.env.HCCL_IF_BASE_PORT", "hccl") == []


def _base_ports(data: dict[str, Any]) -> dict[tuple[str, str], str | None]:
    result = validate_text(to_yaml(data), "site.yaml")
    assert result.plan is not None, result.findings
    return {
        (r.name, m.server): dict(m.env).get("HCCL_IF_BASE_PORT")
        for r in result.plan.replicas
        for m in r.members
    }


def test_the_plan_gives_each_replica_on_a_shared_server_its_own_base_port(single: dict[str, Any]) -> None:
    # CANN envref_07_0074: HCCL listens on 32 ports from the base (60000-60031 by default); 100 apart is clear
    assert _base_ports(single) == {("r0", "a2-01"): "60000", ("r1", "a2-01"): "60100"}
    single["serving"]["replicas"] = single["serving"]["replicas"][:1]
    assert _base_ports(single) == {("r0", "a2-01"): None}  # alone on its server: HCCL's default


def test_no_base_port_for_replicas_on_their_own_servers(pair: dict[str, Any]) -> None:
    assert set(_base_ports(pair).values()) == {None}
