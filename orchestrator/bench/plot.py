"""The PNG: TTFT and inter-token latency (p50, p99) against output token throughput, one point per
concurrency level (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from orchestrator.bench.stats import LevelStats


def write_plot(path: Path, title: str, levels: list[LevelStats]) -> None:
    xs = [s.output_throughput_tps for s in levels]
    fig, ax = plt.subplots(figsize=(8, 5))
    try:
        series = (
            ("TTFT p50", "ttft_ms", "p50", "o-"),
            ("TTFT p99", "ttft_ms", "p99", "o--"),
            ("ITL p50", "itl_ms", "p50", "s-"),
            ("ITL p99", "itl_ms", "p99", "s--"),
        )
        for label, attr, pct, style in series:
            pts = [
                (x, getattr(getattr(s, attr), pct))
                for x, s in zip(xs, levels, strict=True)
                if getattr(s, attr) is not None
            ]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label)
        for x, s in zip(xs, levels, strict=True):
            if s.ttft_ms is not None:
                ax.annotate(
                    f"c={s.concurrency}", (x, s.ttft_ms.p99), textcoords="offset points", xytext=(4, 4)
                )
        ax.set_xlabel("output token throughput (tokens/s)")
        ax.set_ylabel("latency (ms)")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(path, format="png", dpi=100)
    finally:
        plt.close(fig)
