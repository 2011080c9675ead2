"""Model directory checks and the weights' content hash.

What the real loader needs must be there: ``config.json`` (valid JSON), ``quant_model_description.json``
when ``--quantization ascend`` is given (vllm-ascend reads it), ``model.safetensors.index.json`` (or a single
``model.safetensors``) and every shard it names, each a well-formed safetensors file whose size matches its
header's declared tensor sizes and which holds the tensors the index maps to it. Failures carry the
exception type and message vLLM / safetensors / transformers print for the same problem.

The content hash is sha256 over the shards' own sha256 digests (``"<file>:<hex>\\n"`` sorted by file name):
different weights give a different hash, the same weights the same hash wherever they are stored.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import loader, vlog

INDEX = "model.safetensors.index.json"
QUANT_DESCRIPTION = "quant_model_description.json"
DTYPE_BYTES = {
    "BOOL": 1,
    "U8": 1,
    "I8": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "I16": 2,
    "U16": 2,
    "F16": 2,
    "BF16": 2,
    "I32": 4,
    "U32": 4,
    "F32": 4,
    "I64": 8,
    "U64": 8,
    "F64": 8,
}
_CHUNK = 8 << 20


class ModelError(Exception):
    """A model directory problem: ``exc_type`` is what vLLM's traceback would end with."""

    where = "vllm/vllm/model_executor/model_loader/default_loader.py"

    def __init__(self, exc_type: str, message: str) -> None:
        super().__init__(message)
        self.exc_type = exc_type
        self.message = message


@dataclass(frozen=True)
class Shard:
    path: Path
    file_bytes: int
    tensor_bytes: int
    tensors: frozenset[str]


@dataclass(frozen=True)
class ModelLayout:
    path: Path
    config: dict[str, Any]
    shards: tuple[Shard, ...]
    declared_total: int | None

    @property
    def file_bytes(self) -> int:
        return sum(s.file_bytes for s in self.shards)

    @property
    def tensor_bytes(self) -> int:
        return sum(s.tensor_bytes for s in self.shards)

    @property
    def max_position_embeddings(self) -> int | None:
        value = self.config.get("max_position_embeddings")
        return value if isinstance(value, int) else None


def _invalid_repo(model: str) -> ModelError:
    return ModelError(
        "ValueError",
        f"Invalid repository ID or local directory specified: '{model}'.\n"
        "Please verify the following requirements:\n"
        "1. Provide a valid Hugging Face repository ID.\n"
        "2. Specify a local directory that contains a recognized configuration file.\n"
        "   - For Hugging Face models: ensure the presence of a 'config.json'.\n"
        "   - For Mistral models: ensure the presence of a 'params.json'.\n",
    )


def _safetensors_error(kind: str) -> ModelError:
    return ModelError("safetensors_rust.SafetensorError", f"Error while deserializing header: {kind}")


def read_shard(path: Path) -> Shard:
    """Check one safetensors file against its own header (size, offsets, dtypes)."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise _safetensors_error("HeaderTooSmall")
            (n,) = struct.unpack("<Q", head)
            if n > 100_000_000 or 8 + n > size:
                raise _safetensors_error("InvalidHeaderLength")
            raw = fh.read(n)
    except FileNotFoundError:
        raise ModelError("FileNotFoundError", f"[Errno 2] No such file or directory: '{path}'") from None
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise _safetensors_error("InvalidHeaderDeserialization") from None
    if not isinstance(header, dict):
        raise _safetensors_error("InvalidHeaderDeserialization")
    end = 0
    total = 0
    names: set[str] = set()
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (begin, stop) = info["dtype"], info["shape"], info["data_offsets"]
            expected = math.prod(int(d) for d in shape) * DTYPE_BYTES[dtype]
        except (KeyError, TypeError, ValueError):
            raise _safetensors_error("InvalidHeaderDeserialization") from None
        if stop - begin != expected or begin < 0:
            raise ModelError(
                "safetensors_rust.SafetensorError",
                f"Error while deserializing header: TensorInvalidInfo (tensor {name})",
            )
        end = max(end, stop)
        total += expected
        names.add(name)
    if 8 + n + end != size:
        raise _safetensors_error("MetadataIncompleteBuffer")
    return Shard(path=path, file_bytes=size, tensor_bytes=total, tensors=frozenset(names))


def inspect_model(model: str, quantization: str | None) -> ModelLayout:
    """Validate the layout and every shard header; :class:`ModelError` on the first problem."""
    path = Path(model)
    config_file = path / "config.json"
    if not path.is_dir() or not config_file.is_file():
        raise _invalid_repo(model)
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise ModelError(
            "OSError", f"It looks like the config file at '{config_file}' is not a valid JSON file."
        ) from None
    if not isinstance(config, dict):
        raise ModelError(
            "OSError", f"It looks like the config file at '{config_file}' is not a valid JSON file."
        )
    if quantization == "ascend" and not (path / QUANT_DESCRIPTION).is_file():
        raise ModelError("ValueError", "Cannot find the config file for ascend")
    index_file = path / INDEX
    declared_total: int | None = None
    weight_map: dict[str, str] = {}
    if index_file.is_file():
        try:
            index = json.loads(index_file.read_text(encoding="utf-8"))
            weight_map = dict(index["weight_map"])
        except (OSError, ValueError, KeyError, TypeError):
            raise ModelError(
                "json.decoder.JSONDecodeError", f"{index_file}: not a safetensors index"
            ) from None
        total = (
            index.get("metadata", {}).get("total_size") if isinstance(index.get("metadata"), dict) else None
        )
        declared_total = total if isinstance(total, int) else None
        files = sorted(set(weight_map.values()))
    else:
        files = sorted(p.name for p in path.glob("*.safetensors"))
    if not files:
        raise ModelError("RuntimeError", f"Cannot find any model weights with `{model}`")
    shards = tuple(read_shard(path / name) for name in files)
    by_name = {s.path.name: s for s in shards}
    missing = sorted(t for t, f in weight_map.items() if t not in by_name[f].tensors)
    if missing:
        raise ModelError(
            "ValueError", f"Following weights were not initialized from checkpoint: {set(missing[:20])}"
        )
    return ModelLayout(path=path, config=config, shards=shards, declared_total=declared_total)


def content_hash(layout: ModelLayout, progress: Callable[[int, int], None] | None = None) -> str:
    """sha256 over the shards' sha256 digests; ``progress(done, total)`` after each shard."""
    lines = []
    for i, shard in enumerate(layout.shards, start=1):
        digest = hashlib.sha256()
        with shard.path.open("rb") as fh:
            while chunk := fh.read(_CHUNK):
                digest.update(chunk)
        lines.append(f"{shard.path.name}:{digest.hexdigest()}\n")
        if progress is not None:
            progress(i, len(layout.shards))
    return hashlib.sha256("".join(sorted(lines)).encode()).hexdigest()


