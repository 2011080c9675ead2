"""Model architectures (DeepSeek V3/V3.1/V3.2/R1 and the R1 distills) — data/models.yaml."""

from __future__ import annotations

import difflib
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from orchestrator.catalog._data import CatalogDataError, Confidence, Row, load, rows

Attention = Literal["mla", "gqa"]
DType = Literal["bfloat16", "float16"]
Quantization = Literal["none", "w8a8", "w4a8"]
MODEL_FAMILIES = ("deepseek_v3", "deepseek_v32", "qwen2", "llama")
QUANTIZATIONS: tuple[Quantization, ...] = ("none", "w8a8", "w4a8")
_FILE = "models.yaml"


@dataclass(frozen=True)
class ModelArch:
    """Architecture facts used for capacity and parallelism planning."""

    name: str
    hf_repo: str
    family: str
    params_b: float
    expert_params_b: float
    active_params_b: float
    layers: int
    hidden_size: int
    heads: int
    kv_heads: int
    head_dim: int
    moe: bool
    n_routed_experts: int
    experts_per_token: int
    attention: Attention
    kv_lora_rank: int
    qk_rope_head_dim: int
    vocab_size: int
    max_position_embeddings: int
    default_dtype: DType
    quantization: Quantization
    mtp_layers: int
    mtp_params_b: float = 0.0
    mtp_expert_params_b: float = 0.0
    hub: Literal["huggingface", "modelscope"] = "huggingface"
    confidence: Confidence = "sourced"

    @property
    def dense_params_b(self) -> float:
        """Parameters every rank holds under expert parallelism (attention, dense MLPs, embeddings, ...)."""
        return self.params_b - self.expert_params_b

    @property
    def embedding_params_b(self) -> float:
        """Input embedding plus output head (untied): 2 x vocab_size x hidden_size, in billions."""
        return 2 * self.vocab_size * self.hidden_size / 1e9

    @property
    def checkpoint_params_b(self) -> float:
        """Parameters stored in the checkpoint: the main model plus its MTP layers (DeepSeek-R1: 684.5B)."""
        return self.params_b + self.mtp_params_b

    def kv_bytes_per_token(self, dtype_bytes: int) -> int:
        """KV-cache bytes one token occupies in the whole model (all layers, before any TP split).

        MLA caches the compressed latent plus the rope key once per layer: layers * (kv_lora_rank +
        qk_rope_head_dim) * dtype_bytes. GQA caches K and V per KV head: 2 * layers * kv_heads * head_dim *
        dtype_bytes. MTP layers and DeepSeek-V3.2's indexer key cache are not included.
        """
        if dtype_bytes not in (1, 2, 4):
            raise ValueError(f"dtype_bytes must be 1, 2 or 4, got {dtype_bytes}")
        if self.attention == "mla":
            return self.layers * (self.kv_lora_rank + self.qk_rope_head_dim) * dtype_bytes
        return 2 * self.layers * self.kv_heads * self.head_dim * dtype_bytes


def _check(row: Row, m: ModelArch) -> None:
    if m.family not in MODEL_FAMILIES:
        raise row.error(f"family must be one of {', '.join(MODEL_FAMILIES)}; got {m.family!r}")
    if m.active_params_b > m.params_b or m.expert_params_b >= m.params_b:
        raise row.error("active_params_b and expert_params_b must be below params_b")
    if (
        m.moe != (m.n_routed_experts > 0)
        or m.moe != (m.experts_per_token > 0)
        or m.moe != (m.expert_params_b > 0)
    ):
        raise row.error(
            "moe, n_routed_experts, experts_per_token and expert_params_b disagree (all zero if dense)"
        )
    if m.moe and m.experts_per_token > m.n_routed_experts:
        raise row.error("experts_per_token exceeds n_routed_experts")
    if not m.moe and m.active_params_b != m.params_b:
        raise row.error("a dense model activates all parameters: active_params_b must equal params_b")
    if (m.attention == "mla") != (m.kv_lora_rank > 0 and m.qk_rope_head_dim > 0):
        raise row.error("attention 'mla' requires kv_lora_rank and qk_rope_head_dim > 0 (and 'gqa' both 0)")
    if (m.mtp_layers > 0) != (m.mtp_params_b > 0) or not 0 <= m.mtp_expert_params_b < max(
        m.mtp_params_b, 1e-9
    ):
        raise row.error("mtp_layers, mtp_params_b and mtp_expert_params_b disagree (all zero without MTP)")
    if m.embedding_params_b >= m.params_b - m.expert_params_b:
        raise row.error("2 x vocab_size x hidden_size exceeds the non-expert parameters")
    if m.heads % m.kv_heads:
        raise row.error(f"heads {m.heads} is not a multiple of kv_heads {m.kv_heads}")
    if m.attention == "gqa" and m.heads * m.head_dim != m.hidden_size:
        raise row.error(f"gqa head_dim {m.head_dim} x heads {m.heads} != hidden_size {m.hidden_size}")


