"""Starting the real vllm-router in PD mode: which command lines it takes, what it waits for, what a restart
costs, what SIGTERM does to requests in flight, and how it counts a worker's DP ranks.

Measured with 0.1.17: the rendered argv (our gateway flags + --vllm-pd-disaggregation, --kv-connector nixl,
--prefill URL none, --decode URL, --prefill-policy, --decode-policy) is accepted as a whole; PD mode refuses
to start without a --prefill or a --decode (exit 1); it does not wait for workers that are down at start-up
(it lists them healthy until its health checks say otherwise); power_of_two needs 2 workers in its stage;
with 4 prefill + 32 decode workers it answers /readiness within a second; on SIGTERM it finishes the requests
in flight, refuses new connections meanwhile, and exits 0."""

from __future__ import annotations

import signal
import threading
import time
import urllib.error
import urllib.parse
from collections.abc import Callable

import pytest

from orchestrator.planning.pd_model import PdInstancePlan, PdPlan, PdRankPlan, PdRole
from orchestrator.render.vars.gateway import pd_slots, router_args
from orchestrator.spec.gateway import Gateway
from tests.unit.gateway_pd.conftest import DECODE_HOST, ROUTER_HOST
from tests.unit.gateway_pd.router import Router, free_port, free_run, pd_args
from tests.unit.gateway_pd.stubs import Backend
from tests.unit.gateway_pd.test_pd_render import CAPACITY

BODY = {"model": "stub-model", "prompt": "hi", "max_tokens": 4}
RR = ("--prefill-policy", "round_robin", "--decode-policy", "round_robin")


def _instance(role: PdRole, backends: list[Backend]) -> PdInstancePlan:
    ranks = tuple(
        PdRankPlan(server=b.host, address=b.host, dp_rank=i, local_index=i, port=b.port, devices=(i,),
                   kv_handshake_port=36000 + i, container_name=f"{role}-{i}", args=(), env=())
        for i, b in enumerate(backends)
    )  # fmt: skip
    return PdInstancePlan(
        name=role, role=role, engine_id=role, kv_port=36000, tp=1, dp=len(backends), ep=False,
        dp_address=backends[0].host, dp_rpc_port=12321, servers=(backends[0].host,), ranks=ranks,
        capacity=CAPACITY, startup_timeout_s=60,
    )  # fmt: skip


def test_the_rendered_pd_gateway_starts_and_serves(
    backend: Callable[..., Backend], router: Callable[..., Router]
) -> None:
    """Our rendered command lines, spec defaults, with a PdPlan of stub ranks: the front router
    (gateway_router_args) and PD router slot a (gateway_pd_slots[0].args) take every flag together; the slot
    lists each rank with its type and is ready; through the front a request takes the two stages."""
    ps, ds = [backend("prefill") for _ in range(2)], [backend("decode") for _ in range(2)]
    gw = Gateway(enabled=True, port=free_run(ROUTER_HOST, 3), prometheus_port=free_run(ROUTER_HOST, 3))
    pd = PdPlan("MooncakeConnectorV1", (_instance("prefill", ps),), (_instance("decode", ds),))
    slot = pd_slots(gw, ROUTER_HOST, pd)[0]
    r = router(slot["args"])
    r.wait("/readiness")
    front = router(router_args(gw, ROUTER_HOST))
    front.wait("/liveness")
    assert r.url == slot["url"]
    workers = {w["url"]: w["worker_type"] for w in r.get("/workers").json()["workers"]}
    assert workers == {**{b.url: "prefill" for b in ps}, **{b.url: "decode" for b in ds}}
    prefill = [w for w in r.get("/workers").json()["workers"] if w["worker_type"] == "prefill"]
    assert [w["bootstrap_port"] for w in prefill] == [None, None]
    assert front.post("/add_worker?url=" + urllib.parse.quote(r.url, safe=""), timeout=30).status == 200
    for _ in range(4):
        assert front.post("/v1/completions", BODY).status == 200
    assert [len(b.completions()) for b in ds] == [2, 2]  # decode_policy round_robin (the default)
    assert sum(len(b.completions()) for b in ps) == 4
    assert any(s.path == "/v1/completions/render" for b in ps for s in b.seen)  # prefill_policy cache_aware


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--vllm-pd-disaggregation"], "PD disaggregation mode requires --prefill"),
        (
            ["--vllm-pd-disaggregation", "--prefill", "http://127.0.26.2:9"],
            "PD disaggregation mode requires --decode",
        ),
    ],
)
def test_pd_mode_does_not_start_without_workers(
    router: Callable[..., Router], args: list[str], message: str
) -> None:
    r = router(args)
    assert r.wait_exit(15) == 1
    assert message in r.text()


def test_power_of_two_needs_two_workers_in_its_stage(
    backend: Callable[..., Backend], router: Callable[..., Router]
) -> None:
    p, d = backend("prefill"), backend("decode")
    r = router(
        pd_args([p.url], [d.url], "--prefill-policy", "round_robin", "--decode-policy", "power_of_two")
    )
    assert r.wait_exit(15) == 1
    assert "Power-of-two policy for decode requires at least 2 decode workers" in r.text()


