"""Gate timing derived from the model: how long a replica may take to become healthy."""

from __future__ import annotations

import math

from orchestrator.planning.model import StartupPlan
from orchestrator.spec.site import SiteSpec

BASE_STARTUP_S = 120  # process start, HCCL init, warm-up
MIN_STARTUP_S = 180
GRAPH_COMPILE_S = 240  # graph capture / compile when not eager
READ_FACTOR = 2  # twice the time to read the weights once


def startup_timeout_s(weights_gib_per_server: float, read_mb_s: int, enforce_eager: bool) -> int:
    """Twice the time to read one server's share of the weights, plus fixed costs, rounded up to 30 s."""
    read_s = weights_gib_per_server * 1024 / read_mb_s
    total = BASE_STARTUP_S + READ_FACTOR * read_s + (0 if enforce_eager else GRAPH_COMPILE_S)
    return max(MIN_STARTUP_S, math.ceil(total / 30.0) * 30)


def startup_plan(spec: SiteSpec) -> StartupPlan:
    """What role vllm_serve needs to derive a replica's readiness timeout on each server from the weights the
    weights phase verified there (filter ascend.npu.vllm_serve_startup_timeout):
    max(min_s, ceil30(base_s + read_factor x bytes / read rate)); fixed_s (rollout.gates.startup_timeout_s)
    replaces the formula when set."""
    return StartupPlan(
        base_s=BASE_STARTUP_S + (0 if spec.serving.enforce_eager else GRAPH_COMPILE_S),
        read_factor=READ_FACTOR,
        min_s=MIN_STARTUP_S,
        fixed_s=spec.rollout.gates.startup_timeout_s,
    )
