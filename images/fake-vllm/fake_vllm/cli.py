"""`vllm` command line of the fake server: argparse built from ``flags.json`` like vLLM's parser.

The flag table comes from ``$FAKE_VLLM_FLAGS``, else ``/opt/fake-vllm/flags.json`` (the image), else
``flags.json`` next to this package's directory (a build context laid out like the image). Parsing follows
vLLM's ``FlexibleArgumentParser``: ``--max_model_len`` == ``--max-model-len``, ``--model X`` is moved to the
positional model, unknown arguments end with argparse's ``vllm: error: unrecognized arguments: ...`` (exit
2, printed by the top-level ``vllm`` parser as in the real CLI). Prefix abbreviations are rejected: our
flag list is a subset of vLLM's, so a prefix unambiguous here could be ambiguous in the real parser.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import vlog

IMAGE_FLAGS = Path("/opt/fake-vllm/flags.json")
SUBCOMMANDS = ("chat", "complete", "serve", "bench", "collect-env", "run-batch")
_NAME = re.compile(r"(?<=--)[^.=]*")


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
        or data.get("schema_version") != 1
        or not isinstance(data.get("flags"), dict)
    ):
        raise FlagFileError(f"{path}: not a fake-vllm flag table (schema_version 1)")
    return data


def human_readable_int(value: str) -> int:
    """'16k' -> 16000, '16K' -> 16384, '1M' -> 1048576, '4096' -> 4096 (vLLM's helper of the same name)."""
    value = value.strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", value)
    if match:
        number, suffix = match.groups()
        if suffix.islower():
            return int(float(number) * 1000 ** ("kmgt".index(suffix) + 1))
        if "." in number:
            raise argparse.ArgumentTypeError(
                f"Decimals are not allowed with binary suffixes like {suffix}. "
                f"Did you mean to use {number}{suffix.lower()} instead?"
            )
        return int(number) * int(1024 ** ("KMGT".index(suffix) + 1))
    return int(value)


_TYPES: dict[str, Callable[[str], Any]] = {
    "int": int,
    "float": float,
    "str": str,
    "human_readable_int": human_readable_int,
}


def build_parsers(table: dict[str, Any]) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The top-level ``vllm`` parser and its ``serve`` subparser."""
    top = argparse.ArgumentParser(prog="vllm", description="vLLM CLI", allow_abbrev=False)
    top.add_argument("-v", "--version", action="version", version=str(table.get("vllm_version", "0.0.0")))
    subparsers = top.add_subparsers(required=False, dest="subparser")
    serve: argparse.ArgumentParser | None = None
    for name in SUBCOMMANDS:
        if name == "serve":
            serve = subparsers.add_parser(
                "serve",
                help="Launch a local OpenAI-compatible API server to serve LLM completions via HTTP.",
                usage="vllm serve [model_tag] [options]",
                allow_abbrev=False,
            )
        else:
            subparsers.add_parser(name, add_help=False, allow_abbrev=False)
    assert serve is not None
    serve.add_argument("model_tag", type=str, nargs="?", help="The model tag to serve")
    aliases: dict[str, list[str]] = {}
    for short, target in table.get("aliases", {}).items():
        aliases.setdefault(target, []).append(short)
    for flag, spec in table["flags"].items():
        names = [flag, *aliases.get(flag, [])]
        action = spec.get("action", "store")
        if action in ("store_true", "store_false"):
            serve.add_argument(*names, dest=spec["dest"], action=action, default=None)
            continue
        kwargs: dict[str, Any] = {"dest": spec["dest"], "action": action, "default": None}
        kwargs["type"] = _TYPES.get(spec.get("type", "str"), str)
        if "nargs" in spec:
            kwargs["nargs"] = spec["nargs"]
        serve.add_argument(*names, **kwargs)
    return top, serve


def normalize(args: Sequence[str]) -> list[str]:
    """FlexibleArgumentParser's rewrites: '_' -> '-' in long names, ``--model X`` to the positional."""
    out = list(args)
    if out[:1] == ["serve"]:
        for i, arg in enumerate(out):
            if arg == "--model" or arg.startswith("--model="):
                vlog.warning(
                    "argparse_utils.py:204",
                    "With `vllm serve`, you should provide the model as a positional argument or in a "
                    "config file instead of via the `--model` option. The `--model` option will be "
                    "removed in a future version.",
                )
                if arg == "--model":
                    tag, rest = (out[i + 1] if i + 1 < len(out) else ""), out[i + 2 :]
                else:
                    tag, rest = arg.removeprefix("--model="), out[i + 1 :]
                out = ["serve", tag, *out[1:i], *rest]
                break
    return [
        _NAME.sub(lambda m: m.group(0).replace("_", "-"), a, count=1) if a.startswith("--") else a
        for a in out
    ]


def _drop_dotted(args: list[str], flags: dict[str, Any]) -> list[str]:
    """``--compilation-config.cudagraph_mode X`` (vLLM's dotted JSON keys, ``+`` for list items) sets a key
    of a known JSON-valued flag; the fake server reads none of them, so they are checked and dropped."""
    out: list[str] = []
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if arg.startswith("--") and "." in name and name.split(".", 1)[0] in flags:
            skip = "=" not in arg and i + 1 < len(args) and not args[i + 1].startswith("--")
            continue
        out.append(arg)
    return out


@dataclass(frozen=True)
class ServeConfig:
    """The parsed `vllm serve` options the fake server acts on (``raw`` keeps every destination)."""

    model: str
    served_names: tuple[str, ...]
    host: str | None
    port: int
    api_key: str | None
    tp: int
    pp: int
    dp: int
    dp_local: int | None
    dp_start_rank: int | None
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
    def local_dp(self) -> int:
        """Data-parallel ranks this process runs (--data-parallel-size-local, else the whole DP size)."""
        return self.dp_local if self.dp_local is not None else self.dp

    @property
    def start_rank(self) -> int:
        return self.dp_start_rank or 0

    @property
    def multi_node(self) -> bool:
        return self.dp > self.local_dp


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
        api_key=getattr(ns, "api_key", None) or env.get("VLLM_API_KEY") or None,
        tp=_pick(ns, "tensor_parallel_size", 1),
        pp=_pick(ns, "pipeline_parallel_size", 1),
        dp=_pick(ns, "data_parallel_size", 1),
        dp_local=getattr(ns, "data_parallel_size_local", None),
        dp_start_rank=getattr(ns, "data_parallel_start_rank", None),
        dp_address=_pick(ns, "data_parallel_address", "127.0.0.1"),
        dp_rpc_port=_pick(ns, "data_parallel_rpc_port", 29550),
        headless=bool(getattr(ns, "headless", False)),
        max_model_len=getattr(ns, "max_model_len", None),
        max_num_seqs=_pick(ns, "max_num_seqs", 256),
        gpu_memory_utilization=_pick(ns, "gpu_memory_utilization", 0.9),
        quantization=getattr(ns, "quantization", None),
        block_size=_pick(ns, "block_size", 128),
        kv_cache_dtype=_pick(ns, "kv_cache_dtype", "auto"),
        enable_prefix_caching=bool(_pick(ns, "enable_prefix_caching", True)),
        max_logprobs=_pick(ns, "max_logprobs", 20),
        raw={k: v for k, v in vars(ns).items() if v is not None and k != "subparser"},
    )


def parse(argv: Sequence[str], table: dict[str, Any], env: dict[str, str]) -> ServeConfig:
    """Parse a ``vllm`` command line; argparse errors raise SystemExit(2) after printing, like vLLM."""
    top, _serve = build_parsers(table)
    args = _drop_dotted(normalize(argv), table["flags"])
    if not args:
        top.print_help()
        raise SystemExit(0)
    ns = top.parse_args(args)
    if ns.subparser != "serve":
        top.exit(2, f"vllm {ns.subparser}: not available in the simulated vLLM image (only `vllm serve`)\n")
    if getattr(ns, "config", None):
        top.exit(2, "vllm serve: --config files are not supported by the simulated vLLM server\n")
    return to_config(ns, env)
