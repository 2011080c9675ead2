# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""Where a starting vLLM-Ascend server is, read from its log, and the start a health wait that spans several
module calls counts from (ascend.npu.vllm_gate with progress_s: each call returns the phase while the server
is not up yet, so an operator watching a 15-minute start sees it move).

The phases, in the order a server passes them, and the lines that say so:
- loading the model: vLLM's ``Starting to load model ...`` (vllm/v1/worker/gpu_model_runner.py; vllm-ascend's
  vllm_ascend/worker/model_runner_v1.py logs the same);
- loading weights n/N shards: the progress bar
  ``Loading safetensors checkpoint shards:  45% Completed | 74/163``
  (vllm/model_executor/model_loader/weight_utils.py), then ``Loading weights took 35.21 seconds``
  (vllm/model_executor/model_loader/default_loader.py);
- compiling graphs: ``Using cache directory: ... for vLLM's torch.compile``, ``Directly load the compiled
  graph(s) ... from the cache`` and ``torch.compile takes 40.20 s in total`` (vllm/compilation/backends.py,
  vllm/compilation/monitor.py);
- capturing graphs: ``Starting to capture ACL graphs for cases: [...], mode: PIECEWISE, ...`` and the bar
  ``Capturing ACL graphs (mixed prefill-decode, PIECEWISE):   9%|...| 1/11`` (vllm_ascend/worker/
  model_runner_v1.py), then ``Graph capturing finished in 8 secs, took 0.31 GiB``
  (vllm/v1/worker/gpu_model_runner.py);
- API server starting / up: ``Starting vLLM API server 0 on http://...``
  (vllm/entrypoints/openai/api_server.py) and uvicorn's ``Application startup complete.``

A progress bar redraws itself with carriage returns, so one log line holds many updates: lines are split on
them (str.splitlines) and the last update wins."""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Callable, Iterable

_Rule = tuple["re.Pattern[str]", Callable[["re.Match[str]"], str]]

_RULES: list[_Rule] = [
    (re.compile(r"Starting to load model (\S+?)\.*$"), lambda m: "loading the model"),
    (
        re.compile(
            r"Loading safetensors checkpoint shards(?: \(eager\))?:\s*(\d+)% Completed \| (\d+)/(\d+)"
        ),
        lambda m: f"loading weights: {m[2]}/{m[3]} shards ({int(m[1])}%)",
    ),
    (
        re.compile(r"Prefetching checkpoint files into page cache started"),
        lambda m: "prefetching the checkpoint into the page cache",
    ),
    (
        re.compile(r"Loading weights took ([\d.]+) seconds"),
        lambda m: f"weights loaded in {float(m[1]):.0f} s",
    ),
    (
        re.compile(r"Using cache directory: .* for vLLM's torch\.compile"),
        lambda m: "compiling graphs (torch.compile)",
    ),
    (
        re.compile(r"Compiling a graph for (?:dynamic shape|general shape|compile range)"),
        lambda m: "compiling graphs (torch.compile, cold cache)",
    ),
    (
        re.compile(r"Directly load the compiled graph\(s\)"),
        lambda m: "compiled graphs loaded from the compile cache",
    ),
    (
        re.compile(r"torch\.compile takes ([\d.]+) s in total"),
        lambda m: f"graphs compiled in {float(m[1]):.0f} s",
    ),
    (
        re.compile(r"Starting to capture ACL graphs for cases: \[([^\]]*)\], mode: (\w+)"),
        lambda m: f"capturing ACL graphs ({m[2]}, {len([c for c in m[1].split(',') if c.strip()])} sizes)",
    ),
    (
        re.compile(r"Capturing (?:ACL|CUDA) graphs \(([^)]*)\):\s*(\d+)%\|[^|]*\|\s*(\d+)/(\d+)"),
        lambda m: f"capturing ACL graphs ({m[1]}): {m[3]}/{m[4]}",
    ),
    (re.compile(r"Graph capturing finished in (\d+) secs"), lambda m: f"graphs captured in {m[1]} s"),
    (re.compile(r"Starting vLLM API server"), lambda m: "API server starting"),
    (re.compile(r"Application startup complete"), lambda m: "API server up, waiting for /health"),
]


def startup_phase(lines: Iterable[str]) -> str | None:
    """The phase the last recognised line names; None when no line is one of a start's."""
    phase = None
    for line in lines:
        for part in line.splitlines():
            for pattern, say in _RULES:
                m = pattern.search(part)
                if m is not None:
                    phase = say(m)
                    break
    return phase


class Anchor:
    """The wall-clock start of one health wait that spans module calls: the first call writes it to
    ``state_dir/<key>.json``, the calls that follow (within ``fresh_s`` of the previous one, on the same
    container id) read it; ``done`` removes it. Without a key (nothing to wait across) it is this call's."""

    def __init__(self, state_dir: str, key: str | None, ident: str, fresh_s: float) -> None:
        self.path = os.path.join(state_dir, re.sub(r"[^A-Za-z0-9_.-]", "_", key) + ".json") if key else None
        self.t0 = time.time()
        self.resumed = False
        if self.path is None:
            return
        try:
            with open(self.path, encoding="utf-8") as f:
                saved = json.load(f)
        except (OSError, ValueError):
            return
        if saved.get("id") == ident and time.time() - float(saved.get("last", 0)) <= fresh_s:
            self.t0, self.resumed = float(saved["t0"]), True

    def keep(self, ident: str) -> None:
        """Leave the start for the next call (this one returns before the wait is over)."""
        if self.path is None:
            return
        os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump({"id": ident, "t0": self.t0, "last": time.time()}, f)

    def done(self) -> None:
        if self.path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
