"""bench's output: a table per level (figures, then the SLO verdict per metric) or one JSON object."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from orchestrator.bench.slo import Check
from orchestrator.bench.stats import Dist, LevelStats


def _ms(d: Dist | None) -> str:
    return "-" if d is None else f"{d.p50:.1f} / {d.p90:.1f} / {d.p99:.1f}"


def _value(c: Check) -> str:
    return "-" if c.value is None else f"{c.value:.2f}"


def _limit(c: Check) -> str:
    if c.limit is None:
        return "no SLO set"
    if not c.metric.endswith("_ms"):
        return f">= {c.limit:g}" if c.verdict != "no SLO" else f">= {c.limit:g} (top level only)"
    return f"<= {c.limit:g}"


STYLE = {"pass": "green", "fail": "bold red", "no SLO": "dim"}


def print_table(out: Console, header: str, levels: list[LevelStats], checks: list[list[Check]]) -> None:
    out.print(header, markup=False)
    for stats, level_checks in zip(levels, checks, strict=True):
        table = Table(
            title=f"concurrency {stats.concurrency} ({stats.elapsed_s:.1f} s)", title_justify="left"
        )
        for col in ("metric", "p50 / p90 / p99", "value", "SLO", "verdict"):  # 80 columns, nothing cut
            table.add_column(col, no_wrap=col == "metric", overflow="fold")
        failed = ", ".join(f"{k}: {v}" for k, v in stats.failures.items())
        table.add_row("requests ok / failed", "", f"{stats.ok} / {stats.failed}", failed, "")
        rows = {c.metric: c for c in level_checks}
        dists = {"ttft_p99_ms": stats.ttft_ms, "itl_p99_ms": stats.itl_ms, "latency_p99_ms": stats.latency_ms}
        for metric, check in rows.items():
            table.add_row(
                metric,
                _ms(dists.get(metric)),
                _value(check),
                _limit(check),
                f"[{STYLE[check.verdict]}]{check.verdict}[/]",
            )
        out.print(table)


def report_json(
    header: dict[str, Any], levels: list[LevelStats], checks: list[list[Check]], rc: int
) -> dict[str, Any]:
    return {
        **header,
        "levels": [
            {**s.as_dict(), "slo": [vars(c) for c in cs]} for s, cs in zip(levels, checks, strict=True)
        ],
        "exit_code": rc,
    }
