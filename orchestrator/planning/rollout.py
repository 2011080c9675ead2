"""The serve phase's rolling update in head servers: rollout.batch_size parsed once, here.

playbooks/serve.yml rolls over the head servers of the replicas whose release changed with ``serial``; each
head server rolls the replicas it heads one after another, so a batch of k head servers has at most k
replicas out of service at once. ``serial`` is the canary batch first, then ``batch_size`` (a number or a
percentage of the replicas), no batch larger than ``replicas - min_available``. Ansible repeats the last
entry of a serial list until every host ran.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from orchestrator.planning.model import RolloutPlan
from orchestrator.spec.operations import Rollout

_PERCENT = re.compile(r"^([1-9][0-9]?|100)%$")


@dataclass(frozen=True)
class BatchSize:
    value: int
    percent: bool  # value is a percentage of the replicas

    def of(self, replicas: int) -> int:
        """Replicas per batch (at least 1; a percentage floors like Ansible's serial)."""
        if self.percent:
            return max(1, math.floor(replicas * self.value / 100))
        return max(1, self.value)


def parse_batch_size(value: int | str) -> BatchSize | None:
    """The one parser of rollout.batch_size: a whole number >= 1 or 'N%' (1-100); None when it is neither."""
    if isinstance(value, int):
        return BatchSize(value, False) if value >= 1 else None
    match = _PERCENT.match(value)
    return BatchSize(int(match.group(1)), True) if match else None


def serial(rollout: Rollout, replicas: int) -> list[int]:
    """``serial`` of the rolling play: [canary, batch] (or [batch] without a canary), each capped by the
    replicas that may be out of service at once (replicas - min_available, at least 1)."""
    cap = max(1, replicas - (rollout.min_available or 0))
    parsed = parse_batch_size(rollout.batch_size) or BatchSize(1, False)  # validation refuses the rest
    later = min(parsed.of(replicas), cap)
    if rollout.canary <= 0:
        return [later]
    return [min(rollout.canary, cap), later]


def rollout_plan(rollout: Rollout, replicas: int) -> RolloutPlan:
    parsed = parse_batch_size(rollout.batch_size) or BatchSize(1, False)
    return RolloutPlan(
        batch_size=parsed.of(replicas),
        serial=tuple(serial(rollout, replicas)),
        max_fail_percentage=rollout.max_fail_percentage,
    )
