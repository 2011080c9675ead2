"""The worker API of the real vllm-router in PD mode: what can change without a restart.

Measured with 0.1.17: without --enable-igw a PD router cannot add a worker (POST /workers with worker_type
prefill/decode and POST /add_worker answer 400), but it can remove one (POST /remove_worker?url=, DELETE
/workers/{url-encoded url}) and requests in flight on it finish; /readiness wants one healthy prefill and one
healthy decode worker. With --enable-igw the static --prefill/--decode lists are ignored and workers can be
added, but a request then goes to one prefill worker only (no kv_transfer_params, no decode stage): IGW mode
cannot carry vllm-ascend's PD flow."""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Callable

from tests.unit.gateway_pd.router import Router, pd_args
from tests.unit.gateway_pd.stubs import Backend

PD_ADD_REFUSED = "PD router requires specific add_prefill_server or add_decode_server methods"
BODY = {"model": "stub-model", "prompt": "hi", "max_tokens": 4}
RR = ("--prefill-policy", "round_robin", "--decode-policy", "round_robin")


def urls(r: Router) -> dict[str, str]:
    return {w["url"]: w["worker_type"] for w in r.get("/workers").json()["workers"]}


def test_workers_cannot_be_added_only_removed(
    backend: Callable[..., Backend], router: Callable[..., Router]
) -> None:
    p1, d1, d2 = backend("prefill"), backend("decode"), backend("decode")
    p2, d3 = backend("prefill"), backend("decode")
    r = router(pd_args([p1.url], [d1.url, d2.url], *RR))
    r.wait("/readiness")
    assert urls(r) == {p1.url: "prefill", d1.url: "decode", d2.url: "decode"}
    assert sorted(r.get("/list_workers").json()["urls"]) == sorted([p1.url, d1.url, d2.url])

    for body in ({"url": p2.url, "worker_type": "prefill"}, {"url": d3.url, "worker_type": "decode"}):
        resp = r.post("/workers", body)
        assert (resp.status, resp.json()) == (400, {"error": PD_ADD_REFUSED, "code": "ADD_WORKER_FAILED"})
    resp = r.post("/add_worker?url=" + urllib.parse.quote(d3.url, safe=""))
    assert (resp.status, resp.body) == (400, PD_ADD_REFUSED)
    assert set(urls(r)) == {p1.url, d1.url, d2.url}

    # removal: DELETE /workers/{url} needs the URL encoded (unencoded it is taken for a proxied path: 405)
    assert r.delete("/workers/" + d2.url).status == 405
    resp = r.delete("/workers/" + urllib.parse.quote(d2.url, safe=""))
    assert resp.status == 200 and resp.json()["success"] is True
    resp = r.post("/remove_worker?url=" + urllib.parse.quote(p1.url, safe=""))
    assert (resp.status, resp.body) == (200, f"Successfully removed worker: {p1.url}")
    assert urls(r) == {d1.url: "decode"}

    # no prefill left: not ready, requests 503; adding it back is refused as before
    ready = r.get("/readiness")
    assert ready.status == 503 and ready.json()["reason"] == "no healthy prefill workers"
    resp = r.post("/v1/completions", BODY)
    assert (resp.status, resp.body) == (503, "No available workers: 0 prefill, 1 decode")
    assert r.post("/add_worker?url=" + urllib.parse.quote(p1.url, safe="")).status == 400


def test_requests_in_flight_on_a_removed_decode_finish(
    backend: Callable[..., Backend], router: Callable[..., Router]
) -> None:
    p, d1, d2 = backend("prefill"), backend("decode", hold_s=1.5), backend("decode", hold_s=1.5)
    r = router(pd_args([p.url], [d1.url, d2.url], *RR))
    r.wait("/readiness")
    results: list[int] = []
    clients = [threading.Thread(target=lambda: results.append(r.post("/v1/completions", BODY).status))
               for _ in range(4)]  # fmt: skip
    for c in clients:
        c.start()
    while len(d1.completions()) + len(d2.completions()) < 4:
        threading.Event().wait(0.05)
    assert r.post("/remove_worker?url=" + urllib.parse.quote(d2.url, safe="")).status == 200
    for c in clients:
        c.join(10)
    assert results == [200] * 4 and len(d2.completions()) == 2  # round robin: two were on d2
    d1.hold_s = 0
    assert r.post("/v1/completions", BODY).status == 200
    assert len(d2.completions()) == 2  # nothing new on the removed one


def test_igw_mode_adds_pd_workers_and_routes_by_model(
    backend: Callable[..., Backend], router: Callable[..., Router]
) -> None:
    """--enable-igw: the static lists are ignored, POST /workers adds prefill and decode workers, and a
    request naming the workers' model (their /v1/models id) takes the two-stage path; one naming another
    model goes to one worker of either kind alone (no kv_transfer_params, no second stage); a request without
    a model was seen taking either path (not asserted). /readiness says Ready with no workers at all, and
    --policy (not --prefill-policy / --decode-policy) picks the workers."""
    p, d1, d2 = backend("prefill"), backend("decode"), backend("decode")
    r = router(pd_args([p.url], [d1.url], "--enable-igw", "--policy", "round_robin",
                       "--prefill-policy", "cache_aware", "--decode-policy", "cache_aware"))  # fmt: skip
    r.wait("/liveness")
    assert r.get("/workers").json()["workers"] == []  # the static lists are not used
    assert (r.get("/readiness").status, r.get("/readiness").body) == (200, "Ready")
    for body in ({"url": p.url, "worker_type": "prefill"}, {"url": d1.url, "worker_type": "decode"},
                 {"url": d2.url, "worker_type": "decode"}):  # fmt: skip
        resp = r.post("/workers", body)
        assert resp.status == 200 and resp.json()["worker"]["worker_type"] == body["worker_type"]
        assert resp.json()["worker"]["model_id"] == "stub-model"

    for _ in range(4):
        resp = r.post("/v1/completions", {**BODY, "model": "stub-model"})
        assert resp.status == 200 and resp.json()["id"] == "decode"
    assert [len(b.completions()) for b in (p, d1, d2)] == [4, 2, 2]  # round robin over the decodes
    assert all(s.body["max_tokens"] == 1 and s.body["kv_transfer_params"] for s in p.completions())

    before = sum(len(b.completions()) for b in (p, d1, d2))
    for n in range(1, 5):  # another model: one stage, to any one worker (a decode stub answers 400 then)
        r.post("/v1/completions", {**BODY, "model": "another"})
        sent = [s for b in (p, d1, d2) for s in b.completions()]
        other = [s for s in sent if s.body.get("model") == "another"]
        assert len(sent) == before + n and len(other) == n
        assert all("kv_transfer_params" not in s.body and s.body["max_tokens"] == 4 for s in other)
