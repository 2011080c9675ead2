"""The value types of `vllm serve` options: each kind the generated flag tables name (``type`` in
flags.json, FlagSpec.kind: scripts/gen-vllm-flags) and the converter vLLM's parser runs for it.

One table for both readers of a `vllm serve` argument list: the catalog's (orchestrator.catalog.vllm_argv,
which validates the rendered argv) and the simulator's fake vLLM (images/fake-vllm/fake_vllm/flagparse.py,
whose build context copies this file as fake_vllm/vllm_types.py). Standard library only. The converters
carry vLLM's names and messages (vllm/utils/argparse_utils.py and arg_utils.py: human_readable_int, the
port check), so that argparse's "invalid int value: 'four'" and vLLM's own errors read the same.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from typing import Any

_JSON_OBJECT = re.compile(r"(?s)^\s*{.*}\s*$")
_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")

#: What a converter raises when vLLM's parser refuses the value.
CONVERSION_ERRORS = (ValueError, TypeError, argparse.ArgumentTypeError)


def human_readable_int(value: str) -> int:
    """'16k' -> 16000, '16K' -> 16384, '1M' -> 1048576, '4096' -> 4096 (vLLM's helper of the same name)."""
    value = value.strip()
    match = _HUMAN.fullmatch(value)
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


def human_readable_int_or_auto(value: str) -> int:
    return -1 if value.strip() == "-1" or value.strip().lower() == "auto" else human_readable_int(value)


def json_or_str(value: str) -> Any:
    return json.loads(value) if _JSON_OBJECT.match(value) else value


def lower_snake(value: str) -> str:
    return value.lower().replace("-", "_")


def comma_list(value: str) -> list[int | str]:
    return [int(p) if p.isdigit() else p for p in (q.strip() for q in value.split(","))]


def port(value: str) -> int:
    number = int(value)
    if not 1024 <= number <= 65535:
        raise argparse.ArgumentTypeError("Port must be between 1024 and 65535")
    return number


#: value kinds of the table (scripts/gen-vllm-flags ``type_kind``) -> converters named like vLLM's.
CONVERTERS: dict[str, Callable[[str], Any]] = {
    "int": int,
    "float": float,
    "str": str,
    "json": json.loads,
    "json_or_str": json_or_str,
    "human_readable_int": human_readable_int,
    "human_readable_int_or_auto": human_readable_int_or_auto,
    "lower_snake": lower_snake,
    "comma_list": comma_list,
    "bool_constructor": bool,
    "port": port,
}
