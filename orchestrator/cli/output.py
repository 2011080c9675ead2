"""Printing findings and plans for people: plain lines that read well in a terminal and in CI logs."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console

from orchestrator.cli.pd_view import argv_lines, pd_lines
from orchestrator.cli.plan_text import capacity_line, ranges
from orchestrator.spec.findings import Finding, format_finding

if TYPE_CHECKING:  # light to import: every command's --help reads DEFAULT_MAX_FINDINGS from here
    from orchestrator.pipeline import ValidationResult
    from orchestrator.planning.model import ReplicaPlan, SitePlan


def console(stderr: bool = False) -> Console:
    """stdout (or stderr) as rich sees it: the terminal's width (stdout's, or stdin's or stderr's when stdout
    is a pipe), COLUMNS when it is set, else 80 (CI, a log). Tables fit that width (an id is never cut);
    plain lines are printed as given (`say` and `print_lines` wrap them)."""
    return Console(stderr=stderr, highlight=False, soft_wrap=True)


HANGING_INDENT = 4
"""How much further than its first line a wrapped line's continuation is indented."""


def fill(line: str, width: int, hang: int = HANGING_INDENT) -> str:
    """`line` wrapped to `width` at spaces: continuation lines indented `hang` more than the line's own
    indentation; a word (a path, a URL, an id) is never broken, and only a word longer than the width
    overflows."""
    lead = line[: len(line) - len(line.lstrip(" "))]
    return textwrap.fill(
        line.strip(),
        width=max(width, 20),
        initial_indent=lead,
        subsequent_indent=lead + " " * hang,
        break_long_words=False,
        break_on_hyphens=False,
    )


def print_lines(out: Console, lines: Sequence[str]) -> None:
    """Plain lines (a plan, the phases) wrapped to the console's width."""
    for line in lines:
        out.print(fill(line, out.width), markup=False, highlight=False)


def say(out: Console, text: str, style: str | None = None, hang: int = HANGING_INDENT) -> None:
    """A message (one line or several) wrapped to the console's width, each line with a hanging indent."""
    lines = (fill(line, out.width, hang) if line.strip() else "" for line in text.splitlines())
    out.print("\n".join(lines), markup=False, highlight=False, style=style)


DEFAULT_MAX_FINDINGS = 50
"""Findings printed per spec unless --max-findings says otherwise (0: all)."""


def more_line(hidden: Sequence[Finding]) -> str:
    e = sum(1 for f in hidden if f.is_error)
    return (
        f"... and {len(hidden)} more ({e} error(s), {len(hidden) - e} warning(s)); "
        "--max-findings 0 prints them all"
    )


def print_findings(out: Console, result: ValidationResult, limit: int = DEFAULT_MAX_FINDINGS) -> None:
    """The first `limit` findings (errors come first; 0: all), then one line counting the rest."""
    shown = result.findings if limit <= 0 else result.findings[:limit]
    for f in shown:
        out.print(format_finding(f, result.filename), style="red" if f.is_error else "yellow", markup=False)
    hidden = result.findings[len(shown) :]
    if hidden:
        out.print(
            more_line(hidden), style="red" if any(f.is_error for f in hidden) else "yellow", markup=False
        )
    sys.stderr.flush()


def summary_line(result: ValidationResult) -> str:
    """The verdict, naming the spec format it was read as (when the file says one)."""
    e, w = len(result.errors), len(result.warnings)
    version = result.spec_format
    if e:
        read_as = f" (spec format {version})" if version is not None else ""
        return (
            f"{result.filename}: INVALID: {e} error(s), {w} warning(s){read_as}; "
            "nothing was written, no host was touched"
        )
    return f"{result.filename}: valid (spec format {version}, {w} warning(s))"


def size(gib: float) -> str:
    return f"{gib:.1f} GiB" if gib >= 1 else f"{gib * 1024:.0f} MiB"


def replica_lines(r: ReplicaPlan) -> list[str]:
    mode = {"single": "single-node", "dp": "multi-node data parallel", "ray": "multi-node on Ray"}[r.mode]
    experts = f"expert parallel over {r.ep_size} NPUs" if r.ep else "expert parallel off"
    lines = [
        f"Replica {r.name} (group {r.group}, {mode}, tp {r.tp} x pp {r.pp} x dp {r.dp}, {experts}) "
        f"-> {r.endpoint}"
    ]
    for m in r.members:
        ranks = (
            f"  DP ranks {m.dp_start_rank}-{m.dp_start_rank + m.dp_size_local - 1}" if r.mode == "dp" else ""
        )
        lines.append(f"  {m.server:<12} {m.role:<10} NPUs {ranges(m.devices)}{ranks}")
    lines.append(capacity_line(r.capacity))
    lines.append(f"  startup gate: healthy within {r.startup_timeout_s} s")
    return lines


def plan_lines(plan: SitePlan) -> list[str]:
    st = plan.stack
    lines = [
        f"Site {plan.site}: vllm-ascend {st.vllm_ascend} (vLLM {st.vllm}, CANN {st.cann}, torch {st.torch}, "
        f"torch_npu {st.torch_npu}, Python {st.python})"
    ]
    lines += [f"Image {i.tag}: SOC_VERSION={i.soc_version}, FROM {i.base_image}" for i in plan.images]
    quantized = "not quantized" if plan.quantization == "none" else f"quantized {plan.quantization}"
    lines.append(
        f"Model {plan.model_name} served as '{plan.served_name}': {size(plan.weights_gib)} of weights "
        f"({quantized}, dtype {plan.dtype})"
    )
    for r in plan.replicas:
        lines += replica_lines(r)
    if plan.pd is not None:
        lines += pd_lines(plan.pd)
    return lines


def print_plan(out: Console, plan: SitePlan, argv: bool = False) -> None:
    print_lines(out, plan_lines(plan))
    if argv:
        print_lines(out, argv_lines(plan))
