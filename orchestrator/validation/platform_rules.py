"""Settings that only some chips, checkpoints or images support: HCCL expansion mode, int8 KV cache, the
container OS of the image, IRQ policy."""

from __future__ import annotations

from collections.abc import Iterator

from orchestrator.catalog import get_chip
from orchestrator.planning.resolve import lookup_model
from orchestrator.spec.findings import Finding, error, warning
from orchestrator.spec.site import SiteSpec
from orchestrator.validation.software import npu_chips, release_of


def check(spec: SiteSpec) -> Iterator[Finding]:
    yield from _hccl_mode(spec)
    yield from _kv_int8(spec)
    yield from _image_os(spec)
    yield from _irq(spec)


def _hccl_mode(spec: SiteSpec) -> Iterator[Finding]:
    mode = spec.serving.hccl.op_expansion_mode
    if mode is None:
        return
    for chip in npu_chips(spec):
        if mode not in chip.hccl_op_expansion_modes:
            yield error(
                ("serving", "hccl", "op_expansion_mode"),
                f"HCCL_OP_EXPANSION_MODE={mode} is not supported on {chip.product} ({chip.name}); it accepts "
                f"{', '.join(chip.hccl_op_expansion_modes)}",
                f"remove op_expansion_mode to use the chip's default ({chip.hccl_op_expansion_default}) or "
                f"set one of {', '.join(chip.hccl_op_expansion_modes)}",
                "hccl",
            )
    if mode == "AIV":
        yield from _aiv_across_servers(spec)


def _aiv_across_servers(spec: SiteSpec) -> Iterator[Finding]:
    """AIV on a replica over several A2 servers: the CANN reference runs AIV AlltoAllV (expert parallelism's
    dispatch) within one server only on Atlas A2 (hiascend.com/document/detail/zh/canncommercial/850/
    maintenref/envvar/envref_07_0096.html)."""
    servers = {s.name: s for s in spec.servers}
    for rep in spec.serving.replicas:
        head = servers.get(rep.servers[0])
        if len(set(rep.servers)) < 2 or head is None or head.profile not in spec.profiles:
            continue
        chip = get_chip(spec.profiles[head.profile].chip)
        if not chip.hccl_aiv_one_server:
            continue
        ep = (rep.parallelism or spec.serving.parallelism).ep
        what = f"replica '{rep.name}' spans {len(set(rep.servers))} {chip.product} servers" + (
            " with expert parallelism" if ep else ""
        )
        message = (
            f"HCCL_OP_EXPANSION_MODE=AIV: {what}, and CANN runs AIV AlltoAllV on {chip.product} within one "
            "server only"
        )
        fix = "remove op_expansion_mode (the plan then leaves CANN's default, HOST, as vllm-ascend's "
        fix += "two-node recipe does) or set HOST"
        path = ("serving", "hccl", "op_expansion_mode")
        yield error(path, message, fix, "hccl") if ep else warning(path, message, fix, "hccl")
        return


def _kv_int8(spec: SiteSpec) -> Iterator[Finding]:
    if spec.serving.kv_cache_dtype != "int8":
        return
    entry = lookup_model(spec.model)
    quant = spec.model.quantization or (entry.quantization if entry is not None else "none")
    path = ("serving", "kv_cache_dtype")
    if quant == "none":
        yield error(
            path,
            "vllm-ascend has no --kv-cache-dtype int8: its int8 KV cache (C8) comes from a msmodelslim "
            "checkpoint whose quant_model_description.json sets kv_cache_type C8, served with "
            "--quantization ascend, and this model is not quantized",
            "serve a msmodelslim W8A8/W4A8 checkpoint quantized with KV C8 (model.quantization) or set "
            "kv_cache_dtype: auto",
            "kv-cache",
        )
        return
    yield warning(
        path,
        f"int8 KV cache relies on the {quant.upper()} checkpoint: its quant_model_description.json must "
        "set kv_cache_type C8 (no flag is rendered); capacity is planned with 1-byte KV",
        "check the checkpoint's quant_model_description.json, or set kv_cache_dtype: auto",
        "kv-cache",
    )


def _image_os(spec: SiteSpec) -> Iterator[Finding]:
    release = release_of(spec)
    if release is None or spec.image.base_image is not None:
        return
    if spec.image.base_os not in dict(release.image_os):
        yield error(
            ("image", "base_os"),
            f"vllm-ascend {release.version} ships no {spec.image.base_os} Dockerfile, so there is no "
            "base image to derive",
            f"use one of {', '.join(dict(release.image_os))}, or set image.base_image",
            "image",
        )


def _irq(spec: SiteSpec) -> Iterator[Finding]:
    t = spec.tuning
    if t.irq_affinity is not None and t.irqbalance == "enabled":
        yield error(
            ("tuning", "irqbalance"),
            f"irq_affinity {t.irq_affinity} pins NPU IRQs, and a running irqbalance moves them again",
            "remove irqbalance (pinning disables it) or drop irq_affinity",
            "tuning",
        )
