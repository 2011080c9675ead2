"""A tiny DeepSeek-shaped checkpoint for the simulated cluster: real safetensors shards of a chosen size.

``generate_checkpoint(out, total_bytes=64 << 20, arch="DeepSeek-V3", seed=0)`` writes what a Hugging Face
DeepSeek-V3 directory holds: ``config.json`` (the catalog architecture's real values: 61 layers, hidden 7168,
256 routed experts, MLA ranks, ..., ``torch_dtype`` bfloat16, no ``quantization_config``),
``generation_config.json``, ``tokenizer.json`` / ``tokenizer_config.json`` (small but valid),
``model-0000K-of-0000N.safetensors`` shards, ``model.safetensors.index.json`` (``metadata.total_size`` and
``weight_map``) and ``SHA256SUMS`` (``sha256sum`` format, sorted). W8A8/W4A8 catalog models (e.g.
"DeepSeek-R1-W8A8") add msmodelslim's ``quant_model_description.json`` and store their linear weights as
I8 with F32 ``weight_scale`` / ``weight_offset``, which ``--quantization ascend`` needs.

The tensors carry DeepSeek's names for every layer (``model.layers.0.self_attn.q_a_proj.weight``, dense MLPs
for the first 3 layers, routed + shared experts after, the MTP layer) but are scaled down: widths are
multiples of a unit chosen so the tensor bytes reach ``total_bytes`` (to within one embedding row), and
each MoE layer stores its first 8 experts only. Nothing here runs the model: the fake vLLM server checks the
files' structure and sizes and hashes their bytes. Bytes are deterministic for a given ``seed`` (another seed
gives other bytes, so another model content hash and other answers).

CLI: ``python -m ascend_sim.checkpoint OUT --size-mb 64 --seed 1 [--shards 2] [--arch DeepSeek-V3]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import struct
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ascend_sim.fake_vllm_image import PACKAGE_DIR
from orchestrator.catalog import ModelArch, get_model

# The fake server's tokenizer words (payloads/fake-vllm/fake_vllm/vocab.txt): tokenizer.json carries the same.
VOCAB: tuple[str, ...] = tuple(dict.fromkeys((PACKAGE_DIR / "vocab.txt").read_text(encoding="utf-8").split()))

MAX_EXPERTS = 8
MIN_VOCAB = 256
_DTYPE_BYTES = {"BF16": 2, "F32": 4, "I8": 1}
_CHUNK = 16 << 20
# High byte of each little-endian value -> exponent of a small float (|x| ~ 0.004..0.03), sign kept.
_SMALL_FLOAT = bytes((0x3C | (b & 1)) | (b & 0x80) for b in range(256))
_BAR = "\uff5c"  # DeepSeek's special tokens use FULLWIDTH VERTICAL LINE
_BOS, _EOS, _PAD = (
    f"<{_BAR}begin▁of▁sentence{_BAR}>",
    f"<{_BAR}end▁of▁sentence{_BAR}>",
    f"<{_BAR}▁pad▁{_BAR}>",
)
_USER, _ASSISTANT = f"<{_BAR}User{_BAR}>", f"<{_BAR}Assistant{_BAR}>"

# DeepSeek-V3 family constants not in the catalog (deepseek-ai/DeepSeek-V3 config.json).
_FAMILY: dict[str, Any] = json.loads("""{
  "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 0, "eos_token_id": 1, "ep_size": 1,
  "first_k_dense_replace": 3, "hidden_act": "silu", "initializer_range": 0.02, "intermediate_size": 18432,
  "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_group": 8, "n_shared_experts": 1,
  "norm_topk_prob": true, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "rms_norm_eps": 1e-06,
  "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                   "original_max_position_embeddings": 4096, "type": "yarn"},
  "rope_theta": 10000, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "tie_word_embeddings": false,
  "topk_group": 4, "topk_method": "noaux_tc", "transformers_version": "4.46.3", "use_cache": true}""")
_FIRST_DENSE = int(_FAMILY["first_k_dense_replace"])
_ARCHITECTURES = {"deepseek_v3": "DeepseekV3ForCausalLM", "deepseek_v32": "DeepseekV32ForCausalLM"}


@dataclass(frozen=True)
class _Tensor:
    name: str
    dtype: str
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * _DTYPE_BYTES[self.dtype]


def _arch(name: str) -> ModelArch:
    model = get_model(name)
    if model.family not in _ARCHITECTURES:
        raise ValueError(
            f"{model.name} is a {model.family} model; only DeepSeek V3-family checkpoints are made"
        )
    return model


def config_json(model: ModelArch) -> dict[str, Any]:
    """config.json of ``model``: the catalog's architecture values plus the family constants."""
    config: dict[str, Any] = {"architectures": [_ARCHITECTURES[model.family]], **_FAMILY}
    config.update(
        hidden_size=model.hidden_size,
        kv_lora_rank=model.kv_lora_rank,
        max_position_embeddings=model.max_position_embeddings,
        model_type=model.family,
        n_routed_experts=model.n_routed_experts,
        num_attention_heads=model.heads,
        num_experts_per_tok=model.experts_per_token,
        num_hidden_layers=model.layers,
        num_key_value_heads=model.kv_heads,
        num_nextn_predict_layers=model.mtp_layers,
        qk_rope_head_dim=model.qk_rope_head_dim,
        torch_dtype=model.default_dtype,
        v_head_dim=model.head_dim,
        vocab_size=model.vocab_size,
    )
    if model.family == "deepseek_v32":
        config.update(index_head_dim=128, index_n_heads=64, index_topk=2048)
    return dict(sorted(config.items()))


