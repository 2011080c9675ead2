"""Injected faults: never healthy, crash after N seconds, slow answers, wrong answers (env and fault file)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from tests.helpers import PATIENCE_S

from .conftest import Proc, Sandbox, free_port, http

Answer = tuple[str, list[float], float]


def _answer(proc: Proc) -> Answer:
    assert proc.port is not None
    start = time.monotonic()
    resp = http(proc.port, "/v1/completions", {"prompt": "Two plus two is", "max_tokens": 4, "logprobs": 1})
    assert resp.status == 200, resp.body
    choice = resp.json()["choices"][0]
    return choice["text"], choice["logprobs"]["token_logprobs"], time.monotonic() - start


def _write_faults(sandbox: Sandbox, data: dict[str, object]) -> None:
    """The server re-reads the file every FAKE_VLLM_FAULTS_POLL_S (0.1 s in the tests): callers wait for the
    change to show (on a busy machine the next read may come much later)."""
    sandbox.state.mkdir(parents=True, exist_ok=True)
    tmp = sandbox.faults.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(sandbox.faults)


def _answer_once(proc: Proc, shows: Callable[[Answer], bool]) -> Answer:
    """The first answer for which `shows` holds: the server has read the fault file written before."""
    deadline = time.monotonic() + PATIENCE_S
    while True:
        got = _answer(proc)
        if shows(got) or time.monotonic() > deadline:
            return got


def test_never_healthy_then_file_clears_it(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    proc = sandbox.start(["serve", str(checkpoints["a"])], FAKE_VLLM_NEVER_HEALTHY="1")
    proc.wait_port()
    assert proc.port is not None
    for _ in range(6):
        assert proc.health() == 503
        time.sleep(0.05)
    assert http(proc.port, "/v1/completions", {"prompt": "hi"}).status == 503
    _write_faults(sandbox, {"never_healthy": False})  # the file's keys win over the environment
    proc.wait_healthy()


def test_crash_after_seconds_for_one_port(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    port = free_port()
    _write_faults(sandbox, {"ports": {str(port): {"crash_after_s": 0.5}}})
    # The exit comes 0.5 s after the server turned healthy. It was not healthy yet when it was started, nor
    # when a probe got no 200 before it logged the crash (it answers 200 from healthy until the crash, and
    # logs the crash before it closes its port): the exit is at least 0.5 s after the last such probe
    # began, however late this test itself gets to run on a busy machine (it may even miss the 200s).
    unhealthy_at = time.monotonic()
    proc = sandbox.start(["serve", str(checkpoints["a"])], port=port)
    deadline = unhealthy_at + PATIENCE_S
    while True:
        probe_at = time.monotonic()
        if proc.health() == 200 or "EngineCore encountered a fatal error" in proc.stdout():
            break
        assert proc.alive() and probe_at < deadline, f"not healthy:\n{proc.stdout()}\n{proc.stderr()}"
        unhealthy_at = probe_at
        time.sleep(0.05)
    assert proc.wait() == 1
    assert time.monotonic() - unhealthy_at >= 0.5
    assert "EngineDeadError: EngineCore encountered an issue" in proc.stderr()
    assert sandbox.process_table() == {}


def test_slow_and_wrong_answers_switch_on_and_off(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    proc = sandbox.start(["serve", str(checkpoints["a"])])
    proc.wait_healthy()
    text, logprobs, _ = _answer(proc)
    _write_faults(sandbox, {"slow_ms": 400, "wrong_answers": True})
    bad_text, bad_logprobs, took = _answer_once(proc, lambda a: a[:2] != (text, logprobs))
    assert (bad_text, bad_logprobs) != (text, logprobs)
    assert took >= 0.4  # both faults come from the same read of the file
    _write_faults(sandbox, {})
    assert _answer_once(proc, lambda a: a[:2] == (text, logprobs))[:2] == (text, logprobs)
    assert proc.terminate() == 0