def load_paced(
    layout: ModelLayout,
    name: str,
    env: dict[str, str],
    stop: threading.Event,
    raw: dict[str, Any] | None = None,
) -> str | None:
    """Hash the shards at the simulated loading pace; None when stopped meanwhile. ``raw``: the parsed
    command line (its safetensors_load_strategy and prefetch settings, loader.py)."""
    raw = raw or {}
    rate = max(_env_float(env, "FAKE_VLLM_LOAD_MB_S", 2000.0), 1e-3) * (1 << 20)
    init = max(_env_float(env, "FAKE_VLLM_INIT_S", 2.0), 0.0)
    start = time.monotonic()
    vlog.info("model_runner.py:2131", f"Starting to load model {name}...")
    if stop.wait(init):
        return None
    reading = loader.decide(
        raw.get("safetensors_load_strategy"), sum(s.file_bytes for s in layout.shards), env
    )
    rate /= reading.slowdown
    if reading.prefetch:
        loader.prefetch_started(
            int(raw.get("safetensors_prefetch_num_threads") or 8),
            int(raw.get("safetensors_prefetch_block_size") or 16777216),
        )
    total = len(layout.shards)
    bar = f"{reading.desc}:"
    print(f"{bar}   0% Completed | 0/{total} [00:00<?, ?it/s]", flush=True)
    done_bytes = [0]

    def paced(done: int, count: int) -> None:
        if stop.is_set():
            raise InterruptedError
        done_bytes[0] += layout.shards[done - 1].file_bytes
        stop.wait(max(start + init + done_bytes[0] / rate - time.monotonic(), 0.0))
        elapsed = time.monotonic() - start - init
        print(
            f"{bar} {100 * done // count:3d}% Completed | {done}/{count} [{int(elapsed) // 60:02d}:"
            f"{int(elapsed) % 60:02d}<00:00, {elapsed / done:.2f}s/it]",
            flush=True,
        )

    try:
        digest = content_hash(layout, paced)
    except InterruptedError:
        return None
    if stop.is_set():
        return None
    took = time.monotonic() - start - init
    if reading.prefetch:
        loader.prefetch_finished(took)
    vlog.info("default_loader.py:267", f"Loading weights took {took:.2f} seconds")
    vlog.info("model_runner.py:2163", f"Loading model weights took {layout.tensor_bytes / (1 << 30):.4f} GB")
    vlog.info("fake_vllm", f"weights content sha256 {digest}")
    return digest


def _env_float(env: dict[str, str], name: str, default: float) -> float:
    try:
        return float(env.get(name) or default)
    except ValueError:
        return default


def is_moe(config: dict[str, Any]) -> bool:
    """Whether config.json describes a mixture-of-experts model (routed experts > 0)."""
    keys = ("n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts")
    return any(isinstance(config.get(k), int) and config[k] > 0 for k in keys)
