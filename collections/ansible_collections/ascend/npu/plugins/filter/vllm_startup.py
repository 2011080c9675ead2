# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""How long a restarted API server may take to answer /health, from its own history.

- ``planned_s | ascend.npu.vllm_startup_timeout(restore, from_history)``: {timeout_s, source}. ``restore``
  is the release this container ran before (its rollout entry's ``restore``: {params, record}; None for a
  first start); its record's ``ready_s`` is how long that release took on this server from start to /health
  200 (written by the serve phase with the release record). With ``from_history`` (the plan renders it
  false when the spec sets rollout.gates.startup_timeout_s) and a recorded time, the timeout is twice that
  time plus 60 s, rounded up to 30 s: a start that took 14 minutes last time gets 29, and one that hangs is
  caught long before the plan's estimate from weight size and read rate, which stays the first guess
  (orchestrator/planning/gates.py).
"""

from __future__ import annotations

import math
from typing import Any

FACTOR = 2
MARGIN_S = 60
STEP_S = 30


def startup_timeout(planned_s: Any, restore: Any = None, from_history: bool = True) -> dict[str, Any]:
    planned = int(planned_s)
    if not from_history:
        return {"timeout_s": planned, "source": "rollout.gates.startup_timeout_s"}
    record = restore.get("record") if isinstance(restore, dict) else None
    last = record.get("ready_s") if isinstance(record, dict) else None
    if not isinstance(last, (int, float)) or isinstance(last, bool) or last <= 0:
        return {"timeout_s": planned, "source": "the plan's estimate: no start recorded on this server"}
    timeout = math.ceil((FACTOR * float(last) + MARGIN_S) / STEP_S) * STEP_S
    return {"timeout_s": timeout, "source": f"2 x its last start, {float(last):g} s, + 60 s"}


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"vllm_startup_timeout": startup_timeout}
