"""``GET /metrics``: vLLM's Prometheus metric names, HELP texts and types (text format 0.0.4).

One series per DP engine (label ``engine="<rank>"``) and ``model_name`` = the first served model name;
labels are printed in sorted order, values as Python floats, like prometheus_client.
``vllm:prompt_tokens_by_source_total`` (sources local_compute / local_cache_hit / external_kv_transfer) and
``vllm:prompt_tokens_cached_total`` are vLLM's (vllm/v1/metrics/loggers.py@v0.23.0, ``PromptTokenStats`` in
vllm/v1/metrics/stats.py); ``ascend_sim_kv_held_blocks`` is the simulator's own (PD prefill, pd.py).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

TTFT_BUCKETS = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
    160.0,
    640.0,
    2560.0,
)
E2E_BUCKETS = (
    0.3,
    0.5,
    0.8,
    1.0,
    1.5,
    2.0,
    2.5,
    5.0,
    10.0,
    15.0,
    20.0,
    30.0,
    40.0,
    50.0,
    60.0,
    120.0,
    240.0,
    480.0,
    960.0,
    1920.0,
    7680.0,
)
FINISHED_REASONS = ("stop", "length", "abort", "error")
SOURCES = ("local_compute", "local_cache_hit", "external_kv_transfer")  # PromptTokenStats.ALL_SOURCES

_GAUGES = (
    ("vllm:num_requests_running", "Number of requests in model execution batches.", "running"),
    ("vllm:num_requests_waiting", "Number of requests waiting to be processed.", "waiting"),
    ("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", "kv_usage"),
)
_COUNTERS = (
    ("vllm:num_preemptions", "Cumulative number of preemption from the engine.", "preemptions"),
    (
        "vllm:prefix_cache_queries",
        "Prefix cache queries, in terms of number of queried tokens.",
        "pc_queries",
    ),
    ("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", "pc_hits"),
    ("vllm:prompt_tokens", "Number of prefill tokens processed.", "prompt_tokens"),
    ("vllm:generation_tokens", "Number of generation tokens processed.", "generation_tokens"),
)


@dataclass
class _Histogram:
    buckets: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    n: int = 0

    def observe(self, value: float) -> None:
        if not self.counts:
            self.counts = [0] * len(self.buckets)
        for i, le in enumerate(self.buckets):
            if value <= le:
                self.counts[i] += 1
        self.total += value
        self.n += 1


@dataclass
class _Engine:
    running: int = 0
    waiting: int = 0
    kv_tokens: int = 0
    preemptions: int = 0
    pc_queries: int = 0
    pc_hits: int = 0
    prompt_tokens: int = 0
    generation_tokens: int = 0
    by_source: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SOURCES, 0))
    held_blocks: int = 0
    success: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FINISHED_REASONS, 0))
    ttft: _Histogram = field(default_factory=lambda: _Histogram(TTFT_BUCKETS))
    e2e: _Histogram = field(default_factory=lambda: _Histogram(E2E_BUCKETS))


def _labels(**labels: str) -> str:
    return "{" + ",".join(f'{k}="{labels[k]}"' for k in sorted(labels)) + "}"


class Metrics:
    def __init__(
        self, model_name: str, engines: list[int], kv_capacity_tokens: int, cache_info: dict[str, str]
    ):
        self.model_name = model_name
        self.engines = {e: _Engine() for e in engines}
        self.kv_capacity = max(kv_capacity_tokens, 1)
        self.cache_info = cache_info
        self._lock = threading.Lock()
        self._next = 0
        self._seen_prompts: set[str] = set()
        self.show_held = False  # render ascend_sim_kv_held_blocks (a PD prefill instance)

    def pick_engine(self) -> int:
        with self._lock:
            engine = list(self.engines)[self._next % len(self.engines)]
            self._next += 1
            return engine

    def waiting(self, engine: int, delta: int) -> None:
        with self._lock:
            self.engines[engine].waiting += delta

    def started(self, engine: int, prompt: str, prompt_tokens: int, external: bool = False) -> None:
        """A request starts; ``external``: its prompt KV came from a KV transfer (PD decode)."""
        with self._lock:
            e = self.engines[engine]
            e.running += 1
            e.kv_tokens += prompt_tokens
            e.pc_queries += prompt_tokens
            hit = prompt in self._seen_prompts and not external
            if hit:
                e.pc_hits += prompt_tokens
            self._seen_prompts.add(prompt)
            e.prompt_tokens += prompt_tokens
            source = "external_kv_transfer" if external else "local_cache_hit" if hit else "local_compute"
            e.by_source[source] += prompt_tokens

    def hold(self, engine: int, blocks: int, block_size: int) -> None:
        """PD prefill: ``blocks`` more (or fewer) blocks kept for decodes; they occupy the KV cache."""
        with self._lock:
            e = self.engines[engine]
            e.held_blocks += blocks
            e.kv_tokens += blocks * block_size

    def token(self, engine: int) -> None:
        with self._lock:
            e = self.engines[engine]
            e.generation_tokens += 1
            e.kv_tokens += 1

    def finished(self, engine: int, kv_tokens: int, reason: str, ttft: float | None, e2e: float) -> None:
        with self._lock:
            e = self.engines[engine]
            e.running -= 1
            e.kv_tokens -= kv_tokens
            e.success[reason if reason in e.success else "error"] += 1
            if ttft is not None:
                e.ttft.observe(ttft)
            e.e2e.observe(e2e)

    def totals(self) -> dict[str, int]:
        with self._lock:
            return {
                "prompt_tokens": sum(e.prompt_tokens for e in self.engines.values()),
                "generation_tokens": sum(e.generation_tokens for e in self.engines.values()),
                "requests": sum(sum(e.success.values()) for e in self.engines.values()),
            }

    def render(self) -> str:
        with self._lock:
            return self._render()

    def _render(self) -> str:
        out: list[str] = []
        model = self.model_name
        for name, doc, attr in _GAUGES:
            out += [f"# HELP {name} {doc}", f"# TYPE {name} gauge"]
            for rank, e in self.engines.items():
                value = e.kv_tokens / self.kv_capacity if attr == "kv_usage" else float(getattr(e, attr))
                out.append(f"{name}{_labels(engine=str(rank), model_name=model)} {float(value)!r}")
        for name, doc, attr in _COUNTERS:
            out += [f"# HELP {name}_total {doc}", f"# TYPE {name}_total counter"]
            for rank, e in self.engines.items():
                out.append(
                    f"{name}_total{_labels(engine=str(rank), model_name=model)} {float(getattr(e, attr))!r}"
                )
        name = "vllm:prompt_tokens_by_source"
        out += [f"# HELP {name}_total Number of prompt tokens by source.", f"# TYPE {name}_total counter"]
        for rank, e in self.engines.items():
            for source, count in e.by_source.items():
                labels = _labels(engine=str(rank), model_name=model, source=source)
                out.append(f"{name}_total{labels} {float(count)!r}")
        name = "vllm:prompt_tokens_cached"
        out += [
            f"# HELP {name}_total Number of cached prompt tokens (local + external).",
            f"# TYPE {name}_total counter",
        ]
        for rank, e in self.engines.items():
            cached = e.by_source["local_cache_hit"] + e.by_source["external_kv_transfer"]
            out.append(f"{name}_total{_labels(engine=str(rank), model_name=model)} {float(cached)!r}")
        if self.show_held:
            name = "ascend_sim_kv_held_blocks"
            out += [
                f"# HELP {name} Simulator: KV blocks a PD prefill engine keeps until the decode pulled them.",
                f"# TYPE {name} gauge",
            ]
            for rank, e in self.engines.items():
                out.append(f"{name}{_labels(engine=str(rank), model_name=model)} {float(e.held_blocks)!r}")
        name = "vllm:request_success_total"
        out += [f"# HELP {name} Count of successfully processed requests.", f"# TYPE {name} counter"]
        for rank, e in self.engines.items():
            for reason, count in e.success.items():
                labels = _labels(engine=str(rank), finished_reason=reason, model_name=model)
                out.append(f"{name}{labels} {float(count)!r}")
        for name, doc, attr in (
            ("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", "ttft"),
            ("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", "e2e"),
        ):
            out += [f"# HELP {name} {doc}", f"# TYPE {name} histogram"]
            for rank, e in self.engines.items():
                hist: _Histogram = getattr(e, attr)
                counts = hist.counts or [0] * len(hist.buckets)
                for le, count in zip(hist.buckets, counts, strict=True):
                    labels = _labels(engine=str(rank), le=repr(le), model_name=model)
                    out.append(f"{name}_bucket{labels} {float(count)!r}")
                out.append(
                    f"{name}_bucket{_labels(engine=str(rank), le='+Inf', model_name=model)} {float(hist.n)!r}"
                )
                out.append(f"{name}_count{_labels(engine=str(rank), model_name=model)} {float(hist.n)!r}")
                out.append(f"{name}_sum{_labels(engine=str(rank), model_name=model)} {hist.total!r}")
        name = "vllm:cache_config_info"
        out += [f"# HELP {name} Information of the LLMEngine CacheConfig", f"# TYPE {name} gauge"]
        for rank in self.engines:
            out.append(f"{name}{_labels(engine=str(rank), **self.cache_info)} 1.0")
        return "\n".join(out) + "\n"
