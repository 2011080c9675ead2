"""Chip, checkpoint and image limits, IRQ policy and serving knobs, as whole findings.

300I Duo accepts HCCL_OP_EXPANSION_MODE AI_CPU and HOST only (CANN HCCL environment variable reference,
tests/fixtures/ascend/hccl_op_expansion_mode.txt); vllm-ascend's int8 KV cache (C8) comes from a msmodelslim
checkpoint, not from a flag; irqbalance moves pinned IRQs again; environment names are POSIX names."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from orchestrator.catalog import get_release
from orchestrator.validation import platform_rules
from tests.helpers import validate_data
from tests.spec_text import Described, described


def _findings(data: dict[str, Any]) -> list[Described]:
    return [described(f) for f in validate_data(data).findings]


def test_hccl_expansion_mode_the_chip_does_not_have(duo: dict[str, Any]) -> None:
    duo["serving"]["hccl"] = {"op_expansion_mode": "AIV"}
    assert _findings(duo) == [
        (
            "serving.hccl.op_expansion_mode",
            "HCCL_OP_EXPANSION_MODE=AIV is not supported on Atlas 300I Duo (310P3); it accepts AI_CPU, HOST",
            "remove op_expansion_mode to use the chip's default (HOST) or set one of AI_CPU, HOST",
            "hccl",
            [],
        )
    ]
    duo["serving"]["hccl"] = {"op_expansion_mode": "AI_CPU"}
    assert _findings(duo) == []


def test_int8_kv_cache_of_a_quantized_checkpoint_is_a_warning(pair: dict[str, Any]) -> None:
    pair["serving"]["kv_cache_dtype"] = "int8"
    assert _findings(pair) == [
        (
            "serving.kv_cache_dtype",
            "int8 KV cache relies on the W8A8 checkpoint: its quant_model_description.json must set "
            "kv_cache_type C8 (no flag is rendered); capacity is planned with 1-byte KV",
            "check the checkpoint's quant_model_description.json, or set kv_cache_dtype: auto",
            "kv-cache",
            [],
        )
    ]


def test_a_release_without_a_dockerfile_for_the_os(
    single: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # every pinned release ships Ubuntu and openEuler Dockerfiles; a release with Ubuntu only
    ubuntu_only = replace(get_release("v0.23.0"), image_os=(("ubuntu", "ubuntu22.04"),))
    monkeypatch.setattr(platform_rules, "release_of", lambda spec: ubuntu_only)
    single["image"] = {"base_os": "openeuler"}
    error = (
        "image.base_os",
        "vllm-ascend v0.23.0 ships no openeuler Dockerfile, so there is no base image to derive",
        "use one of ubuntu, or set image.base_image",
        "image",
        [],
    )
    assert error in _findings(single)
    single["image"]["base_image"] = "registry.example.com/cann:9.1.0-openeuler"
    assert error not in _findings(single)


def test_pinned_irqs_with_irqbalance_running(single: dict[str, Any]) -> None:
    single["tuning"] = {"irq_affinity": "npu-numa", "irqbalance": "enabled"}
    assert _findings(single) == [
        (
            "tuning.irqbalance",
            "irq_affinity npu-numa pins NPU IRQs, and a running irqbalance moves them again",
            "remove irqbalance (pinning disables it) or drop irq_affinity",
            "tuning",
            [],
        )
    ]


def test_environment_names_derived_variables_and_secret_references(single: dict[str, Any]) -> None:
    single["serving"]["env"] = {
        "1BAD": "x",
        "HCCL_BUFFSIZE": "100",
        "MY_TOKEN": "env:MY_TOKEN",
        "API_SECRET": "file:/etc/secret",
        "OK_VAR": "1",
    }
    literal = (
        "would reach the container as that literal text: serving.env values are passed as written, secret "
        "references are resolved only in serving.api_key and image.registry.password"
    )
    hub = "the weights phase stages the model on every server, so vLLM needs no hub token at run time"
    assert sorted(_findings(single)) == [
        (
            "serving.env.1BAD",
            "'1BAD' is not a valid environment variable name",
            "use letters, digits, '_'",
            "env",
            [],
        ),
        (
            "serving.env.API_SECRET",
            f"API_SECRET: file:/etc/secret {literal}",
            f"remove API_SECRET; {hub}",
            "secret",
            [],
        ),
        (
            "serving.env.HCCL_BUFFSIZE",
            "HCCL_BUFFSIZE is derived by the plan (devices, HCCL settings, API key)",
            "remove it; set the matching field (serving.hccl, replica devices, serving.api_key)",
            "env",
            [],
        ),
        (
            "serving.env.MY_TOKEN",
            f"MY_TOKEN: env:MY_TOKEN {literal}",
            f"remove MY_TOKEN; {hub}",
            "secret",
            [],
        ),
    ]


def test_engine_limits_at_their_bounds(single: dict[str, Any]) -> None:
    single["serving"].update(
        {"max_num_batched_tokens": 16, "max_num_seqs": 16, "gpu_memory_utilization": 0.95}
    )
    assert _findings(single) == []
    single["serving"]["gpu_memory_utilization"] = 0.96
    assert _findings(single) == [
        (
            "serving.gpu_memory_utilization",
            "0.96 leaves little room for HCCL buffers and graph capture on Ascend",
            "0.9-0.92 is the usual range",
            "capacity",
            [],
        )
    ]


def test_int8_kv_cache_of_an_unquantized_model_is_refused(single: dict[str, Any]) -> None:
    # vllm-ascend: C8 KV comes from msmodelslim's quant_model_description.json (kv_cache_type C8), not a flag
    single["serving"]["kv_cache_dtype"] = "int8"
    single["serving"]["max_num_seqs"] = 1  # no capacity warning in the way
    assert _findings(single) == [
        (
            "serving.kv_cache_dtype",
            "vllm-ascend has no --kv-cache-dtype int8: its int8 KV cache (C8) comes from a msmodelslim "
            "checkpoint whose quant_model_description.json sets kv_cache_type C8, served with "
            "--quantization ascend, and this model is not quantized",
            "serve a msmodelslim W8A8/W4A8 checkpoint quantized with KV C8 (model.quantization) or set "
            "kv_cache_dtype: auto",
            "kv-cache",
            [],
        )
    ]
