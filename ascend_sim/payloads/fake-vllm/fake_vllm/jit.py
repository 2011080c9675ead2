"""The first-request compile cost of a fresh vLLM-Ascend server: a high TTFT on the first request while
Triton / bisheng JIT-compile kernels for its shapes, then fast requests (reported in
https://github.com/vllm-project/vllm-ascend/issues/7193). Modelled as ``FAKE_VLLM_JIT_MS`` (default 0: off),
paid once per shape before the first token, a shape being the endpoint (chat or completion), the prompt's
token count rounded up to a power of two (at least 16) and streamed or not. Concurrent first requests of one
shape wait for the same compile. Compiled shapes live in the process: a restart compiles again."""

from __future__ import annotations

import threading

from . import vlog

Shape = tuple[str, int, bool]


def shape(chat: bool, prompt_tokens: int, stream: bool) -> Shape:
    bucket = 16
    while bucket < prompt_tokens:
        bucket *= 2
    return ("chat" if chat else "completion", bucket, stream)


class Jit:
    def __init__(self, cost_s: float) -> None:
        self.cost_s = max(cost_s, 0.0)
        self._lock = threading.Lock()
        self._compiled: dict[Shape, threading.Event] = {}

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
        vlog.info("jit.py:1", f"Compiling kernels for shape {key[0]} prompt<={key[1]} stream={key[2]}")
        threading.Event().wait(self.cost_s)
        done.set()
        return self.cost_s
