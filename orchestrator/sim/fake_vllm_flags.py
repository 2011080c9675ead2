"""The `vllm serve` flag table of the fake vLLM server, exported from the catalog as JSON.

The fake server (images/fake-vllm/fake_vllm/) runs inside a bare container without this package, so
the catalog's knowledge of vLLM's parser is written to ``flags.json`` at image-build time
(:func:`write_flags_json`, called by :func:`orchestrator.sim.fake_vllm_image.prepare_build_context`).

The catalog lists which long flags exist; how argparse consumes them (no value, one value, several values,
their type) is not in the catalog, so the small tables below add it. They mirror vLLM's registration:
boolean config fields use ``argparse.BooleanOptionalAction`` (``--x`` / ``--no-x``, no value), list fields
use ``nargs="+"``, integers ``int`` or ``human_readable_int`` ("16k"), fractions ``float``. A table entry
that is not a catalog flag is a bug (:class:`FlagTableError`), so the tables cannot drift from the catalog.

JSON layout (``schema_version`` 1)::

    {"schema_version": 1, "vllm_version": "0.23.0",
     "flags": {"--headless": {"action": "store_true", "dest": "headless"},
               "--no-enforce-eager": {"action": "store_false", "dest": "enforce_eager"},
               "--served-model-name": {"action": "store", "dest": "served_model_name", "nargs": "+",
                                       "type": "str"},
               "--tensor-parallel-size": {"action": "store", "dest": "tensor_parallel_size", "type": "int"},
               ...},
     "aliases": {"-tp": "--tensor-parallel-size", ...}}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrator.catalog import flags as catalog_flags
from orchestrator.catalog._data import load

SCHEMA_VERSION = 1

#: Flags registered without a value (store_true / BooleanOptionalAction). Their ``--no-`` forms, where the
#: catalog lists them, become store_false on the same destination.
BOOLEAN_FLAGS: frozenset[str] = frozenset(
    {
        # engine (EngineArgs bool fields)
        "--trust-remote-code",
        "--enforce-eager",
        "--disable-sliding-window",
        "--disable-cascade-attn",
        "--skip-tokenizer-init",
        "--enable-prompt-embeds",
        "--enable-sleep-mode",
        "--use-tqdm-on-load",
        "--data-parallel-hybrid-lb",
        "--data-parallel-external-lb",
        "--enable-expert-parallel",
        "--enable-dbo",
        "--enable-eplb",
        "--ray-workers-use-nsight",
        "--disable-custom-all-reduce",
        "--enable-prefix-caching",
        "--kv-sharing-fast-prefill",
        "--language-model-only",
        "--skip-mm-profiling",
        "--enable-lora",
        "--fully-sharded-loras",
        "--cudagraph-metrics",
        "--enable-chunked-prefill",
        "--disable-chunked-mm-input",
        "--disable-hybrid-kv-cache-manager",
        "--async-scheduling",
        "--enable-ep-weight-filter",
        "--disable-log-stats",
        "--aggregate-engine-logging",
        "--enable-log-requests",
        # frontend (FrontendArgs bool fields, serve.py)
        "--disable-uvicorn-access-log",
        "--allow-credentials",
        "--return-tokens-as-token-ids",
        "--disable-frontend-multiprocessing",
        "--enable-request-id-headers",
        "--enable-auto-tool-choice",
        "--disable-fastapi-docs",
        "--enable-prompt-tokens-details",
        "--enable-server-load-tracking",
        "--enable-force-include-usage",
        "--enable-tokenizer-info-endpoint",
        "--enable-log-outputs",
        "--headless",
    }
)

#: list-valued fields (``nargs="+"``).
MULTI_VALUE_FLAGS: frozenset[str] = frozenset(
    {
        "--served-model-name",
        "--lora-modules",
        "--cudagraph-capture-sizes",
        "--ignore-patterns",
        "--logits-processors",
        "--collect-detailed-traces",
    }
)

#: repeatable flags (``action="append"``).
APPEND_FLAGS: frozenset[str] = frozenset({"--middleware"})

INT_FLAGS: frozenset[str] = frozenset(
    {
        "--seed",
        "--max-logprobs",
        "--pipeline-parallel-size",
        "--tensor-parallel-size",
        "--master-port",
        "--nnodes",
        "--node-rank",
        "--decode-context-parallel-size",
        "--prefill-context-parallel-size",
        "--cp-kv-cache-interleave-size",
        "--data-parallel-size",
        "--data-parallel-rank",
        "--data-parallel-start-rank",
        "--data-parallel-size-local",
        "--data-parallel-rpc-port",
        "--max-parallel-loading-workers",
        "--block-size",
        "--num-gpu-blocks-override",
        "--mamba-block-size",
        "--max-loras",
        "--max-lora-rank",
        "--max-cpu-loras",
        "--max-num-seqs",
        "--long-prefill-token-threshold",
        "--max-cudagraph-capture-size",
        "--cudagraph-capture-sizes",
        "--port",
        "--api-server-count",
        "--max-log-len",
    }
)

#: integers that also accept "16k" / "1M" (vllm.utils.argparse_utils.human_readable_int).
HUMAN_INT_FLAGS: frozenset[str] = frozenset(
    {"--max-model-len", "--max-num-batched-tokens", "--kv-cache-memory-bytes"}
)

FLOAT_FLAGS: frozenset[str] = frozenset(
    {"--gpu-memory-utilization", "--cpu-offload-gb", "--mm-processor-cache-gb"}
)


class FlagTableError(ValueError):
    """The tables above disagree with the catalog (a flag is unknown or classified twice)."""


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def _check_tables(known: frozenset[str]) -> None:
    tables = {
        "BOOLEAN_FLAGS": BOOLEAN_FLAGS,
        "MULTI_VALUE_FLAGS": MULTI_VALUE_FLAGS,
        "APPEND_FLAGS": APPEND_FLAGS,
        "INT_FLAGS": INT_FLAGS,
        "HUMAN_INT_FLAGS": HUMAN_INT_FLAGS,
        "FLOAT_FLAGS": FLOAT_FLAGS,
    }
    for name, table in tables.items():
        stray = sorted(table - known)
        if stray:
            raise FlagTableError(f"{name} lists flags the catalog does not know: {', '.join(stray)}")
    typed = [INT_FLAGS, HUMAN_INT_FLAGS, FLOAT_FLAGS]
    for i, first in enumerate(typed):
        for second in typed[i + 1 :]:
            if first & second:
                raise FlagTableError(f"flags with two types: {', '.join(sorted(first & second))}")
    clash = BOOLEAN_FLAGS & (MULTI_VALUE_FLAGS | APPEND_FLAGS | INT_FLAGS | HUMAN_INT_FLAGS | FLOAT_FLAGS)
    if clash:
        raise FlagTableError(f"boolean flags cannot take values: {', '.join(sorted(clash))}")


def _entry(flag: str) -> dict[str, Any]:
    if flag.startswith("--no-"):
        positive = "--" + flag[len("--no-") :]
        if positive not in BOOLEAN_FLAGS:
            raise FlagTableError(f"{flag}: {positive} is not a boolean flag, so it has no --no- form")
        return {"action": "store_false", "dest": _dest(positive)}
    if flag in BOOLEAN_FLAGS:
        return {"action": "store_true", "dest": _dest(flag)}
    if flag in INT_FLAGS:
        kind = "int"
    elif flag in HUMAN_INT_FLAGS:
        kind = "human_readable_int"
    elif flag in FLOAT_FLAGS:
        kind = "float"
    else:
        kind = "str"
    entry: dict[str, Any] = {"action": "append" if flag in APPEND_FLAGS else "store", "dest": _dest(flag)}
    if flag in MULTI_VALUE_FLAGS:
        entry["nargs"] = "+"
    entry["type"] = kind
    return entry


def vllm_version() -> str:
    """The vLLM release the catalog's flag list describes, without the 'v' ('0.23.0')."""
    reference = load("vllm_flags.yaml").get("vllm_reference")
    if not isinstance(reference, str) or not reference:
        raise FlagTableError("vllm_flags.yaml: 'vllm_reference' is missing")
    return reference.removeprefix("v")


def flag_table() -> dict[str, Any]:
    """The JSON-ready table: every catalog flag with how argparse consumes it, plus the short aliases."""
    known = catalog_flags.KNOWN_SERVE_FLAGS
    _check_tables(known)
    return {
        "schema_version": SCHEMA_VERSION,
        "vllm_version": vllm_version(),
        "flags": {flag: _entry(flag) for flag in sorted(known)},
        "aliases": dict(sorted(catalog_flags.SERVE_FLAG_ALIASES.items())),
    }


def write_flags_json(path: Path) -> Path:
    """Write :func:`flag_table` to ``path`` (parents created) and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(flag_table(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path
