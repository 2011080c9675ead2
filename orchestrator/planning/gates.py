"""Gate timing derived from the model: how long a replica may take to become healthy."""

from __future__ import annotations

import math

BASE_STARTUP_S = 120  # process start, HCCL init, warm-up
MIN_STARTUP_S = 180
GRAPH_COMPILE_S = 240  # graph capture / compile when not eager
READ_FACTOR = 2  # twice the time to read the weights once


def startup_timeout_s(weights_gib_per_server: float, read_mb_s: int, enforce_eager: bool) -> int:
    """Twice the time to read one server's share of the weights, plus fixed costs, rounded up to 30 s."""
    read_s = weights_gib_per_server * 1024 / read_mb_s
    total = BASE_STARTUP_S + READ_FACTOR * read_s + (0 if enforce_eager else GRAPH_COMPILE_S)
    return max(MIN_STARTUP_S, math.ceil(total / 30.0) * 30)
