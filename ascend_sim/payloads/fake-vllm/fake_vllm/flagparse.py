"""argparse parsers built from a generated `vllm serve` flag table, reading argv like vLLM's parser.

The table (``flags.json`` in the image) is the one scripts/gen-vllm-flags generated from the real vLLM wheel
of the site's release: every option's strings, dest, action, value type, nargs and choices. The parsers here
register exactly those, so types, choices, ``--no-X`` forms, short aliases, ``--X=value`` and unambiguous
abbreviations (vLLM's parsers allow them) behave like the real ones, and argparse prints the same errors.

:func:`rewrite` does what vLLM's ``FlexibleArgumentParser.parse_args`` does before argparse sees the list:
``--model X`` becomes the positional model, ``_`` becomes ``-`` in ``--`` option names, ``-O3`` / ``-O=3`` /
``-O 3`` become the option ``-O`` stands for in that release (recorded by the table's probes), and
``--name.key value`` items are merged into one JSON value of ``--name``.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from . import vllm_types, vlog

# the catalog's converter table (orchestrator/catalog/vllm_types.py, copied in as fake_vllm/vllm_types.py)
CONVERTERS = vllm_types.CONVERTERS
human_readable_int = vllm_types.human_readable_int

SUBCOMMANDS = ("chat", "complete", "serve", "bench", "collect-env", "run-batch")
_NAME = re.compile(r"(?<=--)[^.]*")


def converter(option: dict[str, Any]) -> Callable[[str], Any]:
    base = CONVERTERS.get(str(option.get("type", "str")), str)
    if not option.get("optional"):
        return base

    def optional(value: str) -> Any:
        return None if value in ("", "None") else base(value)

    optional.__name__ = base.__name__
    return optional


def add_option(parser: argparse.ArgumentParser, option: dict[str, Any]) -> None:
    """Register one table option on ``parser`` as vLLM registers it (defaults stay None)."""
    action, flags, dest = option["action"], list(option["flags"]), option["dest"]
    if action in ("help", "version"):
        return
    if action == "boolean_optional":
        positives = [f for f in flags if not (f.startswith("--no-") and "--" + f[5:] in flags)]
        parser.add_argument(*positives, dest=dest, action=argparse.BooleanOptionalAction, default=None)
        return
    if action in ("store_true", "store_false", "count"):
        parser.add_argument(*flags, dest=dest, action=action, default=None)
        return
    if action in ("store_const", "append_const"):
        parser.add_argument(*flags, dest=dest, action=action, const=option.get("const"), default=None)
        return
    kwargs: dict[str, Any] = {"dest": dest, "default": None, "type": converter(option)}
    kwargs["action"] = "store" if action == "custom" else action
    if option.get("nargs") is not None:
        kwargs["nargs"] = option["nargs"]
    if option.get("nargs") == "?":
        kwargs["const"] = option.get("const")
    if option.get("choices") is not None:
        kwargs["choices"] = list(option["choices"])
    parser.add_argument(*flags, **kwargs)


def build_parsers(table: dict[str, Any]) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The top-level ``vllm`` parser and its ``serve`` subparser."""
    top = argparse.ArgumentParser(prog="vllm", description="vLLM CLI")
    top.add_argument("-v", "--version", action="version", version=str(table.get("vllm_version", "0.0.0")))
    subparsers = top.add_subparsers(required=False, dest="subparser")
    serve = argparse.ArgumentParser()  # replaced below; keeps the type checker sure it is bound
    for name in SUBCOMMANDS:
        if name == "serve":
            serve = subparsers.add_parser(
                "serve",
                help="Launch a local OpenAI-compatible API server to serve LLM completions via HTTP.",
                usage="vllm serve [model_tag] [options]",
                allow_abbrev=bool(table.get("allow_abbrev", True)),
            )
        else:
            subparsers.add_parser(name, add_help=False)
    for positional in table.get("positionals") or [{"dest": "model_tag", "nargs": "?"}]:
        serve.add_argument(positional["dest"], type=str, nargs=positional.get("nargs"))
    for option in table["options"]:
        add_option(serve, option)
    return top, serve


def short_o(table: dict[str, Any]) -> str | None:
    """The option ``-O3`` sets when FlexibleArgumentParser rewrites it (the probe of ``-O3``), or None when
    ``-O`` is a registered option (before v0.13) that argparse reads itself."""
    options = table["options"]
    if any("-O" in o["flags"] for o in options):
        return None
    probe = next((p for p in table.get("probes", []) if p.get("argv") == ["-O3"]), None)
    if not probe or probe.get("exit") != 0 or len(probe.get("set", {})) != 1:
        return None
    dest = next(iter(probe["set"]))
    option = next((o for o in options if o["dest"] == dest), None)
    return None if option is None else str(option["flags"][0])


def _move_model(args: list[str]) -> list[str]:
    for i, arg in enumerate(args):
        if arg == "--model" or arg.startswith("--model="):
            vlog.warning(
                "argparse_utils.py:204",
                "With `vllm serve`, you should provide the model as a positional argument or in a "
                "config file instead of via the `--model` option. The `--model` option will be "
                "removed in a future version.",
            )
            if arg == "--model":
                tag, rest = (args[i + 1] if i + 1 < len(args) else ""), args[i + 2 :]
            else:
                tag, rest = arg.removeprefix("--model="), args[i + 1 :]
            return ["serve", tag, *args[1:i], *rest]
    return args


def _dotted_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        try:
            return human_readable_int(text)
        except (ValueError, argparse.ArgumentTypeError):
            return text


def _merge(into: dict[str, Any], keys: list[str], value: Any) -> None:
    for key in keys[:-1]:
        into = into.setdefault(key, {})
    last = keys[-1]
    if isinstance(value, list) and isinstance(into.get(last), list):
        into[last] += value
    else:
        into[last] = value


def rewrite(argv: Sequence[str], table: dict[str, Any]) -> list[str]:
    """FlexibleArgumentParser's rewrites of a ``vllm`` argument list (see the module docstring)."""
    args = list(argv)
    if args[:1] == ["serve"]:
        args = _move_model(args)
    o_target = short_o(table)
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg.startswith("--"):
            key, eq, value = arg.partition("=")
            out.append(_NAME.sub(lambda m: m.group(0).replace("_", "-"), key, count=1) + eq + value)
        elif o_target and arg.startswith("-O") and arg != "-O":
            out += [o_target, arg[3:] if arg[2:3] == "=" else arg[2:]]
        elif o_target and arg == "-O" and i + 1 < len(args) and args[i + 1] in {"0", "1", "2", "3"}:
            out.append(o_target)
        else:
            out.append(arg)
    dotted: dict[str, dict[str, Any]] = {}
    kept: list[str] = []
    skip = False
    for i, arg in enumerate(out):
        if skip:
            skip = False
            continue
        name, eq, value = arg.partition("=")
        if not (arg.startswith("-") and "." in name):
            kept.append(arg)
            continue
        if not eq:
            value, skip = (out[i + 1] if i + 1 < len(out) else ""), True
        if name.endswith("+"):
            name, parsed = name[:-1], list(value.split(","))
        else:
            parsed = _dotted_value(value)
        base, *keys = name.split(".")
        _merge(dotted.setdefault(base, {}), keys, parsed)
    for base, merged in dotted.items():
        kept += [base, json.dumps(merged)]
    return kept
