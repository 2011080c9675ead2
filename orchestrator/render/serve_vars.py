"""Variables of the serving phase (role vllm_serve) beyond the per-member instances inventory.py renders.

vllm_serve_startup: how the role derives a replica's readiness timeout on each server from the weights the
weights phase verified there (model_weights.fact: bytes, read_mib_s), with the plan's fixed costs
(orchestrator.planning.gates): max(min_s, ceil30(base_s + read_factor x bytes / read rate)); fixed_s (the
spec's rollout.gates.startup_timeout_s) replaces the formula when set. The formula itself is the collection's
filter ascend.npu.vllm_serve_startup_timeout.
"""

from __future__ import annotations

from typing import Any

from orchestrator.planning.gates import BASE_STARTUP_S, GRAPH_COMPILE_S, MIN_STARTUP_S
from orchestrator.planning.model import SitePlan
from orchestrator.spec.site import SiteSpec

READ_FACTOR = 2
"""As planning.gates.startup_timeout_s: twice the time to read the weights once."""


def serve_vars(spec: SiteSpec, plan: SitePlan) -> dict[str, Any]:
    del plan  # the per-member instances come from inventory.py
    return {
        "vllm_serve_startup": {
            "base_s": BASE_STARTUP_S + (0 if spec.serving.enforce_eager else GRAPH_COMPILE_S),
            "read_factor": READ_FACTOR,
            "min_s": MIN_STARTUP_S,
            "fixed_s": spec.rollout.gates.startup_timeout_s,
        },
    }
