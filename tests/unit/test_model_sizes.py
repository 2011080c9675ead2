"""Model sizes against the pinned upstream config.json (tests/fixtures/models/deepseek-v3, see its README).

Parameters are counted here from config.json with the test's own formula and compared with the published
totals (671B main model, 11.5B unique MTP parameters, 685B on Hugging Face) and with what the planner sizes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.catalog import get_model
from orchestrator.planning import capacity as cap

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "models" / "deepseek-v3"
DEEPSEEK = ["DeepSeek-V3", "DeepSeek-V3.1", "DeepSeek-R1", "DeepSeek-R1-0528", "DeepSeek-R1-W8A8"]


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURE / "config.json").read_text(encoding="utf-8"))
    return data


def count(c: dict[str, Any]) -> dict[str, float]:
    """Parameters (billions) of DeepSeek-V3 by part, from config.json alone."""
    h, v = c["hidden_size"], c["vocab_size"]
    heads, nope, rope, vdim = (
        c["num_attention_heads"],
        c["qk_nope_head_dim"],
        c["qk_rope_head_dim"],
        c["v_head_dim"],
    )
    q, kv = c["q_lora_rank"], c["kv_lora_rank"]
    attn = (
        h * q
        + q
        + q * heads * (nope + rope)
        + h * (kv + rope)
        + kv
        + kv * heads * (nope + vdim)
        + heads * vdim * h
    )
    experts = c["n_routed_experts"] * 3 * h * c["moe_intermediate_size"]
    moe = (
        experts + c["n_shared_experts"] * 3 * h * c["moe_intermediate_size"] + c["n_routed_experts"] * (h + 1)
    )
    dense_mlp = 3 * h * c["intermediate_size"]
    k, layers = c["first_k_dense_replace"], c["num_hidden_layers"]
    embed = v * h * (1 if c["tie_word_embeddings"] else 2)
    main = k * (attn + dense_mlp + 2 * h) + (layers - k) * (attn + moe + 2 * h) + embed + h
    mtp_unique = c["num_nextn_predict_layers"] * (attn + moe + 2 * h + 2 * h * h + 3 * h)
    return {
        "main": main / 1e9,
        "experts": (layers - k) * experts / 1e9,
        "embed": embed / 1e9,
        "mtp_unique": mtp_unique / 1e9,
        "mtp": (mtp_unique + embed) / 1e9,
        "mtp_experts": c["num_nextn_predict_layers"] * experts / 1e9,
    }


def test_the_formula_reproduces_the_published_totals(config: dict[str, Any]) -> None:
    n = count(config)
    excerpt = (FIXTURE / "README_WEIGHTS_excerpt.md").read_text(encoding="utf-8")
    assert "Total parameters: **671B**" in excerpt and "**11.5B unique parameters**" in excerpt
    assert round(n["main"]) == 671 and round(n["mtp_unique"], 1) in (11.5, 11.6)
    assert round(n["main"] + n["mtp"]) in (684, 685)  # "685B ... 671B Main Model and 14B MTP"


@pytest.mark.parametrize("name", DEEPSEEK)
def test_catalog_architecture_is_the_config(name: str, config: dict[str, Any]) -> None:
    m = get_model(name)
    assert (m.hidden_size, m.layers, m.heads, m.kv_heads) == (
        config["hidden_size"],
        config["num_hidden_layers"],
        config["num_attention_heads"],
        config["num_key_value_heads"],
    )
    assert (m.n_routed_experts, m.experts_per_token, m.kv_lora_rank, m.qk_rope_head_dim) == (
        config["n_routed_experts"],
        config["num_experts_per_tok"],
        config["kv_lora_rank"],
        config["qk_rope_head_dim"],
    )
    assert (m.vocab_size, m.max_position_embeddings, m.mtp_layers) == (
        config["vocab_size"],
        config["max_position_embeddings"],
        config["num_nextn_predict_layers"],
    )
    n = count(config)
    assert m.params_b == pytest.approx(n["main"], rel=1e-3)
    assert m.expert_params_b == pytest.approx(n["experts"], rel=1e-3)
    assert m.embedding_params_b == pytest.approx(n["embed"], rel=1e-6)
    assert m.mtp_params_b == pytest.approx(n["mtp"], rel=1e-3)
    assert m.mtp_expert_params_b == pytest.approx(n["mtp_experts"], rel=1e-3)


def test_checkpoint_size_counts_mtp_and_bf16_embeddings(config: dict[str, Any]) -> None:
    n = count(config)
    total = n["main"] + n["mtp"]
    bf16 = get_model("DeepSeek-R1")
    assert cap.weight_bytes_total(bf16, "none") == pytest.approx(total * 2e9, rel=1e-3)
    # W8A8: experts and linear layers 1 byte, the embedding and head of the main model and of the MTP layer
    # stay BF16 (msmodelslim quant_model_description.json marks them FLOAT)
    w8a8 = get_model("DeepSeek-R1-W8A8")
    expected = (total - 2 * n["embed"]) * 1e9 + 2 * n["embed"] * 2e9
    assert cap.weight_bytes_total(w8a8, "w8a8") == pytest.approx(expected, rel=1e-3)
    w4a8 = (n["experts"] + n["mtp_experts"]) * 0.5e9 + (
        total - n["experts"] - n["mtp_experts"] - 2 * n["embed"]
    ) * 1e9
    assert cap.weight_bytes_total(w8a8, "w4a8") == pytest.approx(w4a8 + 2 * n["embed"] * 2e9, rel=1e-3)


def test_mtp_draft_weights_count_only_when_speculative_decoding_is_on(config: dict[str, Any]) -> None:
    n = count(config)
    arch = get_model("DeepSeek-R1-W8A8")
    off = cap.weight_gib_per_device(arch, "w8a8", cap.Layout(tp=4, pp=1, dp=4, ep=True))
    on = cap.weight_gib_per_device(arch, "w8a8", cap.Layout(tp=4, pp=1, dp=4, ep=True, mtp=True))
    # the draft layer: 16 of its 256 experts per device (EP 16), the rest (BF16 embedding/head) over TP 4
    draft_experts = n["mtp_experts"] * 1e9 * 16 / 256
    draft_rest = ((n["mtp"] - n["mtp_experts"] - n["embed"]) * 1e9 + n["embed"] * 2e9) / 4
    assert (on - off) * cap.GIB == pytest.approx(draft_experts + draft_rest, rel=1e-3)
    kv_off = cap.kv_bytes_per_token_per_device(arch, 2, cap.Layout(4, 1, 4, True))
    kv_on = cap.kv_bytes_per_token_per_device(arch, 2, cap.Layout(4, 1, 4, True, mtp=True))
    assert kv_on / kv_off == pytest.approx((config["num_hidden_layers"] + 1) / config["num_hidden_layers"])
