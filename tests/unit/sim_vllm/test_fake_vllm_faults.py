"""Injected faults: never healthy, crash after N seconds, slow answers, wrong answers (env and fault file)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from .conftest import Proc, Sandbox, free_port, http


def _answer(proc: Proc) -> tuple[str, list[float], float]:
    assert proc.port is not None
    start = time.monotonic()
    resp = http(proc.port, "/v1/completions", {"prompt": "Two plus two is", "max_tokens": 4, "logprobs": 1})
    assert resp.status == 200, resp.body
    choice = resp.json()["choices"][0]
    return choice["text"], choice["logprobs"]["token_logprobs"], time.monotonic() - start


def _write_faults(sandbox: Sandbox, data: dict[str, object]) -> None:
    sandbox.state.mkdir(parents=True, exist_ok=True)
    tmp = sandbox.faults.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(sandbox.faults)
    time.sleep(0.4)  # FAKE_VLLM_FAULTS_POLL_S is 0.1 in the tests


def test_never_healthy_then_file_clears_it(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    proc = sandbox.start(["serve", str(checkpoints["a"])], FAKE_VLLM_NEVER_HEALTHY="1")
    proc.wait_port()
    assert proc.port is not None
    for _ in range(6):
        assert proc.health() == 503
        time.sleep(0.05)
    assert http(proc.port, "/v1/completions", {"prompt": "hi"}).status == 503
    _write_faults(sandbox, {"never_healthy": False})  # the file's keys win over the environment
    proc.wait_healthy(timeout=5)


def test_crash_after_seconds_for_one_port(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    port = free_port()
    _write_faults(sandbox, {"ports": {str(port): {"crash_after_s": 0.5}}})
    proc = sandbox.start(["serve", str(checkpoints["a"])], port=port)
    proc.wait_healthy()
    healthy_at = time.monotonic()
    assert proc.wait(timeout=10) == 1
    assert time.monotonic() - healthy_at >= 0.3
    assert "EngineDeadError: EngineCore encountered an issue" in proc.stderr()
    assert sandbox.process_table() == {}


def test_slow_and_wrong_answers_switch_on_and_off(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    proc = sandbox.start(["serve", str(checkpoints["a"])])
    proc.wait_healthy()
    text, logprobs, _ = _answer(proc)
    _write_faults(sandbox, {"slow_ms": 400, "wrong_answers": True})
    bad_text, bad_logprobs, took = _answer(proc)
    assert took >= 0.4
    assert (bad_text, bad_logprobs) != (text, logprobs)
    _write_faults(sandbox, {})
    assert _answer(proc)[:2] == (text, logprobs)
    assert proc.terminate() == 0
