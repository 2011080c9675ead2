"""The rollout primitive that keeps requests flowing while a PD router's static lists change: a front
vllm-router in regular mode whose workers are PD routers, swapped through its worker API (docs/pd-gateway.md).

Measured with 0.1.17: the front passes completions (streamed or not) and chat to a PD router, which makes the
two stages; while clients send requests all the time, a second PD router with another decode list is started,
added to the front, the first removed and stopped: every request succeeds and the new decode rank gets
traffic."""

from __future__ import annotations

import threading
import time
import urllib.parse
from collections.abc import Callable

from orchestrator.planning.pd_model import PdPlan
from orchestrator.render.vars.gateway import pd_slots, router_args
from orchestrator.spec.gateway import Gateway
from tests.unit.gateway_pd.conftest import ROUTER_HOST
from tests.unit.gateway_pd.router import Router, free_run, pd_args
from tests.unit.gateway_pd.stubs import Backend
from tests.unit.gateway_pd.test_pd_start import _instance

BODY = {"model": "stub-model", "prompt": "hi", "max_tokens": 4}
RR = ("--prefill-policy", "round_robin", "--decode-policy", "round_robin")


def q(url: str) -> str:
    return urllib.parse.quote(url, safe="")


def test_a_front_router_swaps_pd_routers_without_a_failed_request(
    backend: Callable[..., Backend], router: Callable[..., Router]
) -> None:
    p, d_old, d_new = backend("prefill"), backend("decode"), backend("decode")
    front = router(["--policy", "round_robin", "--worker-startup-check-interval", "1"])
    a = router(pd_args([p.url], [d_old.url], *RR))
    a.wait("/readiness")
    front.wait("/liveness")
    assert front.post(f"/add_worker?url={q(a.url)}", timeout=30).status == 200

    for path, body in (
        ("/v1/completions", BODY),
        ("/v1/completions", {**BODY, "stream": True}),
        ("/v1/chat/completions", {"model": "stub-model", "messages": [{"role": "user", "content": "x"}]}),
    ):
        resp = front.post(path, body, {"authorization": "Bearer sk-client"})
        assert resp.status == 200 and d_old.url in resp.body  # the decode rank's answer
    assert [s.body["max_tokens"] for s in p.completions()] == [1, 1, 1]  # two stages behind the front

    statuses: list[int | str] = []
    done = threading.Event()

    def client() -> None:
        while not done.is_set():
            try:
                statuses.append(front.post("/v1/completions", BODY, timeout=10).status)
            except OSError as err:
                statuses.append(type(err).__name__)

    clients = [threading.Thread(target=client) for _ in range(3)]
    for c in clients:
        c.start()
    time.sleep(0.3)
    b = router(pd_args([p.url], [d_old.url, d_new.url], *RR))
    b.wait("/readiness")
    assert front.post(f"/add_worker?url={q(b.url)}", timeout=30).status == 200
    assert front.post(f"/remove_worker?url={q(a.url)}").status == 200
    time.sleep(0.3)
    assert a.proc is not None
    a.proc.terminate()
    assert a.wait_exit(10) == 0
    time.sleep(0.5)
    done.set()
    for c in clients:
        c.join(10)
    assert len(statuses) > 20 and set(statuses) == {200}, statuses
    assert d_new.completions()  # the new list is in use


def test_the_fronts_retries_hide_a_dead_ranks_500s(
    backend: Callable[..., Backend], router: Callable[..., Router]
) -> None:
    """Our rendered flags (spec defaults: health checks every 10 s, 3 retries): right after a decode rank
    dies, a request the PD router sends to it fails with 500; through the front the same requests all
    succeed, as the front retries the 500 and the PD router then picks the next decode rank."""
    ps, ds = [backend("prefill")], [backend("decode") for _ in range(2)]
    gw = Gateway(enabled=True, port=free_run(ROUTER_HOST, 3), prometheus_port=free_run(ROUTER_HOST, 3),
                 prefill_policy="round_robin", decode_policy="round_robin")  # fmt: skip
    pd = PdPlan("MooncakeConnectorV1", (_instance("prefill", ps),), (_instance("decode", ds),))
    slot = router(pd_slots(gw, ROUTER_HOST, pd)[0]["args"])
    slot.wait("/readiness")
    front = router(router_args(gw, ROUTER_HOST))
    front.wait("/liveness")
    assert front.post(f"/add_worker?url={q(slot.url)}", timeout=30).status == 200
    ds[1].stop()
    direct = [slot.post("/v1/completions", BODY).status for _ in range(6)]
    assert direct.count(500) == 3 and direct.count(200) == 3, direct
    assert [front.post("/v1/completions", BODY).status for _ in range(20)] == [200] * 20
