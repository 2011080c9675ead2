"""Health of PD workers in the real vllm-router: a prefill or decode rank that stops answering, and comes
back. Started with our rendered flags (retries and circuit breaker on, as the spec's defaults) and short
health checks (interval 2 s, 3 failures out, 1 success back: the dead rank stays in for at least 4 s, so a
burst of requests sent right after it stops reaches it even on a loaded machine). Measured with 0.1.17:
until the health checker takes a dead rank out (about interval x failure threshold), each request the
policy sends to it fails with 500 (the PD path does not retry it on another rank); afterwards every
request goes to the live ranks; when the rank answers again it is routed to again (interval x success
threshold), with no API call."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from orchestrator.planning.pd_model import PdPlan
from orchestrator.render.vars.gateway import pd_router_args, router_args
from orchestrator.spec.gateway import Gateway, HealthCheck
from tests.unit.gateway_pd.conftest import ROUTER_HOST
from tests.unit.gateway_pd.router import Router, free_port
from tests.unit.gateway_pd.stubs import Backend, Role
from tests.unit.gateway_pd.test_pd_start import _instance

BODY = {"model": "stub-model", "prompt": "hi", "max_tokens": 4}
INTERVAL, FAILURES = 2, 3
BURST = 4  # round robin over 2 ranks: 2 of them go to the dead one


def healthy(r: Router, url: str) -> bool:
    return bool(next(w["is_healthy"] for w in r.get("/workers").json()["workers"] if w["url"] == url))


@pytest.mark.parametrize("stage", ["decode", "prefill"])
def test_a_dead_rank_fails_requests_until_checked_out_then_returns_by_itself(
    backend: Callable[..., Backend], router: Callable[..., Router], stage: Role
) -> None:
    ps, ds = [backend("prefill") for _ in range(2)], [backend("decode") for _ in range(2)]
    gw = Gateway(
        enabled=True, port=free_port(ROUTER_HOST), prometheus_port=free_port(ROUTER_HOST),
        prefill_policy="round_robin", decode_policy="round_robin",
        health_check=HealthCheck(interval_s=INTERVAL, failure_threshold=FAILURES, success_threshold=1,
                                 timeout_s=1),
    )  # fmt: skip
    pd = PdPlan("MooncakeConnectorV1", (_instance("prefill", ps),), (_instance("decode", ds),))
    r = router([*router_args(gw, ROUTER_HOST), *pd_router_args(gw, pd)])
    r.wait("/readiness")
    assert "--retry-max-retries" in r.args and "--cb-failure-threshold" in r.args
    dead = (ps if stage == "prefill" else ds)[1]

    dead.stop()
    t0 = time.monotonic()
    statuses = [r.post("/v1/completions", BODY).status for _ in range(BURST)]
    burst_s = time.monotonic() - t0
    while healthy(r, dead.url):
        statuses.append(r.post("/v1/completions", BODY).status)
        assert time.monotonic() - t0 < INTERVAL * FAILURES + 20, "the dead rank was not taken out"
    out_after = time.monotonic() - t0
    # round robin: every other one fails while the rank is in (the burst ended before it could be taken out)
    assert burst_s < INTERVAL * (FAILURES - 1), f"the burst took {burst_s:.1f} s: the machine is too loaded"
    assert statuses[:BURST].count(500) == BURST // 2 and set(statuses) <= {200, 500}, statuses
    assert r.get("/readiness").json()[stage] == {"healthy": 1, "total": 2}
    assert [r.post("/v1/completions", BODY).status for _ in range(4)] == [200] * 4
    assert out_after >= INTERVAL * (FAILURES - 1) * 0.5, out_after

    before = len(dead.completions())
    dead.start()  # the same port: a restarted `vllm serve`
    t1 = time.monotonic()
    while not healthy(r, dead.url):
        assert time.monotonic() - t1 < INTERVAL * 1 + 20, "the rank did not come back"
        time.sleep(0.1)
    assert [r.post("/v1/completions", BODY).status for _ in range(4)] == [200] * 4
    assert len(dead.completions()) > before  # routed to again, no API call
