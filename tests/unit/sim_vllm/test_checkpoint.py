"""The tiny DeepSeek-shaped checkpoint: real safetensors, index, config, tokenizer, checksums, determinism."""

from __future__ import annotations

import hashlib
import json
import math
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from ascend_sim.checkpoint import generate_checkpoint
from fake_vllm.model import content_hash, inspect_model

SIZES = {"BF16": 2, "F32": 4, "I8": 1}
UPSTREAM = Path(__file__).resolve().parents[2] / "fixtures" / "models" / "deepseek-v3"


def read_safetensors(path: Path) -> dict[str, dict[str, object]]:
    """Parse a shard by the format's definition and check every tensor's bytes are where the header says."""
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    assert n % 8 == 0
    header = json.loads(raw[8 : 8 + n])
    assert header.pop("__metadata__") == {"format": "pt"}
    end = 0
    for name, info in header.items():
        begin, stop = info["data_offsets"]
        assert begin == end, f"{name} is not contiguous"
        assert stop - begin == math.prod(info["shape"]) * SIZES[info["dtype"]]
        end = stop
    assert len(raw) == 8 + n + end
    return dict(header)


def test_layout_and_formats(checkpoints: dict[str, Path]) -> None:
    ckpt = checkpoints["a"]
    names = sorted(p.name for p in ckpt.iterdir())
    assert names == [
        "SHA256SUMS",
        "config.json",
        "generation_config.json",
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
        "model.safetensors.index.json",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    index = json.loads((ckpt / "model.safetensors.index.json").read_text())
    tensors = {}
    for shard in ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"):
        header = read_safetensors(ckpt / shard)
        assert all(index["weight_map"][t] == shard for t in header)
        tensors.update(header)
    assert set(index["weight_map"]) == set(tensors)
    total = sum(math.prod(i["shape"]) * SIZES[i["dtype"]] for i in tensors.values())  # type: ignore[index]
    assert index["metadata"]["total_size"] == total
    assert (2 << 20) - 4096 < total <= 2 << 20
    assert "model.layers.0.self_attn.q_a_proj.weight" in tensors
    assert "model.layers.3.mlp.experts.7.down_proj.weight" in tensors
    assert "model.layers.61.eh_proj.weight" in tensors  # the MTP layer
    assert {i["dtype"] for i in tensors.values()} == {"BF16", "F32"}  # type: ignore[index]
    sums = (ckpt / "SHA256SUMS").read_text().splitlines()
    assert [ln.split("  ")[1] for ln in sums] == sorted(n for n in names if n != "SHA256SUMS")
    for line in sums:
        digest, name = line.split("  ")
        assert hashlib.sha256((ckpt / name).read_bytes()).hexdigest() == digest


def test_config_is_deepseek_v3(checkpoints: dict[str, Path]) -> None:
    config = json.loads((checkpoints["a"] / "config.json").read_text())
    # the real deepseek-ai/DeepSeek-V3 config.json, pinned (tests/fixtures/models/deepseek-v3/README.md)
    upstream = json.loads((UPSTREAM / "config.json").read_text(encoding="utf-8"))
    assert config["architectures"] == upstream["architectures"] == ["DeepseekV3ForCausalLM"]
    assert config["model_type"] == upstream["model_type"]
    assert config["torch_dtype"] == upstream["torch_dtype"]
    assert "quantization_config" not in config  # the FP8 original's; the sim writes a BF16 conversion
    for key in (
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "n_routed_experts",
        "kv_lora_rank",
        "qk_rope_head_dim",
        "v_head_dim",
        "vocab_size",
        "max_position_embeddings",
    ):
        assert config[key] == upstream[key], key
    tok = json.loads((checkpoints["a"] / "tokenizer.json").read_text())
    assert tok["model"]["type"] == "WordLevel" and len(tok["model"]["vocab"]) > 100
    assert "chat_template" in json.loads((checkpoints["a"] / "tokenizer_config.json").read_text())
    assert json.loads((checkpoints["a"] / "generation_config.json").read_text())["eos_token_id"] == 1


def test_deterministic_per_seed(tmp_path: Path, checkpoints: dict[str, Path]) -> None:
    again = generate_checkpoint(tmp_path / "again", total_bytes=2 << 20, seed=0)
    assert (again / "SHA256SUMS").read_text() == (checkpoints["a"] / "SHA256SUMS").read_text()
    hashes = {k: content_hash(inspect_model(str(p), None)) for k, p in checkpoints.items()}
    assert hashes["a"] != hashes["b"]
    assert content_hash(inspect_model(str(again), None)) == hashes["a"]


def test_w8a8_has_quant_description(tmp_path: Path) -> None:
    ckpt = generate_checkpoint(tmp_path / "q", total_bytes=1 << 20, shards=1, arch="DeepSeek-R1-W8A8")
    desc = json.loads((ckpt / "quant_model_description.json").read_text())
    assert desc["model_quant_type"] == "W8A8_DYNAMIC"
    assert desc["model.layers.0.self_attn.q_a_proj.weight"] == "W8A8_DYNAMIC"
    assert desc["model.embed_tokens.weight"] == "FLOAT"
    header = read_safetensors(ckpt / "model-00001-of-00001.safetensors")
    assert header["model.layers.0.self_attn.q_a_proj.weight"]["dtype"] == "I8"  # type: ignore[index]
    assert inspect_model(str(ckpt), "ascend").tensor_bytes > 0


def test_rejects_impossible_requests(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="below the smallest"):
        generate_checkpoint(tmp_path / "x", total_bytes=1000)
    with pytest.raises(ValueError, match="only DeepSeek"):
        generate_checkpoint(tmp_path / "x", total_bytes=1 << 20, arch="DeepSeek-R1-Distill-Qwen-7B")


def test_cli(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "ascend_sim.checkpoint",
            str(tmp_path / "m"),
            "--size-mb",
            "1",
            "--seed",
            "1",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    index = json.loads((tmp_path / "m" / "model.safetensors.index.json").read_text())
    shards = len(set(index["weight_map"].values()))
    assert f"{shards} shard(s), {index['metadata']['total_size']} tensor bytes" in out.stdout
