"""The model section: catalog entry or custom architecture, quantization, weights source, lengths."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from orchestrator.catalog import MODEL_NAMES
from orchestrator.catalog.load_strategies import load_strategies
from orchestrator.planning.resolve import lookup_model
from orchestrator.spec.findings import Finding, error
from orchestrator.spec.site import SiteSpec
from orchestrator.validation.extra_args import pinned_vllm


def check(spec: SiteSpec) -> Iterator[Finding]:
    model = spec.model
    entry = lookup_model(model)
    if entry is None and model.architecture is None:
        close = difflib.get_close_matches(model.name, MODEL_NAMES, n=1, cutoff=0.5)
        hint = f"did you mean '{close[0]}'? Otherwise " if close else ""
        yield error(
            ("model", "name"),
            f"'{model.name}' is not in the model catalog and has no architecture block",
            f"{hint}add model.architecture (params_b, layers, hidden_size, heads, kv_heads, ...) or use "
            f"one of: {', '.join(MODEL_NAMES)}",
            "model",
        )
        return
    if entry is not None and model.architecture is not None:
        yield error(
            ("model", "architecture"),
            f"'{model.name}' is a catalog model; its architecture is known",
            "remove model.architecture, or give the model another name",
            "model",
        )
    if (
        entry is not None
        and entry.quantization != "none"
        and model.quantization not in (None, entry.quantization)
    ):
        yield error(
            ("model", "quantization"),
            f"{entry.name} weights are {entry.quantization.upper()}; "
            f"quantization '{model.quantization}' contradicts them",
            f"remove quantization or set it to {entry.quantization}",
            "model",
        )
    arch = model.architecture
    if arch is not None:
        if arch.heads % arch.kv_heads:  # also when kv_heads > heads: the remainder is heads
            yield error(
                ("model", "architecture", "kv_heads"),
                f"kv_heads {arch.kv_heads} must divide heads {arch.heads}",
                "check num_key_value_heads in the model's config.json",
                "model",
            )
        if arch.expert_params_b >= arch.params_b:
            yield error(
                ("model", "architecture", "expert_params_b"),
                "expert parameters must be fewer than all parameters",
                "check the model card",
                "model",
            )
        if arch.moe != (arch.expert_params_b > 0):
            yield error(
                ("model", "architecture", "moe"),
                "moe: true needs expert_params_b > 0 and the other way round",
                "set both consistently",
                "model",
            )
        if arch.attention == "mla" and (arch.kv_lora_rank == 0 or arch.qk_rope_head_dim == 0):
            yield error(
                ("model", "architecture", "kv_lora_rank"),
                "MLA attention needs kv_lora_rank and qk_rope_head_dim",
                "copy them from config.json",
                "model",
            )
    max_pos = (
        entry.max_position_embeddings if entry is not None else (arch.max_position_embeddings if arch else 0)
    )
    if spec.serving.max_model_len > max_pos:
        yield error(
            ("serving", "max_model_len"),
            f"max_model_len {spec.serving.max_model_len} exceeds the model's {max_pos} positions",
            f"use at most {max_pos}",
            "model",
        )
    src = model.source
    if src.type == "staged" and src.location is not None:
        yield error(
            ("model", "source", "location"),
            "a 'staged' source has no location: weights are already on the servers",
            "remove location or use type 'controller' or 'url'",
            "model",
        )
    if src.type != "staged" and not src.location:
        yield error(
            ("model", "source", "location"),
            f"source type '{src.type}' needs a location",
            "set the controller path or URL of the weights",
            "model",
        )
    yield from _manifest(spec)
    yield from _load_strategy(spec)


def _manifest(spec: SiteSpec) -> Iterator[Finding]:
    """What the weights phase does without model.source.manifest_sha256 (roles/model_weights/tasks)."""
    src = spec.model.source
    if src.manifest_sha256:
        return
    fix = (
        "run `orchestrator weights manifest DIR` on the weights and set model.source.manifest_sha256 to the "
        "sha256 it prints"
    )
    if src.type != "staged":  # staged without a manifest: nothing is verified; `orchestrator phases` says so
        yield error(
            ("model", "source", "manifest_sha256"),
            f"source type '{src.type}' copies the weights, and every copy is verified against the manifest: "
            "without manifest_sha256 the weights phase stops",
            fix,
            "weights",
        )


def _load_strategy(spec: SiteSpec) -> Iterator[Finding]:
    """model.load_strategy against the pinned vLLM's LoadConfig (catalog/load_strategies.py): a value the
    release does not know would fall back to mmap loading without a word (vLLM reads it as a plain string)."""
    wanted = spec.model.load_strategy
    if wanted == "auto":
        return
    vllm = pinned_vllm(spec).removeprefix("v")
    release = load_strategies(vllm)
    if release is None:
        yield error(
            ("model", "load_strategy"),
            f"vLLM v{vllm} (pinned by vllm-ascend {spec.software.vllm_ascend.version}) has no "
            "--safetensors-load-strategy",
            "set model.load_strategy: auto, or pin a vllm-ascend release on vLLM v0.11 or newer",
            "model",
        )
    elif wanted not in release.values:
        yield error(
            ("model", "load_strategy"),
            f"{release.label} (pinned by vllm-ascend {spec.software.vllm_ascend.version}) has no "
            f"--safetensors-load-strategy {wanted}: it takes {', '.join(release.values)}",
            f"set model.load_strategy to one of auto, {', '.join(release.values)}",
            "model",
        )
