"""Dump `vllm serve`'s argument parser as JSON; runs inside a throwaway venv that has one vLLM release.

Run by scripts/gen-vllm-flags (generate.py), never by the project or its tests: it imports vLLM. It builds
the parser exactly as ``vllm serve`` does -- vLLM's own ``FlexibleArgumentParser`` with a ``serve`` subparser
set up by ``vllm.entrypoints.cli.serve.ServeSubcommand.subparser_init`` (which calls ``make_arg_parser``) --
then walks ``serve_parser._actions`` and runs a fixed list of command lines through the real
``parse_args`` to record how FlexibleArgumentParser rewrites them (``_`` -> ``-``, ``-O3``, dotted JSON
keys, ``--model``) and which it refuses.

The platform is a stand-in for vllm-ascend's ``NPUPlatform`` (device type ``npu``): the parser asks the
current platform to edit it (``current_platform.pre_register_and_update(parser)``) and vllm-ascend's edit,
identical at every tag from v0.9.1 to v0.25.1rc1, appends ``"ascend"`` to ``--quantization``'s choices when
that option has choices (source: vllm-project/vllm-ascend vllm_ascend/platform.py
``NPUPlatform.pre_register_and_update`` and vllm_ascend/utils.py ``ASCEND_QUANTIZATION_METHOD``). torch_npu
names the PrivateUse1 backend "npu"; ``torch.utils.rename_privateuse1_backend`` does the same here.

Usage (inside the venv): python probe.py OUTPUT.json
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import enum
import io
import json
import sys
from collections.abc import Callable
from typing import Any

ASCEND_QUANTIZATION_METHOD = "ascend"

#: Command lines run through the real parser; their outcome is recorded so that the fake vLLM server and
#: the validator can be checked against what FlexibleArgumentParser really does with them.
PROBES: tuple[tuple[str, ...], ...] = (
    ("--max_model_len", "4096"),
    ("--max-model-len=4k",),
    ("--max-num-batched-tokens", "16K"),
    ("-tp", "2"),
    ("-tp=2",),
    ("--tensor-parallel", "2"),
    ("--tensor_parallel_size=2",),
    ("--no-enable-prefix-caching",),
    ("--enable-expert-parallel", "--no-enable-expert-parallel"),
    ("--no-enable-expert-parallel",),
    ("--no-trust-remote-code",),
    ("--no-enforce-eager",),
    ("-O3",),
    ("-O=3",),
    ("-O", "3"),
    ("-O0",),
    ("--dtype", "float64"),
    ("--dtype", "bfloat16"),
    ("--quantization", "bogus"),
    ("--quantization", "ascend"),
    ("-q", "ascend"),
    ("--kv-cache-dtype", "int8"),
    ("--kv-cache-dtype", "auto"),
    ("--served-model-name", "a", "b"),
    ("--swap-space", "4"),
    ("--disable-frontend-multiprocessing",),
    ("--disable-log-requests",),
    ("--frobnicate",),
    ("--compilation-config.cudagraph_mode", "FULL_DECODE_ONLY"),
    ("--compilation-config", '{"cudagraph_mode": "FULL_DECODE_ONLY"}'),
    ("--data-parallel-rank", "1"),
    ("--nnodes", "2"),
    ("--headless",),
    ("--gpu-memory-utilization", "high"),
    ("--port", "8001"),
)


def _npu_platform() -> Any:
    import torch

    torch.utils.rename_privateuse1_backend("npu")
    from vllm import platforms
    from vllm.platforms.interface import Platform, PlatformEnum

    class NpuParserPlatform(Platform):  # type: ignore[misc]
        """What vllm-ascend's NPUPlatform contributes to the parser, nothing else."""

        _enum = PlatformEnum.OOT
        device_name = "npu"
        device_type = "npu"
        dispatch_key = "PrivateUse1"
        ray_device_key = "NPU"

        @classmethod
        def pre_register_and_update(cls, parser: Any = None) -> None:
            if parser is None:
                return
            action = parser._option_string_actions.get("--quantization")
            if action is not None and action.choices and ASCEND_QUANTIZATION_METHOD not in action.choices:
                action.choices.append(ASCEND_QUANTIZATION_METHOD)

    platforms._current_platform = NpuParserPlatform()
    return NpuParserPlatform


