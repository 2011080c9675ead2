"""The first-request compile cost of a fresh vLLM-Ascend server: a high TTFT on the first request while
Triton / bisheng JIT-compile kernels for its shapes, then fast requests (reported in
https://github.com/vllm-project/vllm-ascend/issues/7193). Modelled as ``FAKE_VLLM_JIT_MS`` (default 0: off),
paid once per shape before the first token, a shape being the endpoint (chat or completion), the prompt's
token count rounded up to a power of two (at least 16) and streamed or not. Concurrent first requests of one
shape wait for the same compile. Compiled shapes persist in Triton's cache directory (``persist``: one
directory per shape, as Triton keeps one per kernel): a restart with the same cache compiles nothing again,
an empty or unwritable one compiles again."""

from __future__ import annotations

import threading
from pathlib import Path

from . import vlog

Shape = tuple[str, int, bool]


def shape(chat: bool, prompt_tokens: int, stream: bool) -> Shape:
    bucket = 16
    while bucket < prompt_tokens:
        bucket *= 2
    return ("chat" if chat else "completion", bucket, stream)


def _dirname(key: Shape) -> str:
    return f"fake-{key[0]}-{key[1]}-{'stream' if key[2] else 'whole'}"


class Jit:
    def __init__(self, cost_s: float, persist: Path | None = None) -> None:
        self.cost_s = max(cost_s, 0.0)
        self.persist = persist
        self._lock = threading.Lock()
        self._compiled: dict[Shape, threading.Event] = {}

    def _cached(self, key: Shape) -> bool:
        return self.persist is not None and (self.persist / _dirname(key) / "kernel.json").is_file()

    def _keep(self, key: Shape) -> None:
        if self.persist is None:
            return
        try:
            (self.persist / _dirname(key)).mkdir(parents=True, exist_ok=True)
            (self.persist / _dirname(key) / "kernel.json").write_text("{}\n", encoding="utf-8")
        except OSError:  # an unwritable cache: the next process compiles again
            pass

    def compile(self, key: Shape) -> float:
        """Block until ``key`` is compiled (the first caller compiles); the seconds this caller waited."""
        if self.cost_s <= 0:
            return 0.0
        with self._lock:
            done = self._compiled.get(key)
            first = done is None
            if done is None:
                done = self._compiled[key] = threading.Event()
        if not first:
            waited = 0.0 if done.is_set() else self.cost_s
            done.wait()
            return waited
        if self._cached(key):
            done.set()
            return 0.0
        vlog.info("jit.py:1", f"Compiling kernels for shape {key[0]} prompt<={key[1]} stream={key[2]}")
        threading.Event().wait(self.cost_s)
        self._keep(key)
        done.set()
        return self.cost_s
