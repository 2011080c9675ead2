"""`orchestrator bench SITE`: streamed completions at fixed concurrency levels against the gateway (or the
first replica, or --endpoint), TTFT / inter-token latency / latency percentiles and throughput per level,
compared with the spec's bench.slo.

Exit codes: 0 every SLO met (or none set) and no request failed; 3 an SLO missed or a request failed;
4 the endpoint unreachable; 2 invalid spec (or its API key reference unreadable); 64 bad command line;
66 no such site or no rendered inventory (without --endpoint); 73 the --plot file could not be written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from orchestrator.cli import exits
from orchestrator.cli.common import Format, FormatOption, SiteArg, load
from orchestrator.cli.output import DEFAULT_MAX_FINDINGS, console
from orchestrator.spec.limits import DEFAULT_MAX_BYTES

# The bench layer (openai, httpx, numpy) is imported when bench runs, not for `bench --help` or the listing
# of `orchestrator --help`.
if TYPE_CHECKING:
    from orchestrator.bench.client import Load
    from orchestrator.bench.stats import LevelStats
    from orchestrator.bench.target import Target

WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "a",
    "lazy",
    "dog",
    "while",
    "seven",
    "servers",
    "answer",
    "every",
    "request",
]


def _levels(value: str | None) -> list[int] | None:
    if value is None:
        return None
    try:
        levels = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise typer.BadParameter(
            f"{value!r} is not a comma-separated list of integers such as 1,4,16"
        ) from None
    if not levels or min(levels) < 1 or len(set(levels)) != len(levels):
        raise typer.BadParameter(f"{value!r}: give distinct levels >= 1, such as 1,4,16")
    return levels


def synthetic_prompt(tokens: int) -> str:
    """About `tokens` tokens of plain words (one common English word is about one token)."""
    return " ".join(WORDS[i % len(WORDS)] for i in range(tokens))


def verdict_code(levels: list[LevelStats], checks: list[list[str]]) -> int:
    failed = any(s.failed for s in levels) or any(s.ok == 0 for s in levels)
    missed = any(v == "fail" for cs in checks for v in cs)
    return exits.SLO_MISSED if failed or missed else exits.OK


def _target(
    inventory_dir: Path, model: str, key_ref: str | None, endpoint: str | None, err: Console
) -> Target:
    from orchestrator.bench.target import TargetError, find_target
    from orchestrator.status.fleet import InventoryMissing

    try:
        return find_target(inventory_dir, model, key_ref, endpoint)
    except TargetError as exc:
        err.print(str(exc), markup=False)
        raise typer.Exit(exits.INVALID_SPEC) from None
    except InventoryMissing as exc:
        err.print(str(exc), markup=False)
        raise typer.Exit(exits.NO_SITE) from None


def _measure(target: Target, work: Load, levels: list[int], err: Console) -> list[LevelStats]:
    import asyncio

    from orchestrator.bench.client import Unreachable, run_levels
    from orchestrator.bench.stats import level_stats

    try:
        runs = asyncio.run(run_levels(target.base_url, target.api_key, work, levels))
    except Unreachable as exc:
        err.print(
            f"cannot reach the endpoint: {exc}. Fix: check the address (or --endpoint) and that the "
            "gateway / replica is up (`orchestrator status SITE`).",
            markup=False,
        )
        raise typer.Exit(exits.ENDPOINT_UNREACHABLE) from None
    return [level_stats(r) for r in runs]


def bench_command(
    site: SiteArg,
    concurrency: Annotated[
        str | None,
        typer.Option(
            "--concurrency", metavar="N,...", help="Comma-separated levels (default: bench.concurrency)."
        ),
    ] = None,
    duration_s: Annotated[
        float | None,
        typer.Option(
            "--duration-s", min=0.1, metavar="SECONDS", help="Seconds per level (default: bench.duration_s)."
        ),
    ] = None,
    requests: Annotated[
        int | None,
        typer.Option("--requests", min=1, metavar="N", help="Requests per level instead of a duration."),
    ] = None,
    prompt_tokens: Annotated[
        int | None, typer.Option("--prompt-tokens", min=1, metavar="TOKENS", help="Prompt length.")
    ] = None,
    max_tokens: Annotated[
        int | None, typer.Option("--max-tokens", min=1, metavar="TOKENS", help="Answer length.")
    ] = None,
    endpoint: Annotated[
        str | None,
        typer.Option(
            "--endpoint", metavar="URL", help="Base URL to load instead of the gateway / first replica."
        ),
    ] = None,
    fmt: FormatOption = Format.table,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", metavar="FILE", help="Write latency vs output throughput as this PNG file."),
    ] = None,
) -> None:
    """Load the site's gateway (or first replica) with streamed completions at several concurrency levels;
    report TTFT, inter-token latency, latency and throughput per level against the spec's bench.slo.

    Exit codes: 0 SLOs met (or none set), 3 an SLO missed or requests failed, 4 endpoint unreachable,
    2 invalid spec, 64 usage, 66 no such site / no rendered inventory.
    """
    from orchestrator.bench.client import Load
    from orchestrator.bench.report import print_table, report_json
    from orchestrator.bench.slo import all_checks

    err = console(stderr=True)
    if duration_s is not None and requests is not None:
        err.print("give --duration-s or --requests, not both", markup=False)
        raise typer.Exit(exits.USAGE)
    levels_arg = _levels(concurrency)
    if plot is not None and not plot.resolve().parent.is_dir():
        err.print(
            f"--plot {plot}: the folder {plot.resolve().parent} does not exist; create it first", markup=False
        )
        raise typer.Exit(exits.USAGE)
    result = load(site, DEFAULT_MAX_BYTES, DEFAULT_MAX_FINDINGS)
    assert result.spec is not None and result.plan is not None  # load exits 2 otherwise
    spec = result.spec.bench
    levels = levels_arg or list(spec.concurrency)
    work = Load(
        model=result.plan.served_name,
        prompt=synthetic_prompt(prompt_tokens or spec.prompt_tokens),
        max_tokens=max_tokens or spec.max_tokens,
        duration_s=None if requests is not None else (duration_s or spec.duration_s),
        requests=requests,
    )
    inventory_dir = Path(result.filename).resolve().parent
    target = _target(inventory_dir, work.model, result.spec.serving.api_key, endpoint, err)
    stats = _measure(target, work, levels, err)
    checks = all_checks(stats, spec.slo)
    rc = verdict_code(stats, [[c.verdict for c in cs] for cs in checks])
    header = {
        "site": result.spec.site,
        "endpoint": target.base_url,
        "via": target.via,
        "model": work.model,
        "prompt_tokens": prompt_tokens or spec.prompt_tokens,
        "max_tokens": work.max_tokens,
        "duration_s": work.duration_s,
        "requests": work.requests,
    }
    if plot is not None:
        from orchestrator.bench.plot import write_plot  # matplotlib only when a plot is asked for

        try:
            write_plot(plot, f"{result.spec.site}: {work.model} via {target.via}", stats)
        except OSError as exc:
            err.print(
                f"cannot write the plot {plot}: {exc.strerror}. Fix: pick a writable --plot path.",
                markup=False,
            )
            rc = exits.CANT_CREATE
            plot = None
    if fmt is Format.json:
        print(json.dumps(report_json(header, stats, checks, rc)))
    else:
        line = (
            f"bench {header['site']}: {work.model} at {target.base_url} ({target.via}), "
            f"prompt ~{header['prompt_tokens']} tokens, max_tokens {work.max_tokens}"
        )
        print_table(console(), line, stats, checks)
        if plot is not None:
            console().print(f"plot: {plot}", markup=False)
    raise typer.Exit(rc)