def build_parsers() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The top-level ``vllm`` parser (only the serve subcommand) and the serve subparser."""
    _npu_platform()
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:  # vLLM < 0.11.1 kept it in vllm.utils
        from vllm.utils import FlexibleArgumentParser
    from vllm.entrypoints.cli.serve import ServeSubcommand

    top = FlexibleArgumentParser(prog="vllm", description="vLLM CLI")
    subparsers = top.add_subparsers(required=False, dest="subparser")
    serve = ServeSubcommand().subparser_init(subparsers)
    return top, serve


# ------------------------------------------------------------------------------------------ type kinds


def _closure(fn: Callable[..., Any]) -> dict[str, Any]:
    names = fn.__code__.co_freevars
    return {n: c.cell_contents for n, c in zip(names, fn.__closure__ or (), strict=True)}


def type_kind(fn: Any) -> dict[str, Any]:
    """How an action converts its string: {"type": kind, ...}; kinds are the ones the fake implements."""
    if fn is None:
        return {"type": "str"}
    if fn in (int, float, str):
        return {"type": fn.__name__}
    if fn is bool:
        return {"type": "bool_constructor"}
    if fn is json.loads:
        return {"type": "json"}
    name = getattr(fn, "__qualname__", repr(fn))
    if name in ("human_readable_int", "human_readable_int_or_auto"):
        return {"type": name}
    if name == "union_dict_and_str":
        return {"type": "json_or_str"}
    if name.endswith("optional_type.<locals>._optional_type"):
        inner = type_kind(_closure(fn)["return_type"])
        return {**inner, "optional": True}
    if name.endswith("parse_type.<locals>._parse_type"):
        return type_kind(_closure(fn)["return_type"])
    if name.endswith("parse_dataclass"):
        cls = (fn.__defaults__ or (None,))[0] or _closure(fn).get("dataclass_cls")
        return {"type": "json", "config_class": getattr(cls, "__name__", str(cls))}
    if isinstance(fn, type) and issubclass(fn, enum.Enum):
        return {"type": "str", "enum": fn.__name__}
    if hasattr(fn, "__self__") and name.endswith("check_port"):
        return {"type": "port"}
    if callable(fn) and _behaves(fn, {"Foo-Bar": "foo_bar", "x": "x"}):
        return {"type": "lower_snake"}  # e.g. --moe-backend: lambda s: s.lower().replace("-", "_")
    if callable(fn) and _behaves(fn, {"2,3": [2, 3], "a, 7": ["a", 7]}):
        return {"type": "comma_list"}  # --device-ids (v0.24): "2,3" -> [2, 3], UUIDs stay strings
    return {"type": "unknown", "qualname": name}


def _behaves(fn: Callable[[str], Any], samples: dict[str, Any]) -> bool:
    try:
        return all(fn(given) == want for given, want in samples.items())
    except Exception:
        return False


# ------------------------------------------------------------------------------------------- actions


_ACTIONS = {
    "_StoreAction": "store",
    "_StoreTrueAction": "store_true",
    "_StoreFalseAction": "store_false",
    "_StoreConstAction": "store_const",
    "_AppendAction": "append",
    "_AppendConstAction": "append_const",
    "_CountAction": "count",
    "_HelpAction": "help",
    "_VersionAction": "version",
    "BooleanOptionalAction": "boolean_optional",
    "_ExtendAction": "extend",
}


def jsonable(value: Any, depth: int = 0) -> Any:
    """A JSON value for a default or a parsed value; config objects become their class name."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, enum.Enum):
        return jsonable(value.value, depth + 1) if depth < 3 else str(value)
    if isinstance(value, list | tuple | set | frozenset) and depth < 3:
        items = [jsonable(v, depth + 1) for v in value]
        return sorted(items, key=repr) if isinstance(value, set | frozenset) else items
    if isinstance(value, dict) and depth < 3:
        return {str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if dataclasses.is_dataclass(value) or hasattr(value, "model_dump"):
        return {"<object>": type(value).__name__}
    return {"<object>": type(value).__name__}


def _simple_default(value: Any) -> tuple[bool, Any]:
    out = jsonable(value)
    if isinstance(out, dict) and "<object>" in out:
        return False, out
    if isinstance(out, list | dict) and len(json.dumps(out)) > 400:
        return False, {"<object>": type(value).__name__}
    return True, out


def describe(action: argparse.Action, deprecated: set[int]) -> dict[str, Any]:
    kind = _ACTIONS.get(type(action).__name__)
    entry: dict[str, Any] = {
        "flags": list(action.option_strings),
        "dest": action.dest,
        "action": kind or "custom",
    }
    if kind is None:
        entry["action_class"] = type(action).__name__
    if kind in ("store", "append", "extend", None):
        entry.update(type_kind(action.type))
    if action.nargs is not None:
        entry["nargs"] = action.nargs
    if action.const is not None:
        entry["const"] = jsonable(action.const)
    if action.choices is not None:
        entry["choices"] = [jsonable(c) for c in action.choices]
    if isinstance(action.metavar, list | tuple):
        entry["metavar_values"] = [jsonable(m) for m in action.metavar]
    simple, default = _simple_default(action.default)
    entry["default" if simple else "default_object"] = default
    if action.required:
        entry["required"] = True
    if id(action) in deprecated or getattr(action, "deprecated", False):
        entry["deprecated"] = True
    return entry


def _deprecated_ids() -> set[int]:
    for module in ("vllm.utils.argparse_utils", "vllm.utils"):
        with contextlib.suppress(ImportError, AttributeError):
            cls = __import__(module, fromlist=["FlexibleArgumentParser"]).FlexibleArgumentParser
            return {id(a) for a in getattr(cls, "_deprecated", set())}
    return set()


# -------------------------------------------------------------------------------------------- probes


def run_probe(
    top: argparse.ArgumentParser, baseline: dict[str, Any], argv: tuple[str, ...]
) -> dict[str, Any]:
    """Parse ``vllm serve MODEL <argv>``: the destinations that differ from the baseline, or the error."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            ns = top.parse_args(["serve", "/models/m", *argv])
    except SystemExit as exc:
        lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
        return {"argv": list(argv), "exit": exc.code, "error": lines[-1] if lines else ""}
    except Exception as exc:  # vLLM raises ValueError from parse_args for some misuse
        return {"argv": list(argv), "exit": "exception", "error": f"{type(exc).__name__}: {exc}"}
    changed = {k: jsonable(v) for k, v in vars(ns).items() if k not in baseline or baseline[k] != repr(v)}
    return {"argv": list(argv), "exit": 0, "set": dict(sorted(changed.items()))}


def quantization_methods() -> list[str]:
    from vllm.model_executor.layers.quantization import QUANTIZATION_METHODS

    return sorted({*QUANTIZATION_METHODS, ASCEND_QUANTIZATION_METHOD})


def main(out: str) -> None:
    top, serve = build_parsers()
    deprecated = _deprecated_ids()
    options = [describe(a, deprecated) for a in serve._actions if a.option_strings]
    positionals = [
        {"dest": a.dest, "nargs": a.nargs, **type_kind(a.type)}
        for a in serve._actions
        if not a.option_strings
    ]
    baseline_ns = top.parse_args(["serve", "/models/m"])
    baseline = {k: repr(v) for k, v in vars(baseline_ns).items()}
    import vllm

    data = {
        "vllm_version": vllm.__version__,
        "serve_prog": serve.prog,
        "allow_abbrev": serve.allow_abbrev,
        "prefix_chars": serve.prefix_chars,
        "options": sorted(options, key=lambda o: o["flags"][0]),
        "positionals": positionals,
        "quantization_methods": quantization_methods(),
        "probes": [run_probe(top, baseline, argv) for argv in PROBES],
        "python": sys.version.split()[0],
    }
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
        fh.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
