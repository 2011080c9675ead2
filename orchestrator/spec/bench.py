"""`orchestrator bench`: the load it sends (concurrency levels, duration, prompt and answer size) and the
service-level objectives it compares the measurements with.

Every SLO is unset by default: bench then reports "no SLO set" for that metric instead of a verdict. The
seed quoted "< 80 ms" and "450 QPS" for its own model and hardware; they are not defaults here because they
hold for no other model, chip or prompt size.
"""

from __future__ import annotations

from pydantic import Field, PositiveFloat, PositiveInt

from orchestrator.spec.common import SpecModel


class BenchSlo(SpecModel):
    ttft_p99_ms: PositiveFloat | None = Field(
        None,
        description="Time to first token, 99th percentile, at most this many milliseconds (unset: no SLO).",
    )
    itl_p99_ms: PositiveFloat | None = Field(
        None,
        description="Inter-token latency (gap between streamed tokens after the first), 99th percentile, at "
        "most this many milliseconds (unset: no SLO).",
    )
    latency_p99_ms: PositiveFloat | None = Field(
        None,
        description="Whole-request latency, 99th percentile, at most this many milliseconds (unset: no SLO).",
    )
    min_request_throughput_rps: PositiveFloat | None = Field(
        None,
        description="Completed requests per second at the highest concurrency level, at least this many "
        "(unset: no SLO).",
    )
    min_output_throughput_tps: PositiveFloat | None = Field(
        None,
        description="Generated tokens per second at the highest concurrency level, at least this many "
        "(unset: no SLO).",
    )


class Bench(SpecModel):
    """Load of `orchestrator bench SITE` (the command line overrides each field) and its SLOs."""

    concurrency: list[PositiveInt] = Field(
        default_factory=lambda: [1, 4, 16],
        min_length=1,
        description="Concurrency levels: at each, this many workers send requests back to back.",
    )
    duration_s: PositiveFloat = Field(30, description="Seconds of load at each concurrency level.")
    prompt_tokens: PositiveInt = Field(
        256, description="Approximate prompt length in tokens (synthetic text, one word per token)."
    )
    max_tokens: PositiveInt = Field(128, description="max_tokens of every request (the answer length).")
    slo: BenchSlo = Field(
        default_factory=BenchSlo, description="Service-level objectives; all unset by default."
    )
