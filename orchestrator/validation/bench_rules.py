"""bench: load settings that cannot produce the measurement they ask for."""

from __future__ import annotations

from collections.abc import Iterator

from orchestrator.spec.findings import Finding, error
from orchestrator.spec.site import SiteSpec


def check(spec: SiteSpec) -> Iterator[Finding]:
    bench = spec.bench
    seen: set[int] = set()
    for i, level in enumerate(bench.concurrency):
        if level in seen:
            yield error(
                ("bench", "concurrency", i),
                f"concurrency level {level} is listed twice",
                "list each level once, e.g. [1, 4, 16]",
                code="bench",
            )
        seen.add(level)
    if bench.slo.itl_p99_ms is not None and bench.max_tokens < 2:
        yield error(
            ("bench", "slo", "itl_p99_ms"),
            "an inter-token latency needs at least two streamed tokens, and bench.max_tokens is 1",
            "raise bench.max_tokens (default 128) or remove bench.slo.itl_p99_ms",
            code="bench",
        )
