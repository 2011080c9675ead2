"""Resolve spec references against the catalog: profiles -> chip facts, model -> architecture."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.catalog import ChipFacts, ModelArch, get_chip, get_model
from orchestrator.spec.hardware import HardwareProfile
from orchestrator.spec.model import Model
from orchestrator.spec.parallelism import Parallelism
from orchestrator.spec.serving import Replica, Serving


@dataclass(frozen=True)
class ResolvedProfile:
    name: str
    chip: ChipFacts
    cards: int
    devices_per_card: int
    hbm_gib: int

    @property
    def devices(self) -> int:
        return self.cards * self.devices_per_card

    @property
    def usable_gib(self) -> float:
        """Memory one process can allocate per device (catalog), the base of the capacity budget."""
        return self.chip.usable_gib(self.hbm_gib)

    def describe(self) -> str:
        return f"{self.chip.product} ({self.devices} x {self.hbm_gib} GB)"


def resolve_profile(name: str, profile: HardwareProfile) -> ResolvedProfile:
    chip = get_chip(profile.chip)
    return ResolvedProfile(
        name=name,
        chip=chip,
        cards=profile.cards,
        devices_per_card=profile.devices_per_card or chip.devices_per_card_default,
        hbm_gib=profile.hbm_gb or chip.hbm_gb_default,
    )


def lookup_model(model: Model) -> ModelArch | None:
    """The catalog entry for the model name, or None for a custom model."""
    try:
        return get_model(model.name)
    except KeyError:
        return None


def resolve_model(model: Model) -> ModelArch:
    """Architecture facts of the model: the catalog entry, or the custom block turned into one."""
    entry = lookup_model(model)
    if entry is not None:
        return entry
    arch = model.architecture
    if arch is None:
        raise KeyError(model.name)
    head_dim = arch.head_dim or arch.hidden_size // arch.heads
    return ModelArch(
        name=model.name,
        hf_repo="",
        family=arch.family,
        params_b=arch.params_b,
        expert_params_b=arch.expert_params_b,
        active_params_b=arch.params_b - arch.expert_params_b,
        layers=arch.layers,
        hidden_size=arch.hidden_size,
        heads=arch.heads,
        kv_heads=arch.kv_heads,
        head_dim=head_dim,
        moe=arch.moe,
        n_routed_experts=0,
        experts_per_token=0,
        attention=arch.attention,
        kv_lora_rank=arch.kv_lora_rank,
        qk_rope_head_dim=arch.qk_rope_head_dim,
        vocab_size=0,
        max_position_embeddings=arch.max_position_embeddings,
        default_dtype=arch.default_dtype,
        quantization="none",
        mtp_layers=0,
        mtp_params_b=0.0,
        mtp_expert_params_b=0.0,
    )


def effective_quantization(model: Model, arch: ModelArch) -> str:
    return model.quantization or arch.quantization


def effective_dtype(model: Model, arch: ModelArch, chip: ChipFacts) -> str:
    if model.dtype != "auto":
        return model.dtype
    if arch.default_dtype == "bfloat16" and not chip.supports_bf16:
        return "float16"
    return arch.default_dtype


def effective_parallelism(serving: Serving, replica: Replica) -> Parallelism:
    return replica.parallelism or serving.parallelism


def served_name(model: Model) -> str:
    return model.served_name or model.name
