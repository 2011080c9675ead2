"""vLLM's compile caches, as the fake models them: a cold start compiles its graphs (``FAKE_VLLM_COMPILE_S``,
default 1 s, paid after the weights are loaded, like torch.compile and graph capture) and writes them to
``$VLLM_CACHE_ROOT/torch_compile_cache/<config hash>/rank_0_<dp rank>/`` (default root ~/.cache/vllm; one
directory per DP rank the server runs); a start that finds all of its ranks there loads them in a fraction
of that time. The log lines are vLLM's
(vllm/compilation/backends.py). Triton's JIT kernels (jit.py) persist the same way under
``$TRITON_CACHE_DIR`` (default ~/.triton/cache). Upstream: "you can directly copy the whole
~/.cache/vllm/torch_compile_cache directory ... to save a great amount of compilation time"
(https://docs.vllm.ai/en/latest/design/torch_compile.html). An unwritable cache compiles every time."""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from . import vlog

_SRC = "backends.py:520"
# where one server differs from its peers with the same configuration (vLLM's hash covers the model, parallel
# and compilation configs, not the addresses and names it serves under)
_PER_INSTANCE = frozenset(
    {
        "served_model_name",
        "port",
        "host",
        "api_key",
        "data_parallel_address",
        "data_parallel_rpc_port",
        "data_parallel_start_rank",  # the rank is the subdirectory, not the hash
        "data_parallel_rank",
        "headless",
        "kv_transfer_config",
    }
)
_LOADED_FRACTION = 0.05


def _home(env: dict[str, str]) -> Path:
    return Path(env.get("HOME") or os.path.expanduser("~"))


def cache_root(env: dict[str, str]) -> Path:
    return Path(env.get("VLLM_CACHE_ROOT") or _home(env) / ".cache" / "vllm")


def triton_dir(env: dict[str, str]) -> Path:
    return Path(env.get("TRITON_CACHE_DIR") or _home(env) / ".triton" / "cache")


def config_hash(raw: dict[str, Any], digest: str) -> str:
    """The configuration's hash (10 hex digits, as vLLM names the directory): the parsed command line
    without the per-instance settings, and the weights."""
    conf = {k: v for k, v in raw.items() if k not in _PER_INSTANCE}
    text = json.dumps({"args": conf, "weights": digest}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def compile_graphs(
    env: dict[str, str], raw: dict[str, Any], digest: str, stop: threading.Event, dp_ranks: range = range(1)
) -> bool:
    """Compile (or load from the cache) before serving; False when stopped meanwhile. vLLM keeps each
    rank's graphs in ``rank_<rank>_<dp rank>``: a server's DP ranks (``dp_ranks``) load only when all of
    theirs are there (a headless member's ranks are not in its head's cache)."""
    try:
        cost = max(float(env.get("FAKE_VLLM_COMPILE_S") or 1.0), 0.0)
    except ValueError:
        cost = 1.0
    base = cache_root(env) / "torch_compile_cache" / config_hash(raw, digest)
    markers = [base / f"rank_0_{dp}" / "vllm_compile_cache.py" for dp in dp_ranks]
    rank_dir = markers[0].parent
    start = time.monotonic()
    vlog.info("backends.py:501", f"Using cache directory: {rank_dir} for vLLM's torch.compile")
    if all(m.is_file() for m in markers):
        if stop.wait(cost * _LOADED_FRACTION):
            return False
        took = time.monotonic() - start
        vlog.info(
            _SRC, f"Directly load the compiled graph(s) for dynamic shape from the cache, took {took:.3f} s"
        )
    else:
        if stop.wait(cost):
            return False
        vlog.info(_SRC, f"Compiling a graph for dynamic shape takes {time.monotonic() - start:.2f} s")
        try:
            for marker in markers:
                marker.parent.mkdir(parents=True, exist_ok=True)
                marker.write_text(f"# fake compiled graph of {digest}\n", encoding="utf-8")
        except OSError as exc:
            vlog.warning(
                _SRC, f"Cannot write the compile cache {rank_dir}: {exc}; the next start compiles again"
            )
    vlog.info("monitor.py:34", f"torch.compile takes {time.monotonic() - start:.2f} s in total")
    return True
