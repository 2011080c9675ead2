"""`vllm` command line of the fake server: vLLM's parser rebuilt from the generated flag table.

The flag table is the one scripts/gen-vllm-flags generated from the real vLLM wheel of the site's release
(orchestrator/catalog/data/vllm_flags/v<X.Y.Z>.json, copied into the image as ``flags.json``). It is read
from ``$FAKE_VLLM_FLAGS``, else ``/opt/fake-vllm/flags.json`` (the image), else ``flags.json`` next to this
package's directory (a build context laid out like the image). :mod:`flagparse` builds the parsers and
applies FlexibleArgumentParser's rewrites; errors end like the real CLI's (argparse's message, exit 2;
unknown arguments are reported by the top-level ``vllm`` parser). A ``--quantization`` that is not a
registered method ends like vLLM's model config check (``ValueError: Unknown quantization method``, exit 1).
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import flagparse, vlog

IMAGE_FLAGS = Path("/opt/fake-vllm/flags.json")
SCHEMA_VERSION = 1


class FlagFileError(Exception):
    """flags.json is missing or malformed."""


def flags_path(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    if env.get("FAKE_VLLM_FLAGS"):
        return Path(env["FAKE_VLLM_FLAGS"])
    if IMAGE_FLAGS.is_file():
        return IMAGE_FLAGS
    return Path(__file__).resolve().parent.parent / "flags.json"


def load_flag_table(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise FlagFileError(f"cannot read the vllm flag table {path}: {exc}") from exc
    if (
        not isinstance(data, dict)
        or data.get("schema_version") != SCHEMA_VERSION
        or not isinstance(data.get("options"), list)
    ):
        raise FlagFileError(f"{path}: not a generated vLLM flag table (schema_version {SCHEMA_VERSION})")
    return data


human_readable_int = flagparse.human_readable_int
build_parsers = flagparse.build_parsers


@dataclass(frozen=True)
class ServeConfig:
    """The parsed `vllm serve` options the fake server acts on (``raw`` keeps every destination)."""

    model: str
    served_names: tuple[str, ...]
    host: str | None
    port: int
    api_keys: tuple[str, ...]
    tp: int
    pp: int
    dp: int
    dp_local: int | None
    dp_start_rank: int | None
    dp_rank: int | None  # --data-parallel-rank: external DP, one API server per rank (local size 1)
    dp_address: str
    dp_rpc_port: int
    headless: bool
    max_model_len: int | None
    max_num_seqs: int
    gpu_memory_utilization: float
    quantization: str | None
    block_size: int
    kv_cache_dtype: str
    enable_prefix_caching: bool
    max_logprobs: int
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def api_key(self) -> str | None:
        """The first accepted API key (vLLM >= v0.13 takes several: ``--api-key A B``)."""
        return self.api_keys[0] if self.api_keys else None

    @property
    def local_dp(self) -> int:
        """Data-parallel ranks this process runs (1 with --data-parallel-rank; --data-parallel-size-local,
        else the whole DP size)."""
        if self.dp_rank is not None:
            return 1
        return self.dp_local if self.dp_local is not None else self.dp

    @property
    def start_rank(self) -> int:
        return self.dp_rank if self.dp_rank is not None else self.dp_start_rank or 0

    @property
    def external_dp(self) -> bool:
        """vLLM's external load balancing: ``data_parallel_rank`` given (vllm/engine/arg_utils.py@v0.23.0)."""
        return self.dp_rank is not None

    @property
    def multi_node(self) -> bool:
        return self.dp > self.local_dp and not self.external_dp


def _pick(ns: argparse.Namespace, name: str, default: Any) -> Any:
    value = getattr(ns, name, None)
    return default if value is None else value


def to_config(ns: argparse.Namespace, env: dict[str, str]) -> ServeConfig:
    model = ns.model_tag or _pick(ns, "model", "Qwen/Qwen3-0.6B")
    names = ns.served_model_name or [model]
    return ServeConfig(
        model=model,
        served_names=tuple(names),
        host=getattr(ns, "host", None),
        port=_pick(ns, "port", 8000),
        api_keys=_api_keys(getattr(ns, "api_key", None), env),
        tp=_pick(ns, "tensor_parallel_size", 1),
        pp=_pick(ns, "pipeline_parallel_size", 1),
        dp=_pick(ns, "data_parallel_size", 1),
        dp_local=getattr(ns, "data_parallel_size_local", None),
        dp_start_rank=getattr(ns, "data_parallel_start_rank", None),
        dp_rank=getattr(ns, "data_parallel_rank", None),
        dp_address=_pick(ns, "data_parallel_address", "127.0.0.1"),
        dp_rpc_port=_pick(ns, "data_parallel_rpc_port", 29550),
        headless=bool(getattr(ns, "headless", False)),
        max_model_len=_model_len(getattr(ns, "max_model_len", None)),
        max_num_seqs=_pick(ns, "max_num_seqs", 256),
        gpu_memory_utilization=_pick(ns, "gpu_memory_utilization", 0.9),
        quantization=getattr(ns, "quantization", None),
        block_size=_pick(ns, "block_size", 128),
        kv_cache_dtype=_pick(ns, "kv_cache_dtype", "auto"),
        enable_prefix_caching=bool(_pick(ns, "enable_prefix_caching", True)),
        max_logprobs=_pick(ns, "max_logprobs", 20),
        raw={k: v for k, v in vars(ns).items() if v is not None and k != "subparser"},
    )


def _api_keys(given: Any, env: dict[str, str]) -> tuple[str, ...]:
    keys = given if isinstance(given, list) else [given] if given else []
    if not keys and env.get("VLLM_API_KEY"):
        keys = [env["VLLM_API_KEY"]]
    return tuple(str(k) for k in keys if k)


def _model_len(value: Any) -> int | None:
    return None if value is None or value == -1 else int(value)  # -1 / 'auto': derived from the model


def parse(argv: Sequence[str], table: dict[str, Any], env: dict[str, str]) -> ServeConfig:
    """Parse a ``vllm`` command line; argparse errors raise SystemExit(2) after printing, like vLLM."""
    top, _serve = build_parsers(table)
    args = flagparse.rewrite(argv, table)
    if not args:
        top.print_help()
        raise SystemExit(0)
    ns = top.parse_args(args)
    if ns.subparser != "serve":
        top.exit(2, f"vllm {ns.subparser}: not available in the simulated vLLM image (only `vllm serve`)\n")
    if getattr(ns, "config", None):
        top.exit(2, "vllm serve: --config files are not supported by the simulated vLLM server\n")
    cfg = to_config(ns, env)
    methods = table.get("quantization_methods") or []
    if cfg.quantization is not None and methods and cfg.quantization not in methods:
        raise SystemExit(
            vlog.fatal(
                "ValueError",
                f"Unknown quantization method: {cfg.quantization}. Must be one of {methods}.",
                "vllm/vllm/config/model.py",
            )
        )
    return cfg
