"""Startup progress: the phase a starting server is in, read from its log (module_utils/vllm_startup.py),
checked against verbatim lines of real vLLM / vLLM-Ascend logs; the fake vLLM's start walks through the same
phases in order; the gate returns `pending` with the phase while a server starts and the next call goes on
with the same wait (its timeout and the health gate's seconds count from the first call)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible_collections.ascend.npu.plugins.module_utils.vllm_startup import Anchor, startup_phase
from ansible_collections.ascend.npu.plugins.modules import vllm_gate as g

from orchestrator.runner.rollout import startup_line
from tests.helpers import PATIENCE_S

from .conftest import Sandbox
from .test_vllm_gate import params

VERBATIM = yaml.safe_load(
    (Path(__file__).parents[2] / "data" / "startup" / "verbatim-lines.yaml").read_text(encoding="utf-8")
)


@pytest.mark.parametrize("case", VERBATIM, ids=[c["line"][:60] for c in VERBATIM])
def test_each_verbatim_line_names_its_phase(case: dict[str, Any]) -> None:
    assert startup_phase([case["line"]]) == case["phase"]


def test_the_last_phase_line_wins_and_other_lines_do_not_reset_it() -> None:
    lines = [c["line"] for c in VERBATIM]
    assert startup_phase(lines) == "API server up, waiting for /health"
    # a progress bar redraws with carriage returns: one log line, many updates, the last one counts
    bar = "Loading safetensors checkpoint shards:   0% Completed | 0/163\rLoading safetensors checkpoint "
    bar += "shards:  45% Completed | 74/163 [00:30<00:40, 2.1it/s]"
    noise = VERBATIM[-1]["line"]
    assert startup_phase([bar, noise]) == "loading weights: 74/163 shards (45%)"
    assert startup_phase([noise, "plain text"]) is None


def test_the_fake_starts_through_the_phases_of_a_real_start_in_order(
    sandbox: Sandbox, checkpoints: dict[str, Path]
) -> None:
    proc = sandbox.start(
        ["serve", str(checkpoints["a"]), "--served-model-name", "sim", "--max-num-seqs", "8"],
        FAKE_VLLM_INIT_S="0",
        FAKE_VLLM_COMPILE_S="0.1",
        FAKE_VLLM_CAPTURE_S="0.1",
    )
    proc.wait_healthy()
    lines = proc.stdout().splitlines() + proc.stderr().splitlines()  # uvicorn logs to stderr, last
    seen = [p for p in (startup_phase([line]) for line in lines) if p is not None]
    steps = [
        ("loading the model",),
        ("loading weights:",),
        ("weights loaded in",),
        ("compiling graphs", "compiled graphs loaded"),
        ("graphs compiled in",),
        ("capturing ACL graphs",),
        ("graphs captured in",),
        ("API server starting",),
        ("API server up",),
    ]
    walked = [next(i for i, prefixes in enumerate(steps) if p.startswith(prefixes)) for p in seen]
    assert [s for i, s in enumerate(walked) if i == 0 or walked[i - 1] != s] == list(range(len(steps))), seen
    # max_num_seqs 8: the stand-in for vLLM's default sizes captures 16, 8, 4, 2, 1
    assert "capturing ACL graphs (PIECEWISE, 5 sizes)" in seen
    assert "capturing ACL graphs (mixed prefill-decode, PIECEWISE): 5/5" in seen


def test_enforce_eager_captures_no_graph(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    proc = sandbox.start(
        ["serve", str(checkpoints["a"]), "--served-model-name", "sim", "--enforce-eager"],
        FAKE_VLLM_INIT_S="0",
        FAKE_VLLM_COMPILE_S="0",
    )
    proc.wait_healthy()
    out = proc.stdout()
    assert "torch.compile takes" in out  # compiled, not captured
    assert "Starting to capture" not in out and "Capturing ACL graphs" not in out
    assert "Graph capturing finished" not in out


def test_a_gate_returns_pending_while_the_server_starts_and_the_next_call_goes_on(
    sandbox: Sandbox, checkpoints: dict[str, Path], tmp_path: Path
) -> None:
    proc = sandbox.start(
        ["serve", str(checkpoints["a"]), "--served-model-name", "sim"], FAKE_VLLM_INIT_S="1.5"
    )
    assert proc.port is not None
    # a poll interval longer than progress_s: the call still returns on time
    p = params(proc.port, progress_s=0.3, smoke_prompts=1, interval_s=5.0)
    state = str(tmp_path / "state")
    first = Anchor(state, p["url"], "same", fresh_s=60)
    assert not first.resumed
    t0 = time.monotonic()
    with pytest.raises(g.Pending):
        g.Gates(p, None, first.t0).run()
    assert time.monotonic() - t0 < 1.5
    first.keep("same")
    calls = 1
    while True:  # as Ansible's until loop calls the module again
        anchor = Anchor(state, p["url"], "same", fresh_s=60)
        assert anchor.resumed and anchor.t0 == first.t0
        try:
            gates = g.Gates(p, None, anchor.t0)
            assert gates.run()
            break
        except g.Pending:
            anchor.keep("same")
            calls += 1
            assert calls * 0.3 < PATIENCE_S
    anchor.done()
    health = gates.results[0]
    assert health["gate"] == "health" and health["ok"]
    # counted from the first call: at least the server's 1.5 s of engine start-up
    assert health["seconds"] >= 1.5 - 0.05, health
    assert not Anchor(state, p["url"], "same", fresh_s=60).resumed  # done: the next wait starts anew


def test_an_anchor_of_another_container_or_too_old_starts_anew(tmp_path: Path) -> None:
    a = Anchor(str(tmp_path), "vllm-r0", "id-1", fresh_s=60)
    a.keep("id-1")
    assert not Anchor(str(tmp_path), "vllm-r0", "id-2", fresh_s=60).resumed  # recreated container
    saved = json.loads((tmp_path / "vllm-r0.json").read_text(encoding="utf-8"))
    saved["last"] = time.time() - 120
    (tmp_path / "vllm-r0.json").write_text(json.dumps(saved), encoding="utf-8")
    assert not Anchor(str(tmp_path), "vllm-r0", "id-1", fresh_s=60).resumed  # an interrupted wait
    assert not Anchor(str(tmp_path), None, "id-1", fresh_s=60).resumed  # nothing to keep


def test_the_progress_line_names_replica_container_time_and_phase() -> None:
    res = {
        "pending": True,
        "label": "batch 1/2 replica r0",
        "container": "vllm-r0",
        "waited_s": 95.4,
        "progress": "loading weights: 74/163 shards (45%)",
    }
    line = startup_line(res)
    assert line == "batch 1/2 replica r0: vllm-r0 starting for 95 s: loading weights: 74/163 shards (45%)"
    assert startup_line({**res, "pending": False}) is None
