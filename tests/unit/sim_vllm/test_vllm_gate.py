"""The rollout gates (module ascend.npu.vllm_gate) against the fake vLLM server started as a local process,
with the faults a bad release carries in its env: each fails its own gate, a healthy release passes all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.ascend.npu.plugins.modules import vllm_gate as g

from tests.helpers import PATIENCE_S

from .conftest import Sandbox

PROMPTS = ["The capital of France is", "Two plus two is"]


def params(port: int, **over: Any) -> dict[str, Any]:
    p: dict[str, Any] = {
        "url": f"http://127.0.0.1:{port}",
        "container": None,  # a local process: no Docker state to check
        "model": "sim",
        # how long the gates wait for the server to come up and answer: generous, the machine is shared
        "timeout_s": int(PATIENCE_S),
        "interval_s": 0.1,
        "latency_budget_s": PATIENCE_S,
        "smoke_prompts": 2,
        "prompts": PROMPTS,
        "max_tokens": 8,
        "top_logprobs": 5,
        "baseline": None,
        "tolerance": 0.005,
        "soak_s": 0.0,
        "label": "",
    }
    p.update(over)
    return p


def run(sandbox: Sandbox, ckpt: Path, baseline: dict[str, Any] | None, **env: str) -> g.Gates:
    proc = sandbox.start(["serve", str(ckpt), "--served-model-name", "sim"], **env)
    assert proc.port is not None
    gates = g.Gates(params(proc.port, baseline=baseline), None)
    gates.run()
    return gates


def names(gates: g.Gates) -> list[tuple[str, bool]]:
    return [(r["gate"], r["ok"]) for r in gates.results]


@pytest.fixture(scope="module")
def baseline(
    tmp_path_factory: pytest.TempPathFactory, fake_vllm_home: Path, checkpoints: dict[str, Path]
) -> Any:
    sb = Sandbox(tmp_path_factory.mktemp("baseline"), fake_vllm_home)
    try:
        first = run(sb, checkpoints["a"], None)
    finally:
        sb.cleanup()
    assert names(first) == [("health", True), ("models", True), ("completion", True), ("accuracy", True)]
    assert first.results[-1]["seen"] == "recorded as the baseline"
    assert sorted(first.sample) == sorted(PROMPTS) and all(s["top_logprobs"] for s in first.sample.values())
    return first.sample


def test_same_release_passes_every_gate_against_its_baseline(
    sandbox: Sandbox, checkpoints: dict[str, Path], baseline: Any
) -> None:
    gates = run(sandbox, checkpoints["a"], baseline)
    assert all(ok for _, ok in names(gates)) and len(gates.results) == 4
    assert all({"gate", "ok", "seconds", "expected", "seen"} <= set(r) for r in gates.results)


def test_other_weights_answer_differently(
    sandbox: Sandbox, checkpoints: dict[str, Path], baseline: Any
) -> None:
    gates = run(sandbox, checkpoints["b"], baseline)
    assert names(gates)[-1] == ("completion", False)


def test_wrong_answers_fail_the_completion_gate(
    sandbox: Sandbox, checkpoints: dict[str, Path], baseline: Any
) -> None:
    gates = run(sandbox, checkpoints["a"], baseline, FAKE_VLLM_WRONG_ANSWERS="1")
    assert names(gates)[-1] == ("completion", False)
    assert "baseline" in gates.results[-1]["seen"]


def test_logprob_drift_beyond_tolerance_fails_only_the_accuracy_gate(
    sandbox: Sandbox, checkpoints: dict[str, Path], baseline: Any
) -> None:
    gates = run(sandbox, checkpoints["a"], baseline, FAKE_VLLM_LOGPROB_SHIFT="0.05")
    assert names(gates) == [("health", True), ("models", True), ("completion", True), ("accuracy", False)]
    assert "5.00% off" in gates.results[-1]["seen"]
    assert "0.50%" in gates.results[-1]["expected"]


def test_logprob_drift_within_tolerance_passes(
    sandbox: Sandbox, checkpoints: dict[str, Path], baseline: Any
) -> None:
    gates = run(sandbox, checkpoints["a"], baseline, FAKE_VLLM_LOGPROB_SHIFT="0.002")
    assert names(gates)[-1] == ("accuracy", True)


def test_never_healthy_fails_the_health_gate_at_the_timeout(
    sandbox: Sandbox, checkpoints: dict[str, Path], baseline: Any
) -> None:
    proc = sandbox.start(
        ["serve", str(checkpoints["a"]), "--served-model-name", "sim"], FAKE_VLLM_NEVER_HEALTHY="1"
    )
    assert proc.port is not None
    proc.wait_port()  # listening (a loaded machine may start it slower than the gate's 2 s), never healthy
    source = "2 x its last start, 0.5 s, + 60 s"  # what ascend.npu.vllm_startup_timeout says it used
    gates = g.Gates(params(proc.port, baseline=baseline, timeout_s=2, timeout_source=source), None)
    assert not gates.run()
    assert names(gates) == [("health", False)]
    assert gates.results[0]["seen"] == "/health 503 after 2 s" and gates.results[0]["seconds"] >= 2
    assert gates.results[0]["expected"] == f"/health 200 within 2 s ({source})"


def test_crash_after_start_fails_the_soak(
    sandbox: Sandbox, checkpoints: dict[str, Path], baseline: Any
) -> None:
    """The release's env makes it exit 0.5 s after it is healthy (or after the fault appears, whichever is
    later). Which gate sees the exit must not depend on how fast the gates run on a busy machine: a fault
    file holds the crash off (its keys win over the env) until the accuracy gate is done, and the soak starts
    once the server has exited."""
    sandbox.state.mkdir(parents=True, exist_ok=True)
    sandbox.faults.write_text(json.dumps({"crash_after_s": None}))
    proc = sandbox.start(
        ["serve", str(checkpoints["a"]), "--served-model-name", "sim"], FAKE_VLLM_CRASH_AFTER_S="0.5"
    )
    assert proc.port is not None
    gates = g.Gates(params(proc.port, baseline=baseline, soak_s=1.0), None)
    accuracy = gates.accuracy

    def accuracy_then_the_crash() -> bool:
        ok = accuracy()
        sandbox.faults.unlink()  # the env's crash_after_s again, counted from now (the server re-reads)
        assert proc.wait(timeout=PATIENCE_S) == 1
        return ok

    gates.accuracy = accuracy_then_the_crash  # type: ignore[method-assign]
    assert not gates.run()
    assert "EngineDeadError: EngineCore encountered an issue" in proc.stderr()
    # every gate before passed; the exit after them is what the soak sees
    assert names(gates) == [
        ("health", True),
        ("models", True),
        ("completion", True),
        ("accuracy", True),
        ("soak", False),
    ]
    assert gates.results[-1]["seen"] == "container running, /health not listening"


def test_compare_is_relative_per_token() -> None:
    base = {"p": {"tokens": [" a"], "top_logprobs": [{" a": -1.0, " b": -2.0}]}}
    same = {"p": {"tokens": [" a"], "top_logprobs": [{" a": -1.004, " b": -2.009}]}}
    off = {"p": {"tokens": [" a"], "top_logprobs": [{" a": -1.0, " b": -2.02}]}}
    assert g.compare(base, same, 0.005) is None
    assert "' b'" in str(g.compare(base, off, 0.005)) and "1.00% off" in str(g.compare(base, off, 0.005))
    assert "tokens" in str(g.compare(base, {"p": {"tokens": [" c"], "top_logprobs": []}}, 0.005))


@pytest.mark.parametrize(
    ("printed", "state"),
    [
        ("running 0 0", "running"),
        ("running 2 137", "running after 2 restart(s) (it exited with 137)"),
        ("restarting 1 1", "restarting after 1 restart(s) (it exited with 1)"),
        ("exited 0 3", "exited"),
    ],
)
def test_a_restart_of_the_container_is_not_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, printed: str, state: str
) -> None:
    """Replicas run with restart policy unless-stopped: a crash during the gates shows as a restart count
    (what `docker inspect -f '{{.State.Status}} {{.RestartCount}} {{.State.ExitCode}}'` prints), which fails
    the gates like an exit."""
    docker = tmp_path / "docker"
    docker.write_text(f"#!/bin/sh\necho '{printed}'\n", encoding="utf-8")
    docker.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    assert g.container_state("vllm-r1") == state
    assert g.container_state(None) == "running"  # a local process: nothing to inspect


def test_the_error_budget_of_the_completion_gate_against_a_slow_release(
    sandbox: Sandbox, checkpoints: dict[str, Path], baseline: Any
) -> None:
    """Every completion of a release 0.4 s slower than a 0.2 s latency budget fails:
    rollout.gates.max_error_rate decides how many of the 3 smoke completions may."""
    proc = sandbox.start(
        ["serve", str(checkpoints["a"]), "--served-model-name", "sim"], FAKE_VLLM_SLOW_MS="400"
    )
    assert proc.port is not None

    def completion(rate: float) -> dict[str, Any]:
        gates = g.Gates(
            params(proc.port, baseline=baseline, smoke_prompts=3, latency_budget_s=0.2, max_error_rate=rate),
            None,
        )
        gates.run()
        (result,) = [r for r in gates.results if r["gate"] == "completion"]
        return result

    strict = completion(0.0)  # the default: the first failure fails the gate, and nothing more is sent
    assert not strict["ok"] and strict["seen"].endswith("s for 'The capital of France is'"), strict
    assert strict["expected"] == "tokens within 0.2 s, the baseline's text"
    one = completion(0.5)  # 1 of 3 may fail: the second failure fails the gate
    assert not one["ok"] and one["seen"].startswith("2 of 3 failed, first: "), one
    assert one["expected"].endswith("at most 1 of 3 failed (max_error_rate 0.5)")
    every = completion(1.0)
    assert every["ok"] and every["seen"].startswith("3 of 3 failed, within the error budget; first: "), every


def scripted(answers: list[tuple[int, str]], rate: float, baseline: dict[str, Any] | None = None) -> g.Gates:
    """A completion gate whose completions answer ``answers`` in turn (no server)."""
    gates = g.Gates(params(1, smoke_prompts=len(answers), max_error_rate=rate, baseline=baseline), None)
    replies = iter(answers)
    gates._complete = lambda prompt, logprobs: next(replies)  # type: ignore[method-assign]
    gates.completion()
    return gates


OK = (200, json.dumps({"choices": [{"text": " Paris", "logprobs": None}]}))
DOWN = (503, "Service Unavailable")


def test_the_error_budget_is_a_floor_of_the_share() -> None:
    # 1 of 3 failed: a budget of 0.34 takes it (floor(1.02) = 1), 0.33 does not (floor(0.99) = 0)
    passed = scripted([OK, DOWN, OK], 0.34).results[-1]
    first = "first: HTTP 503: Service Unavailable"
    assert passed["ok"] and passed["seen"] == f"1 of 3 failed, within the error budget; {first}"
    failed = scripted([OK, DOWN, OK], 0.33).results[-1]
    assert not failed["ok"] and failed["seen"] == "HTTP 503: Service Unavailable"
    assert scripted([OK, OK, OK], 0.0).results[-1]["seen"] == "answers as expected"


def test_an_answer_other_than_the_baselines_is_never_in_the_budget() -> None:
    base = {p: {"text": " Paris"} for p in PROMPTS}
    other = (200, json.dumps({"choices": [{"text": " Lyon", "logprobs": None}]}))
    result = scripted([OK, other, OK], 1.0, base).results[-1]
    assert not result["ok"] and "' Lyon'" in result["seen"] and "baseline" in result["seen"], result
