"""Per-level figures: requests ok / failed by reason, request and output token throughput, and p50/p90/p99 of
TTFT, inter-token latency and request latency (milliseconds; numpy's linear interpolation, the method
`vllm bench serve` reports with)."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from orchestrator.bench.client import LevelRun

PERCENTILES = (50, 90, 99)


@dataclass(frozen=True)
class Dist:
    p50: float
    p90: float
    p99: float
    mean: float
    count: int


@dataclass(frozen=True)
class LevelStats:
    concurrency: int
    elapsed_s: float
    ok: int
    failed: int
    failures: dict[str, int]
    request_throughput_rps: float
    output_throughput_tps: float
    ttft_ms: Dist | None
    itl_ms: Dist | None
    latency_ms: Dist | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def dist_ms(values_s: list[float]) -> Dist | None:
    if not values_s:
        return None
    ms = np.asarray(values_s, dtype=float) * 1000.0
    p50, p90, p99 = (float(v) for v in np.percentile(ms, PERCENTILES))
    return Dist(p50, p90, p99, float(ms.mean()), len(values_s))


def level_stats(run: LevelRun) -> LevelStats:
    good = [s for s in run.samples if s.ok]
    failures = Counter(s.reason for s in run.samples if not s.ok)
    elapsed = max(run.elapsed_s, 1e-9)
    return LevelStats(
        concurrency=run.concurrency,
        elapsed_s=run.elapsed_s,
        ok=len(good),
        failed=sum(failures.values()),
        failures=dict(sorted(failures.items())),
        request_throughput_rps=len(good) / elapsed,
        output_throughput_tps=sum(s.output_tokens for s in good) / elapsed,
        ttft_ms=dist_ms([s.ttft_s for s in good if s.ttft_s is not None]),
        itl_ms=dist_ms([gap for s in good for gap in s.itl_s]),
        latency_ms=dist_ms([s.latency_s for s in good]),
    )
