"""The warm-up before a replica is routable (module ascend.npu.vllm_warmup) against the fake vLLM with its
JIT model (FAKE_VLLM_JIT_MS: the first request of each shape pays the compile, as
https://github.com/vllm-project/vllm-ascend/issues/7193
reports for Triton / bisheng): the first round is slow, latency settles on the third, and a request of a
warmed shape is fast afterwards; the warm-up set is the plan's (planning/warmup.py) for the mixed layout's
simulated spec. Each way it fails names why: over budget (settled or not), a request refused; latency that
has not settled but is within the budget passes and says so."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.ascend.npu.plugins.modules import vllm_warmup as w

from orchestrator.planning.warmup import warmup_plan
from orchestrator.spec.site import SiteSpec
from tests.helpers import PATIENCE_S, load_example

from .conftest import Proc, Sandbox

JIT_S = 0.8


def requests() -> list[dict[str, Any]]:
    spec = SiteSpec.model_validate(load_example("a2-single-distill"))
    plan = warmup_plan(spec)
    assert plan is not None
    out = [r.as_dict() for r in plan.requests]
    for r in out:  # the fake serves max_model_len 4096 here: a shorter long prompt keeps its bucket apart
        if r.get("prompt_words"):
            r["prompt_words"] = 300
    return out


def params(proc: Proc, **over: Any) -> dict[str, Any]:
    p: dict[str, Any] = {
        "url": f"http://127.0.0.1:{proc.port}",
        "model": "sim",
        "requests": requests(),
        "max_rounds": 5,
        "settle_ratio": 1.25,
        "latency_budget_s": PATIENCE_S,
        "timeout_s": int(PATIENCE_S),
        "api_key_file": None,
        "label": "",
    }
    p.update(over)
    return p


def chat_seconds(proc: Proc) -> float:
    body = {
        "model": "sim",
        "messages": [{"role": "user", "content": "Name a prime number."}],
        "max_tokens": 4,
    }
    req = urllib.request.Request(
        f"http://127.0.0.1:{proc.port}/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    start = time.monotonic()
    with urllib.request.urlopen(req, timeout=PATIENCE_S) as resp:
        assert resp.status == 200
        resp.read()
    return time.monotonic() - start


@pytest.fixture
def server(sandbox: Sandbox, checkpoints: dict[str, Path]) -> Proc:
    argv = ["serve", str(checkpoints["a"]), "--served-model-name", "sim"]
    proc = sandbox.start(argv, FAKE_VLLM_JIT_MS=str(int(JIT_S * 1000)))
    proc.wait_healthy()
    return proc


def test_the_warm_up_set_covers_the_shapes_users_send() -> None:
    got = {(r["endpoint"], bool(r["body"]["stream"]), bool(r.get("prompt_words"))) for r in requests()}
    assert got == {
        ("completion", False, False),
        ("completion", True, False),
        ("completion", False, True),
        ("chat", False, False),
        ("chat", True, False),
    }


def test_the_first_round_pays_the_compile_and_latency_settles_after(server: Proc) -> None:
    warm = w.Warmup(params(server), None)
    ok, seen = warm.run()
    assert ok, warm.why
    first, *later = warm.rounds
    assert all(t >= JIT_S for t in first.values()), first  # every request a shape of its own
    assert all(t < JIT_S for r in later for t in r.values()), later
    # round 2 is the first without compiles, so round 3 is the earliest that can settle; a busy machine's
    # noise may take one or two more
    assert len(warm.rounds) >= 3 and seen.startswith(f"settled after {len(warm.rounds)} rounds"), warm.rounds
    assert chat_seconds(server) < JIT_S  # a user's chat after the warm-up: compiled already

    again = w.Warmup(params(server), None)  # a warm server compiles nothing, not even in its first round
    assert again.run()[0] and all(t < JIT_S for r in again.rounds for t in r.values()), again.rounds


def test_a_cold_chat_pays_the_compile(server: Proc) -> None:
    assert chat_seconds(server) >= JIT_S


def test_latency_that_has_not_settled_passes_within_the_budget_and_says_so(server: Proc) -> None:
    warm = w.Warmup(params(server, max_rounds=2), None)  # round 2 is the first without compiles
    ok, seen = warm.run()
    assert ok and seen.startswith("not settled after 2 rounds, slowest "), (seen, warm.rounds)


def test_a_last_round_over_the_budget_fails_naming_the_rounds(server: Proc) -> None:
    warm = w.Warmup(params(server, max_rounds=2, latency_budget_s=0.001), None)
    ok, seen = warm.run()
    assert not ok and seen.startswith("not settled after 2 rounds"), seen
    assert "after 2 warm-up rounds (round totals " in warm.why and "rollout.warmup.max_rounds" in warm.why
    assert "over the latency budget of 0.001 s" in warm.why, warm.why


def test_a_settled_round_over_the_budget_fails_naming_the_budget(server: Proc) -> None:
    warm = w.Warmup(params(server, latency_budget_s=0.001), None)
    ok, seen = warm.run()
    assert not ok and "over the latency budget of 0.001 s" in warm.why, warm.why
    if seen.startswith("settled after"):  # the usual case; a busy machine may not settle in 5 rounds
        assert "raise rollout.gates.latency_budget_s if that is its steady latency" in warm.why
    else:
        assert seen.startswith("not settled after 5 rounds") and "rollout.warmup.max_rounds" in warm.why


def test_a_refused_request_fails_at_once(server: Proc) -> None:
    warm = w.Warmup(params(server, model="other"), None)
    ok, seen = warm.run()
    assert (ok, seen, warm.rounds) == (False, "a request failed", [])
    assert "warm-up request 'completion'" in warm.why and "HTTP 404" in warm.why


def test_settled_compares_round_totals_with_the_ratio_or_50_ms_per_request() -> None:
    assert w.settled({"a": 0.010, "b": 0.010}, {"a": 0.090, "b": 0.020}, 1.25)  # 90 ms apart, 2 requests
    assert not w.settled({"a": 0.010, "b": 0.010}, {"a": 0.130, "b": 0.020}, 1.25)
    assert w.settled({"a": 2.0, "b": 0.1}, {"a": 0.1, "b": 2.4}, 1.25)  # noise moves between requests
    assert not w.settled({"a": 2.0}, {"a": 2.6}, 1.25)
    assert w.settled({"a": 2.6}, {"a": 2.0}, 1.5)
    assert not w.settled({"a": 0.1, "b": 1.0}, {"a": 0.1, "b": 0.5}, 1.25)  # b compiled in one of them
