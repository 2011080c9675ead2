"""A custom model.architecture becomes a catalog row: every fact the spec gives, the rest derived or unknown
(active parameters = total - routed experts; head_dim = hidden_size / heads when not given; no vocabulary,
expert counts or MTP layers are known, so they are zero)."""

from __future__ import annotations

from orchestrator.catalog import ModelArch
from orchestrator.planning.resolve import resolve_model
from orchestrator.spec.model import CustomArchitecture, Model


def test_a_custom_moe_architecture_is_turned_into_a_catalog_row() -> None:
    custom = CustomArchitecture(
        family="deepseek_v3",
        params_b=100.0,
        expert_params_b=80.0,
        layers=30,
        hidden_size=4096,
        heads=32,
        kv_heads=32,
        moe=True,
        attention="mla",
        kv_lora_rank=512,
        qk_rope_head_dim=64,
        max_position_embeddings=65536,
        default_dtype="float16",
    )
    model = Model(name="my-moe-100b", weights_path="/data/models/my-moe", architecture=custom)
    assert resolve_model(model) == ModelArch(
        name="my-moe-100b",
        hf_repo="",
        family="deepseek_v3",
        params_b=100.0,
        expert_params_b=80.0,
        active_params_b=20.0,  # 100 - 80
        layers=30,
        hidden_size=4096,
        heads=32,
        kv_heads=32,
        head_dim=128,  # 4096 / 32
        moe=True,
        n_routed_experts=0,
        experts_per_token=0,
        attention="mla",
        kv_lora_rank=512,
        qk_rope_head_dim=64,
        vocab_size=0,
        max_position_embeddings=65536,
        default_dtype="float16",
        quantization="none",
        mtp_layers=0,
        mtp_params_b=0.0,
        mtp_expert_params_b=0.0,
    )


def test_an_explicit_head_dim_wins() -> None:
    custom = CustomArchitecture(params_b=7.0, layers=28, hidden_size=3584, heads=28, kv_heads=4, head_dim=96)
    arch = resolve_model(Model(name="my-7b", weights_path="/data/models/my-7b", architecture=custom))
    assert (arch.head_dim, arch.active_params_b, arch.max_position_embeddings) == (96, 7.0, 32768)
