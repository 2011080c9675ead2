"""A restarted API server's startup timeout (filter ascend.npu.vllm_startup_timeout): twice the last start
recorded on that server plus 60 s, rounded up to 30 s; the plan's estimate when nothing was recorded; the
spec's value when rollout.gates.startup_timeout_s is set. The source is named for the health gate's line."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.ascend.npu.plugins.filter.vllm_startup import startup_timeout


def restore(ready_s: Any) -> dict[str, Any]:
    return {"params": {"name": "vllm-r1"}, "record": {"release": "abc", "ready_s": ready_s}}


@pytest.mark.parametrize(
    ("ready_s", "timeout"),
    [(3.1, 90), (15, 90), (15.1, 120), (420, 900), (840.4, 1770)],
)
def test_twice_the_last_start_plus_a_minute_in_steps_of_30_s(ready_s: float, timeout: int) -> None:
    got = startup_timeout(1710, restore(ready_s))
    assert got == {"timeout_s": timeout, "source": f"2 x its last start, {ready_s:g} s, + 60 s"}


def test_a_slow_last_start_raises_the_timeout_over_the_plans_estimate() -> None:
    assert startup_timeout(180, restore(300))["timeout_s"] == 660


@pytest.mark.parametrize(
    "entry", [None, {"params": {}, "record": {}}, restore(None), restore(0), restore(True)]
)
def test_without_a_recorded_start_the_plans_estimate_stands(entry: Any) -> None:
    got = startup_timeout("510", entry)
    assert got == {"timeout_s": 510, "source": "the plan's estimate: no start recorded on this server"}


def test_a_timeout_the_spec_sets_stands_whatever_the_history() -> None:
    assert startup_timeout(30, restore(420), False) == {
        "timeout_s": 30,
        "source": "rollout.gates.startup_timeout_s",
    }
