"""vLLM-Ascend's ACL graph capture, as the fake models it: after the compile (compile_cache.py) and before the
API server, an engine captures one graph per capture size, ``FAKE_VLLM_CAPTURE_S`` in all (default 0.2 s),
with vllm-ascend's lines, ``Starting to capture ACL graphs for cases: [...], mode: PIECEWISE, uniform_decode:
False`` and the progress bar ``Capturing ACL graphs (mixed prefill-decode, PIECEWISE): ...| n/N``
(vllm_ascend/worker/model_runner_v1.py), then vLLM's ``Graph capturing finished in N secs, took X GiB``
(vllm/v1/worker/gpu_model_runner.py). The sizes are ``--compilation-config``'s ``cudagraph_capture_sizes``,
else a stand-in for vLLM's defaults (1, 2, 4, then multiples of 8 up to twice max_num_seqs, at most 512);
``cudagraph_mode`` FULL_DECODE_ONLY captures decode graphs (mode FULL); ``--enforce-eager`` captures none.
Only the first rank prints the bar (vllm-ascend: "Only rank 0 should print progress bar during capture")."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from . import vlog

_SRC = "model_runner_v1.py:3938"


def _config(raw: dict[str, Any]) -> dict[str, Any]:
    value = raw.get("compilation_config")
    if isinstance(value, dict):
        return value
    try:
        parsed = json.loads(value) if isinstance(value, str) else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def sizes(raw: dict[str, Any]) -> list[int]:
    """The capture sizes, largest first (the order vllm-ascend captures and logs them)."""
    given = _config(raw).get("cudagraph_capture_sizes")
    if isinstance(given, list) and given:
        return sorted({int(s) for s in given if isinstance(s, int) and s > 0}, reverse=True)
    cap = min(2 * int(raw.get("max_num_seqs") or 256), 512)
    return sorted({s for s in [1, 2, 4, *range(8, cap + 1, 8)] if s <= cap}, reverse=True)


def capture_graphs(env: dict[str, str], raw: dict[str, Any], stop: threading.Event, show: bool) -> bool:
    """Capture (log and pace) the graphs; False when stopped meanwhile. ``show``: this rank prints."""
    if raw.get("enforce_eager"):
        return True
    try:
        cost = max(float(env.get("FAKE_VLLM_CAPTURE_S") or 0.2), 0.0)
    except ValueError:
        cost = 0.2
    cases = sizes(raw)
    full = _config(raw).get("cudagraph_mode") == "FULL_DECODE_ONLY"
    mode, desc = ("FULL", "decode, FULL") if full else ("PIECEWISE", "mixed prefill-decode, PIECEWISE")
    start = time.monotonic()
    if show:
        vlog.info(
            _SRC,
            f"Starting to capture ACL graphs for cases: {cases}, mode: {mode}, uniform_decode: {full}",
            process="Worker_TP0",
        )
    for i in range(1, len(cases) + 1):
        if stop.wait(cost / len(cases)):
            return False
        if show:
            took, n = time.monotonic() - start, len(cases)
            print(
                f"Capturing ACL graphs ({desc}): {100 * i // n:3d}%|{'█' * (10 * i // n):<10}| "
                f"{i}/{n} [00:{int(took):02d}<00:00, {took / i:.2f}s/it]",
                flush=True,
            )
    if show:
        vlog.info(
            "gpu_model_runner.py:3480",
            f"Graph capturing finished in {time.monotonic() - start:.0f} secs, took 0.31 GiB",
            process="Worker_TP0",
        )
    return True