def test_a_worker_down_at_start_up_is_not_waited_for(
    backend: Callable[..., Backend], router: Callable[..., Router]
) -> None:
    """--worker-startup-timeout-secs 30: the router is ready before the timeout (a router that waited for
    the dead worker would answer after 30 s at the earliest; 0.3 s on an idle machine, 7 s seen on a loaded
    CI machine) and still up after it; the dead decode is listed healthy (the health checker has not run yet:
    interval 60 s)."""
    p, d = backend("prefill"), backend("decode")
    dead = f"http://{DECODE_HOST}:{free_port(DECODE_HOST)}"
    r = router(pd_args([p.url], [d.url, dead], *RR, "--worker-startup-timeout-secs", "30",
                       "--worker-startup-check-interval", "1"))  # fmt: skip
    ready = r.wait("/readiness")
    assert ready < 29
    time.sleep(30.5 - ready)
    assert r.exited() is None
    listed = {w["url"]: w["is_healthy"] for w in r.get("/workers").json()["workers"]}
    assert listed[dead] is True
    assert r.get("/readiness").json()["decode"] == {"healthy": 2, "total": 2}


def test_restart_cost_with_the_a3_tutorial_worker_count(
    backend: Callable[..., Backend], router: Callable[..., Router]
) -> None:
    """4 prefill + 32 decode workers (the A3 2P1D layout), all up: the restarted router is ready with every
    worker healthy, without waiting for a health-check interval. The time it takes (0.3 s measured on an idle
    test machine, docs/pd-gateway.md) is not asserted: a wall-clock bound only measures the machine's load."""
    ps, ds = [backend("prefill") for _ in range(4)], [backend("decode") for _ in range(32)]
    flags = (
        "--prefill-policy",
        "cache_aware",
        "--decode-policy",
        "power_of_two",
        "--health-check-interval-secs",
        "3600",
    )
    r = router(pd_args([b.url for b in ps], [b.url for b in ds], *flags))
    r.wait("/readiness", timeout=60)
    assert r.get("/readiness").json() == {"status": "ready", "prefill": {"healthy": 4, "total": 4},
                                          "decode": {"healthy": 32, "total": 32}}  # fmt: skip


def test_sigterm_finishes_requests_in_flight_and_refuses_new_ones(
    backend: Callable[..., Backend], router: Callable[..., Router]
) -> None:
    p, d = backend("prefill"), backend("decode", hold_s=2.0)
    r = router(pd_args([p.url], [d.url], *RR))
    r.wait("/readiness")
    results: list[int] = []
    client = threading.Thread(target=lambda: results.append(r.post("/v1/completions", BODY).status))
    client.start()
    while not d.completions():
        time.sleep(0.05)
    assert r.proc is not None
    r.proc.send_signal(signal.SIGTERM)
    t0 = time.monotonic()
    time.sleep(0.3)
    with pytest.raises(urllib.error.URLError, match="Connection refused"):  # no new client while draining
        r.post("/v1/completions", BODY, timeout=2)
    assert r.wait_exit(10) == 0
    client.join(5)
    assert results == [200]
    assert time.monotonic() - t0 > 1.0  # it waited for the decode's answer (2 s hold), wait_exit bounds it
    assert "starting graceful shutdown" in r.text()


METRICS = 'vllm:num_requests_running{{engine="{}",model_name="stub-model"}} 0.0\n'


@pytest.mark.parametrize(
    ("engines", "extra", "expected"),
    [
        (["5"], [], [None]),  # a one-rank `vllm serve` of external DP (engine label = its DP rank)
        (["0", "1"], [], ["0", "1"]),  # a `vllm serve` holding two DP ranks: split, X-data-parallel-rank
        (
            [],
            ["--intra-node-data-parallel-size", "2", "--api-key", "k"],
            ["0", "1"],
        ),  # the flag does the same
    ],
)
def test_dp_ranks_behind_one_url(
    backend: Callable[..., Backend], router: Callable[..., Router], engines: list[str], extra: list[str],
    expected: list[str | None],
) -> None:  # fmt: skip
    """The router counts the `engine` labels of each worker's /metrics at start-up (none: 1, or the
    --intra-node-data-parallel-size) and splits a worker with n into URL@0..URL@n-1, sending
    X-data-parallel-rank: one URL per DP rank (external DP) must show one engine and no such flag."""
    p, d = backend("prefill"), backend("decode", metrics="".join(METRICS.format(e) for e in engines))
    r = router(pd_args([p.url], [d.url], *RR, *extra))
    r.wait("/readiness")
    for _ in range(2):
        assert r.post("/v1/completions", BODY).status == 200
    ranks = [s.headers.get("x-data-parallel-rank") for s in d.completions()]
    assert sorted(ranks, key=str) == sorted(expected * (2 // len(expected)), key=str)
    listed = sorted(w["url"] for w in r.get("/workers").json()["workers"] if w["worker_type"] == "decode")
    assert listed == ([d.url] if expected == [None] else [f"{d.url}@0", f"{d.url}@1"])
