"""Small pieces of the printed plan shared by replicas and PD instances: device ranges, a capacity line."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # light to import (cli/output.py is read by every command's --help)
    from orchestrator.planning.model import Capacity


def ranges(values: tuple[int, ...]) -> str:
    """0,1,2,3,6 -> '0-3,6'."""
    out: list[str] = []
    start = prev = None
    for v in (*values, None):
        if v is not None and prev is not None and v == prev + 1:
            prev = v
            continue
        if start is not None:
            out.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = v
    return ",".join(out)


def capacity_line(c: Capacity) -> str:
    """Memory per NPU of a replica or a PD instance (indented for a line under its header)."""
    return (
        f"  memory per NPU: weights {c.weights_gib:.1f} + runtime {c.overhead_gib:.1f} + KV "
        f"{c.kv_gib_per_seq:.2f} per max-length sequence, of a {c.budget_gib:.1f} GiB budget; "
        f"{c.full_seqs_fit} max-length sequences fit (max_num_seqs {c.max_num_seqs}), headroom "
        f"{c.headroom_gib:.1f} GiB"
    )
