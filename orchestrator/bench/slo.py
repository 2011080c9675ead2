"""The SLO verdict per level and metric: pass, fail, or "no SLO" when the spec sets none.

Latency SLOs (p99 upper bounds) hold at every level; throughput SLOs (lower bounds) are judged at the
highest concurrency level only, where the fleet is meant to reach them (a single stream never does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from orchestrator.bench.stats import Dist, LevelStats
from orchestrator.spec.bench import BenchSlo

Verdict = Literal["pass", "fail", "no SLO"]


@dataclass(frozen=True)
class Check:
    metric: str  # ttft_p99_ms, itl_p99_ms, latency_p99_ms, request_throughput_rps, output_throughput_tps
    value: float | None
    limit: float | None
    verdict: Verdict


def _upper(metric: str, dist: Dist | None, limit: float | None) -> Check:
    value = None if dist is None else dist.p99
    if limit is None:
        return Check(metric, value, None, "no SLO")
    return Check(metric, value, limit, "pass" if value is not None and value <= limit else "fail")


def _lower(metric: str, value: float, limit: float | None, judged: bool) -> Check:
    if limit is None or not judged:
        return Check(metric, value, limit, "no SLO")
    return Check(metric, value, limit, "pass" if value >= limit else "fail")


def level_checks(stats: LevelStats, slo: BenchSlo, highest: bool) -> list[Check]:
    return [
        _upper("ttft_p99_ms", stats.ttft_ms, slo.ttft_p99_ms),
        _upper("itl_p99_ms", stats.itl_ms, slo.itl_p99_ms),
        _upper("latency_p99_ms", stats.latency_ms, slo.latency_p99_ms),
        _lower(
            "request_throughput_rps", stats.request_throughput_rps, slo.min_request_throughput_rps, highest
        ),
        _lower("output_throughput_tps", stats.output_throughput_tps, slo.min_output_throughput_tps, highest),
    ]


def all_checks(levels: list[LevelStats], slo: BenchSlo) -> list[list[Check]]:
    top = max((s.concurrency for s in levels), default=0)
    return [level_checks(s, slo, s.concurrency == top) for s in levels]