def _linear(name: str, out: int, inp: int, quantized: bool) -> list[_Tensor]:
    if not quantized:
        return [_Tensor(name + ".weight", "BF16", (out, inp))]
    return [
        _Tensor(name + ".weight", "I8", (out, inp)),
        _Tensor(name + ".weight_scale", "F32", (out, 1)),
        _Tensor(name + ".weight_offset", "F32", (out, 1)),
    ]


def _tensors(model: ModelArch, w: int, vocab: int) -> list[_Tensor]:
    """Every tensor, in file order, for width unit ``w`` and ``vocab`` embedding rows."""
    q = model.quantization != "none"
    hidden, q_lora, kv_lora, nope, rope, v, heads = 16 * w, 4 * w, 2 * w, 2 * w, w, 2 * w, 4
    inter, moe_inter, experts = 8 * w, 4 * w, min(model.n_routed_experts, MAX_EXPERTS)
    out = [_Tensor("model.embed_tokens.weight", "BF16", (vocab, hidden))]
    for i in range(model.layers + model.mtp_layers):
        p = f"model.layers.{i}"
        out.append(_Tensor(f"{p}.input_layernorm.weight", "BF16", (hidden,)))
        out += _linear(f"{p}.self_attn.q_a_proj", q_lora, hidden, q)
        out.append(_Tensor(f"{p}.self_attn.q_a_layernorm.weight", "BF16", (q_lora,)))
        out += _linear(f"{p}.self_attn.q_b_proj", heads * (nope + rope), q_lora, q)
        out += _linear(f"{p}.self_attn.kv_a_proj_with_mqa", kv_lora + rope, hidden, q)
        out.append(_Tensor(f"{p}.self_attn.kv_a_layernorm.weight", "BF16", (kv_lora,)))
        out += _linear(f"{p}.self_attn.kv_b_proj", heads * (nope + v), kv_lora, q)
        out += _linear(f"{p}.self_attn.o_proj", hidden, heads * v, q)
        if model.family == "deepseek_v32":
            ix = f"{p}.self_attn.indexer"
            out += [
                _Tensor(f"{ix}.wq_b.weight", "BF16", (4 * 2 * w, q_lora)),
                _Tensor(f"{ix}.wk.weight", "BF16", (2 * w, hidden)),
                _Tensor(f"{ix}.k_norm.weight", "BF16", (2 * w,)),
                _Tensor(f"{ix}.k_norm.bias", "BF16", (2 * w,)),
                _Tensor(f"{ix}.weights_proj.weight", "BF16", (4, hidden)),
            ]
        out.append(_Tensor(f"{p}.post_attention_layernorm.weight", "BF16", (hidden,)))
        if i < _FIRST_DENSE:
            for proj, shape in (
                ("gate_proj", (inter, hidden)),
                ("up_proj", (inter, hidden)),
                ("down_proj", (hidden, inter)),
            ):
                out += _linear(f"{p}.mlp.{proj}", *shape, q)
        else:
            out.append(_Tensor(f"{p}.mlp.gate.weight", "BF16", (experts, hidden)))
            out.append(_Tensor(f"{p}.mlp.gate.e_score_correction_bias", "F32", (experts,)))
            for expert in [*(f"experts.{e}" for e in range(experts)), "shared_experts"]:
                for proj, shape in (
                    ("gate_proj", (moe_inter, hidden)),
                    ("up_proj", (moe_inter, hidden)),
                    ("down_proj", (hidden, moe_inter)),
                ):
                    out += _linear(f"{p}.mlp.{expert}.{proj}", *shape, q)
        if i >= model.layers:  # multi-token-prediction layer
            out += [
                _Tensor(f"{p}.enorm.weight", "BF16", (hidden,)),
                _Tensor(f"{p}.hnorm.weight", "BF16", (hidden,)),
                _Tensor(f"{p}.eh_proj.weight", "BF16", (hidden, 2 * hidden)),
                _Tensor(f"{p}.embed_tokens.weight", "BF16", (vocab, hidden)),
                _Tensor(f"{p}.shared_head.norm.weight", "BF16", (hidden,)),
                _Tensor(f"{p}.shared_head.head.weight", "BF16", (vocab, hidden)),
            ]
    out += [
        _Tensor("model.norm.weight", "BF16", (hidden,)),
        _Tensor("lm_head.weight", "BF16", (vocab, hidden)),
    ]
    return out


