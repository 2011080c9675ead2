"""ascend.npu.vllm_router_worker against the real vllm-router (regular mode, stub workers): a replica out of
the router and drained, then back in and listed, each in one module call; a router that does not answer."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from ansible_collections.ascend.npu.plugins.modules import vllm_router_worker as m

from tests.unit.gateway_pd.router import Router, free_port
from tests.unit.gateway_pd.stubs import Backend

RUNNING = 'vllm:num_requests_running{{engine="0",model_name="stub-model"}} {n}\n'


def params(r: Router, worker: Backend, state: str, **over: Any) -> dict[str, Any]:
    p = {
        "gateway_url": r.url,
        "worker_url": worker.url,
        "state": state,
        "drain_timeout_s": 10,
        "listed_timeout_s": 10,
        "request_timeout_s": 10.0,
    }
    return p | over


@pytest.fixture
def pair(
    backend: Callable[..., Backend], router: Callable[..., Router]
) -> tuple[Router, Backend, Backend]:
    w1, w2 = backend("decode"), backend("decode", host="127.0.26.4")
    r = router(["--worker-urls", w1.url, w2.url, "--policy", "round_robin"])
    r.wait("/liveness")
    return r, w1, w2


def test_out_drained_then_back_in_listed(pair: tuple[Router, Backend, Backend]) -> None:
    r, w1, w2 = pair
    assert sorted(m.listed(r.url) or []) == sorted([w1.url, w2.url])
    # a request still runs on w1 when it leaves the router: the drain waits for it
    w1.metrics = RUNNING.format(n="1.0")
    threading.Timer(1.5, lambda: setattr(w1, "metrics", RUNNING.format(n="0.0"))).start()
    out = m.change(params(r, w1, "absent"))
    assert m.listed(r.url) == [w2.url]
    assert out["running_left"] == 0 and 1.0 <= out["drained_s"] < 10, out
    back = m.change(params(r, w1, "present"))
    assert sorted(m.listed(r.url) or []) == sorted([w1.url, w2.url]) and back["listed_s"] < 10


def test_the_drain_stops_at_its_timeout_or_when_metrics_stop_answering(
    pair: tuple[Router, Backend, Backend],
) -> None:
    r, w1, w2 = pair
    w1.metrics = RUNNING.format(n="2.0")  # never finishes
    t0 = time.monotonic()
    out = m.change(params(r, w1, "absent", drain_timeout_s=2))
    assert out["running_left"] == 2.0 and 2 <= out["drained_s"] < 4 and time.monotonic() - t0 < 8
    w2.metrics = ""  # /metrics answers 404: nothing to wait for
    assert m.change(params(r, w2, "absent"))["drained_s"] < 1


def test_a_router_that_does_not_answer_lists_nothing() -> None:
    assert m.listed(f"http://127.0.26.1:{free_port('127.0.26.1')}") is None