def _model(row: Row) -> ModelArch:
    model = ModelArch(
        name=row.text("name"),
        hf_repo=row.text("hf_repo"),
        family=row.text("family"),
        params_b=row.number("params_b", minimum=0.001),
        expert_params_b=row.number("expert_params_b", minimum=0.0),
        active_params_b=row.number("active_params_b", minimum=0.001),
        layers=row.integer("layers", minimum=1),
        hidden_size=row.integer("hidden_size", minimum=1),
        heads=row.integer("heads", minimum=1),
        kv_heads=row.integer("kv_heads", minimum=1),
        head_dim=row.integer("head_dim", minimum=1),
        moe=row.flag("moe"),
        n_routed_experts=row.integer("n_routed_experts", minimum=0),
        experts_per_token=row.integer("experts_per_token", minimum=0),
        attention=cast(Attention, row.choice("attention", ("mla", "gqa"))),
        kv_lora_rank=row.integer("kv_lora_rank", minimum=0),
        qk_rope_head_dim=row.integer("qk_rope_head_dim", minimum=0),
        vocab_size=row.integer("vocab_size", minimum=1),
        max_position_embeddings=row.integer("max_position_embeddings", minimum=1),
        default_dtype=cast(DType, row.choice("default_dtype", ("bfloat16", "float16"))),
        quantization=cast(Quantization, row.choice("quantization", QUANTIZATIONS)),
        mtp_layers=row.integer("mtp_layers", minimum=0),
        mtp_params_b=row.number("mtp_params_b", minimum=0.0),
        mtp_expert_params_b=row.number("mtp_expert_params_b", minimum=0.0),
        hub=cast(Literal["huggingface", "modelscope"], row.choice("hub", ("huggingface", "modelscope"))),
        confidence=row.confidence(),
    )
    row.done()
    _check(row, model)
    return model


def validate_models(data: Mapping[str, Any], filename: str = _FILE) -> dict[str, ModelArch]:
    """Check a parsed models file and build the table; CatalogDataError (a ValueError) names the bad row."""
    table: dict[str, ModelArch] = {}
    for row in rows(data, "models", filename):
        model = _model(row)
        if model.name.lower() in table:
            raise row.error(f"duplicate model name {model.name!r}")
        table[model.name.lower()] = model
    return table


@functools.cache
def _table() -> dict[str, ModelArch]:
    return validate_models(load(_FILE))


def get_model(name: str) -> ModelArch:
    """The model by catalog name or repository id, case-insensitive; KeyError when unknown.

    ``get_model("deepseek-r1-w8a8")``, ``get_model("vllm-ascend/DeepSeek-R1-W8A8")``.
    """
    key = name.strip().lower()
    table = _table()
    model = table.get(key)
    if model is None:
        model = next((m for m in table.values() if m.hf_repo.lower() == key), None)
    if model is None:
        names = [m.name for m in table.values()]
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise KeyError(f"unknown model {name!r}; {hint}known models: {', '.join(names)}")
    return model


if TYPE_CHECKING:
    MODEL_NAMES: tuple[str, ...]


def __getattr__(name: str) -> object:
    # Lazy module constants (PEP 562): the data file is read on first use, not at import.
    if name == "MODEL_NAMES":
        return tuple(m.name for m in _table().values())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "MODEL_FAMILIES",
    "MODEL_NAMES",
    "QUANTIZATIONS",
    "CatalogDataError",
    "ModelArch",
    "get_model",
    "validate_models",
]