def _plan(model: ModelArch, total_bytes: int) -> list[_Tensor]:
    """The widest layout whose tensors fit ``total_bytes``, the rest filled with embedding rows."""
    vocab_tensors = 2 + 2 * model.mtp_layers

    def size(w: int) -> int:
        return sum(t.nbytes for t in _tensors(model, w, MIN_VOCAB))

    if size(1) > total_bytes:
        raise ValueError(
            f"total_bytes {total_bytes} is below the smallest {model.name} layout ({size(1)} bytes)"
        )
    lo, hi = 1, 2
    while size(hi) <= total_bytes:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if size(mid) <= total_bytes else (lo, mid)
    row_bytes = vocab_tensors * 16 * lo * 2
    return _tensors(model, lo, MIN_VOCAB + (total_bytes - size(lo)) // row_bytes)


def _tensor_bytes(tensor: _Tensor, seed: int) -> Iterator[bytes]:
    """Deterministic bytes of one tensor (chunks), small finite floats for BF16/F32."""
    rng = random.Random(f"{seed}:{tensor.name}")
    step = _DTYPE_BYTES[tensor.dtype]
    left = tensor.nbytes
    while left:
        n = min(left, _CHUNK)
        chunk = bytearray(rng.randbytes(n))
        if tensor.dtype != "I8":
            chunk[step - 1 :: step] = chunk[step - 1 :: step].translate(_SMALL_FLOAT)
        left -= n
        yield bytes(chunk)


def _write_shard(path: Path, tensors: list[_Tensor], seed: int) -> None:
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for t in tensors:
        header[t.name] = {
            "dtype": t.dtype,
            "shape": list(t.shape),
            "data_offsets": [offset, offset + t.nbytes],
        }
        offset += t.nbytes
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with path.open("wb") as fh:
        fh.write(struct.pack("<Q", len(raw)) + raw)
        for t in tensors:
            for chunk in _tensor_bytes(t, seed):
                fh.write(chunk)


def _split(tensors: list[_Tensor], shards: int) -> list[list[_Tensor]]:
    total = sum(t.nbytes for t in tensors)
    groups: list[list[_Tensor]] = [[] for _ in range(shards)]
    done = 0
    for t in tensors:
        groups[min(shards - 1, done * shards // max(total, 1))].append(t)
        done += t.nbytes
    if any(not g for g in groups):
        raise ValueError(
            f"cannot spread {len(tensors)} tensors of {total} bytes over {shards} non-empty shards"
        )
    return groups


def _tokenizer_files(model: ModelArch) -> dict[str, Any]:
    specials = [_BOS, _EOS, _PAD]
    added = [
        {
            "id": i,
            "content": c,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": True,
            "special": True,
        }
        for i, c in enumerate(specials)
    ]
    vocab = {tok: i for i, tok in enumerate([*specials, *VOCAB])}
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": _PAD},
    }
    template = (
        "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}"
        f"{{{{ '{_USER}' + message['content'] }}}}{{% elif message['role'] == 'assistant' %}}"
        f"{{{{ '{_ASSISTANT}' + message['content'] + eos_token }}}}{{% else %}}{{{{ message['content'] }}}}"
        f"{{% endif %}}{{% endfor %}}{{% if add_generation_prompt %}}{{{{ '{_ASSISTANT}' }}}}{{% endif %}}"
    )
    tokenizer_config = {
        "add_bos_token": True,
        "add_eos_token": False,
        "bos_token": _BOS,
        "eos_token": _EOS,
        "pad_token": _PAD,
        "clean_up_tokenization_spaces": False,
        "legacy": True,
        "model_max_length": model.max_position_embeddings,
        "sp_model_kwargs": {},
        "tokenizer_class": "LlamaTokenizerFast",
        "unk_token": None,
        "chat_template": template,
    }
    generation = {
        "_from_model_config": True,
        "bos_token_id": 0,
        "eos_token_id": 1,
        "do_sample": True,
        "temperature": 0.6,
        "top_p": 0.95,
        "transformers_version": "4.46.3",
    }
    return {
        "tokenizer.json": tokenizer,
        "tokenizer_config.json": tokenizer_config,
        "generation_config.json": generation,
    }


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def generate_checkpoint(
    out_dir: Path, *, total_bytes: int, shards: int = 2, arch: str = "DeepSeek-V3", seed: int = 0
) -> Path:
    """Write the checkpoint into ``out_dir`` (created; earlier shards removed) and return ``out_dir``."""
    if shards < 1:
        raise ValueError(f"shards must be >= 1, got {shards}")
    model = _arch(arch)
    tensors = _plan(model, total_bytes)
    groups = _split(tensors, shards)
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in out_dir.glob("model-*-of-*.safetensors"):
        stale.unlink()
    weight_map: dict[str, str] = {}
    for k, group in enumerate(groups, start=1):
        name = f"model-{k:05d}-of-{shards:05d}.safetensors"
        _write_shard(out_dir / name, group, seed)
        weight_map.update((t.name, name) for t in group)
    files: dict[str, Any] = {
        "config.json": config_json(model),
        "model.safetensors.index.json": {
            "metadata": {"total_size": sum(t.nbytes for t in tensors)},
            "weight_map": dict(sorted(weight_map.items())),
        },
        **_tokenizer_files(model),
    }
    if model.quantization != "none":
        kind = f"{model.quantization.upper()}_DYNAMIC"
        files["quant_model_description.json"] = {
            "model_quant_type": kind,
            "version": "1.0.0",
            **{t.name: kind if t.dtype == "I8" or ".weight_" in t.name else "FLOAT" for t in tensors},
        }
    else:
        (out_dir / "quant_model_description.json").unlink(missing_ok=True)
    for name, data in files.items():
        (out_dir / name).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    sums = sorted(p.name for p in out_dir.iterdir() if p.is_file() and p.name != "SHA256SUMS")
    (out_dir / "SHA256SUMS").write_text(
        "".join(f"{_sha256(out_dir / n)}  {n}\n" for n in sums), encoding="utf-8"
    )
    return out_dir


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ascend_sim.checkpoint", description=__doc__.split("\n")[0]
    )
    parser.add_argument("out", type=Path, help="output directory")
    parser.add_argument("--size-mb", type=float, default=64.0, help="tensor bytes in MiB (default 64)")
    parser.add_argument("--seed", type=int, default=0, help="content seed (default 0)")
    parser.add_argument("--shards", type=int, default=2, help="number of safetensors shards (default 2)")
    parser.add_argument("--arch", default="DeepSeek-V3", help="catalog model (default DeepSeek-V3)")
    args = parser.parse_args(argv)
    try:
        out = generate_checkpoint(
            args.out,
            total_bytes=int(args.size_mb * (1 << 20)),
            shards=args.shards,
            arch=args.arch,
            seed=args.seed,
        )
    except (ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    index = json.loads((out / "model.safetensors.index.json").read_text(encoding="utf-8"))
    shards = sorted(set(index["weight_map"].values()))
    total = index["metadata"]["total_size"]
    print(f"{out}: {args.arch} checkpoint, {len(shards)} shard(s), {total} tensor bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
