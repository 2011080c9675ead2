"""`orchestrator bench`: the load it sends (concurrency levels, duration, prompt and answer size) and the
service-level objectives it compares the measurements with.

Every SLO is unset by default: bench then reports "no SLO set" for that metric instead of a verdict. A
widely copied article quotes "< 80 ms" and "450 QPS" for its own model and hardware; they are not defaults
here because they hold for no other model, chip or prompt size.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from orchestrator.spec.common import SpecModel

# Bounds keep a YAML slip (1e300, .inf, a 60-digit number) out; each is far above any real figure.
Ms = Annotated[float, Field(gt=0, le=3_600_000, allow_inf_nan=False)]  # up to an hour
Rate = Annotated[float, Field(gt=0, le=1e9, allow_inf_nan=False)]
Level = Annotated[int, Field(ge=1, le=100_000)]


class BenchSlo(SpecModel):
    ttft_p99_ms: Ms | None = Field(
        None,
        description="Time to first token, 99th percentile, at most this many milliseconds (unset: no SLO).",
    )
    itl_p99_ms: Ms | None = Field(
        None,
        description="Inter-token latency (gap between streamed tokens after the first), 99th percentile, at "
        "most this many milliseconds (unset: no SLO).",
    )
    latency_p99_ms: Ms | None = Field(
        None,
        description="Whole-request latency, 99th percentile, at most this many milliseconds (unset: no SLO).",
    )
    min_request_throughput_rps: Rate | None = Field(
        None,
        description="Completed requests per second at the highest concurrency level, at least this many "
        "(unset: no SLO).",
    )
    min_output_throughput_tps: Rate | None = Field(
        None,
        description="Generated tokens per second at the highest concurrency level, at least this many "
        "(unset: no SLO).",
    )


class Bench(SpecModel):
    """Load of `orchestrator bench SITE` (the command line overrides each field) and its SLOs."""

    concurrency: list[Level] = Field(
        default_factory=lambda: [1, 4, 16],
        min_length=1,
        description="Concurrency levels: at each, this many workers send requests back to back.",
    )
    duration_s: float = Field(
        30, gt=0, le=86_400, allow_inf_nan=False, description="Seconds of load at each concurrency level."
    )
    prompt_tokens: int = Field(
        256,
        ge=1,
        le=10_000_000,
        description="Approximate prompt length in tokens (synthetic text, one word per token).",
    )
    max_tokens: int = Field(
        128, ge=1, le=10_000_000, description="max_tokens of every request (the answer length)."
    )
    slo: BenchSlo = Field(
        default_factory=BenchSlo, description="Service-level objectives; all unset by default."
    )
