#!/usr/bin/python
# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""ascend.npu.vllm_gate: the rollout gates of one vLLM replica, in order (read-only)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: vllm_gate
short_description: Health gates of a vLLM replica after a (re)start, in order
description:
  - Runs the rollout health gates against a replica's head, in order, stopping at the first that fails -
    C(health) (C(GET /health) answers 200 within I(timeout_s), failing at once when the container stops),
    C(models) (C(GET /v1/models) lists I(model)), C(completion) (each of I(smoke_prompts) completions at
    temperature 0 returns tokens within I(latency_budget_s) seconds, and the same text as the I(baseline)
    when one is given), C(accuracy) (top logprobs of I(prompts) at temperature 0 within I(tolerance),
    relative, of the I(baseline); skipped without one), C(soak) (after I(soak_s) seconds /health is still
    200 and the container still runs).
  - Returns per gate C({gate, ok, seconds, expected, seen}) and the I(prompts)' answers (C(sample)), which
    the caller records as the baseline of a first release.
  - The API key is read from I(api_key_file) on the host, never passed as a parameter.
  - Changes nothing; in check mode it reports nothing run.
options:
  url:
    description: Base URL of the replica's head (http://ADDRESS:PORT).
    type: str
    required: true
  container:
    description: The head's container on this host (its state is checked between polls; omit to skip).
    type: str
  model:
    description: Served model name.
    type: str
    required: true
  timeout_s:
    description:
      - Seconds the health and models gates may take together (from the last start's time on this server, else
        from the weight size and read rate).
    type: int
    required: true
  timeout_source:
    description: Where I(timeout_s) came from, shown in the health gate's expectation.
    type: str
    default: ""
  interval_s:
    description: Seconds between two polls.
    type: float
    default: 1.0
  api_key_file:
    description: Host file holding the API key (Bearer token).
    type: path
  latency_budget_s:
    description: Max seconds one smoke completion may take.
    type: float
    default: 30.0
  smoke_prompts:
    description: Completions the completion gate sends (taken from I(prompts) in turn).
    type: int
    default: 3
  max_error_rate:
    description:
      - Share of the smoke completions that may fail (an HTTP error, an empty answer, over
        I(latency_budget_s)) with the completion gate still passing; 0 fails it at the first failure.
      - An answer other than the I(baseline)'s always fails it.
    type: float
    default: 0.0
  prompts:
    description: Fixed prompts of the completion and accuracy gates.
    type: list
    elements: str
    required: true
  max_tokens:
    description: Tokens per gate completion.
    type: int
    default: 8
  top_logprobs:
    description: Top logprobs per token the accuracy gate compares.
    type: int
    default: 5
  baseline:
    description: The recorded answers of these weights (a previous C(sample)); null on a first release.
    type: dict
  tolerance:
    description: Max relative deviation of a logprob from the baseline.
    type: float
    default: 0.005
  soak_s:
    description: Seconds to wait before the last /health check.
    type: float
    default: 0
  label:
    description: Echoed back (e.g. "batch 1/2 replica r0"), for the progress output.
    type: str
    default: ""
  log_lines:
    description: Log lines of I(container) returned on failure.
    type: int
    default: 50
  progress_s:
    description:
      - Seconds after which a call whose health gate has not passed yet returns C(pending) with the startup
        phase read from I(container)'s log (C(progress)) instead of waiting on; the task repeats the call
        (C(until)) and the wait goes on from where it was (I(timeout_s) and the health gate's seconds count
        from the first call, kept in I(state_dir)). 0 waits in one call.
    type: float
    default: 0
  state_dir:
    description: Host directory where a wait that spans calls keeps its start (see I(progress_s)).
    type: path
    default: /run/ascend-vllm-gate
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
author: ascend-orchestrator
"""

EXAMPLES = r"""
- name: Gates of the replica
  ascend.npu.vllm_gate:
    url: http://10.0.0.1:8000
    container: vllm-r1
    model: deepseek-r1
    timeout_s: 600
    prompts: ["The capital of France is"]
"""

RETURN = r"""
gates:
  description: One entry per gate run, in order - gate, ok, seconds, expected, seen.
  returned: always
  type: list
  elements: dict
sample:
  description: Per prompt the temperature-0 answer (text, tokens, top_logprobs per token).
  returned: success
  type: dict
pending:
  description: True when the call returned before the health gate passed (I(progress_s)); call again.
  returned: always
  type: bool
progress:
  description: The startup phase the container's log names, e.g. C(loading weights - 12/163 shards).
  returned: when pending
  type: str
waited_s:
  description: Seconds since the wait's first call (when pending).
  returned: when pending
  type: float
container:
  description: I(container), echoed back with C(progress) (when pending).
  returned: when pending
  type: str
log_tail:
  description: The container's last log lines (on failure).
  returned: failure
  type: list
  elements: str
"""

import json
import math
import time
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ascend.npu.plugins.module_utils.docker_probe import (
    container_id,
    container_state,
    log_tail,
)
from ansible_collections.ascend.npu.plugins.module_utils.http import http
from ansible_collections.ascend.npu.plugins.module_utils.vllm_startup import Anchor, startup_phase

PHASE_LOG_LINES = 400  # enough to reach back past a burst of warnings to the last phase line


class Pending(Exception):
    """The health gate has not passed when the call should return (progress_s)."""


def lists_model(body: str, model: str) -> bool:
    try:
        data = json.loads(body)
    except ValueError:
        return False
    return isinstance(data, dict) and any(
        isinstance(m, dict) and m.get("id") == model for m in data.get("data") or []
    )


def answer(body: str) -> dict[str, Any] | None:
    """text, tokens and top_logprobs (list of {token: logprob}) of a /v1/completions answer."""
    try:
        choice = json.loads(body)["choices"][0]
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    lp = choice.get("logprobs") or {}
    return {
        "text": str(choice.get("text") or ""),
        "tokens": list(lp.get("tokens") or []),
        "top_logprobs": [dict(t or {}) for t in lp.get("top_logprobs") or []],
    }


def compare(baseline: dict[str, Any], seen: dict[str, Any], tolerance: float) -> str | None:
    """None when every top logprob of ``seen`` is within ``tolerance`` (relative) of the baseline's for the
    same prompt, position and token; else what differs first."""
    for prompt, base in sorted(baseline.items()):
        got = seen.get(prompt)
        if got is None:
            return f"no answer to {prompt!r}"
        if got["tokens"] != base.get("tokens"):
            return f"tokens of {prompt!r} {got['tokens']} (baseline {base.get('tokens')})"
        for pos, (want, have) in enumerate(zip(base.get("top_logprobs") or [], got["top_logprobs"])):
            for token, lp in want.items():
                if token not in have:
                    return f"token {pos} of {prompt!r}: {token!r} not in the top logprobs"
                dev = abs(float(have[token]) - float(lp)) / max(abs(float(lp)), 1e-9)
                if dev > tolerance + 1e-9 and abs(float(have[token]) - float(lp)) > 1e-6:
                    return (
                        f"token {pos} of {prompt!r} {token!r}: logprob {have[token]} vs baseline {lp} "
                        f"({dev:.2%} off)"
                    )
    return None


class Gates:
    """Runs the gates in order; ``results`` holds one entry per gate run."""

    def __init__(self, p: dict[str, Any], key: str | None, t0: float | None = None) -> None:
        self.p = p
        self.key = key
        self.base = str(p["url"]).rstrip("/")
        self.results: list[dict[str, Any]] = []
        self.sample: dict[str, Any] = {}
        # the health wait counts from t0 (wall clock: a first call's start, see Anchor), else from now
        self.started = time.monotonic() - (time.time() - t0 if t0 is not None else 0.0)
        progress = float(p.get("progress_s") or 0)
        self.return_after = time.monotonic() + progress if progress > 0 else None
        self.last_seen = ""

    def _record(self, gate: str, ok: bool, start: float, expected: str, seen: str) -> bool:
        self.results.append(
            {
                "gate": gate,
                "ok": ok,
                "seconds": round(time.monotonic() - start, 2),
                "expected": expected,
                "seen": seen,
            }
        )
        return ok

    def _complete(self, prompt: str, logprobs: int | None) -> tuple[int, str]:
        body: dict[str, Any] = {
            "model": self.p["model"],
            "prompt": prompt,
            "max_tokens": self.p["max_tokens"],
            "temperature": 0,
        }
        if logprobs:
            body["logprobs"] = logprobs
        return http(
            f"{self.base}/v1/completions", self.key, body, timeout=float(self.p["latency_budget_s"]) + 5
        )

    def _poll(self, gate: str, expected: str, deadline: float, probe: Any) -> bool:
        start = self.started if gate == "health" else time.monotonic()
        last = "no answer yet"
        while True:
            state = container_state(self.p.get("container"))
            if state != "running":
                return self._record(
                    gate, False, start, expected, f"container {self.p['container']} is {state}"
                )
            ok, last = probe()
            if ok:
                return self._record(gate, True, start, expected, last)
            if time.monotonic() >= deadline:
                return self._record(gate, False, start, expected, f"{last} after {self.p['timeout_s']} s")
            pause = float(self.p["interval_s"])
            if gate == "health" and self.return_after is not None:
                if time.monotonic() >= self.return_after:
                    self.last_seen = last
                    raise Pending(last)
                # on time, whatever the poll interval
                pause = min(pause, max(self.return_after - time.monotonic(), 0.05))
            time.sleep(pause)

    def health(self, deadline: float) -> bool:
        def probe() -> tuple[bool, str]:
            status, _ = http(f"{self.base}/health", timeout=5)
            return status == 200, f"/health {status or 'not listening'}"

        source = self.p.get("timeout_source") or ""
        expected = f"/health 200 within {self.p['timeout_s']} s ({source})" if source else "/health 200"
        return self._poll("health", expected, deadline, probe)

    def models(self, deadline: float) -> bool:
        def probe() -> tuple[bool, str]:
            status, body = http(f"{self.base}/v1/models", self.key, timeout=5)
            ok = status == 200 and lists_model(body, self.p["model"])
            return ok, f"/v1/models {status}" + ("" if ok or status != 200 else f" without {self.p['model']}")

        return self._poll("models", f"/v1/models lists {self.p['model']}", deadline, probe)

    def completion(self) -> bool:
        start = time.monotonic()
        budget = float(self.p["latency_budget_s"])
        prompts = list(self.p["prompts"])
        base = self.p.get("baseline") or {}
        sent = max(int(self.p["smoke_prompts"]), 1 if base else 0)
        rate = float(self.p.get("max_error_rate") or 0.0)
        allowed = math.floor(rate * sent + 1e-9)  # failures the error budget takes
        expected = f"tokens within {budget:g} s" + (", the baseline's text" if base else "")
        if allowed:
            expected += f", at most {allowed} of {sent} failed (max_error_rate {rate:g})"
        failed: list[str] = []
        for i in range(sent):
            prompt = prompts[i % len(prompts)]
            t0 = time.monotonic()
            status, body = self._complete(prompt, None)
            took = time.monotonic() - t0
            got = answer(body) if status == 200 else None
            if got is None or not got["text"]:
                failed.append(f"HTTP {status}: {body[:200]}")
            elif took > budget:
                failed.append(f"{took:.1f} s for {prompt!r}")
            elif (want := (base.get(prompt) or {}).get("text")) is not None and got["text"] != want:
                # another answer than the previous release's is wrong, not flaky: no budget for it
                seen = f"{got['text']!r} for {prompt!r} (baseline {want!r})"
                return self._record("completion", False, start, expected, seen)
            if len(failed) > allowed:
                seen = failed[0] if not allowed else f"{len(failed)} of {sent} failed, first: {failed[0]}"
                return self._record("completion", False, start, expected, seen)
        if failed:
            seen = f"{len(failed)} of {sent} failed, within the error budget; first: {failed[0]}"
            return self._record("completion", True, start, expected, seen)
        return self._record("completion", True, start, expected, "answers as expected")

    def accuracy(self) -> bool:
        start = time.monotonic()
        for prompt in self.p["prompts"]:
            status, body = self._complete(prompt, int(self.p["top_logprobs"]))
            got = answer(body) if status == 200 else None
            if got is None:
                return self._record("accuracy", False, start, "an answer with logprobs", f"HTTP {status}")
            self.sample[prompt] = got
        tol = float(self.p["tolerance"])
        base = self.p.get("baseline")
        if not base:
            return self._record("accuracy", True, start, "no baseline yet", "recorded as the baseline")
        diff = compare(base, self.sample, tol)
        expected = f"top logprobs within {tol:.2%} of the baseline"
        return self._record("accuracy", diff is None, start, expected, diff or "within tolerance")

    def soak(self) -> bool:
        start = time.monotonic()
        time.sleep(float(self.p["soak_s"]))
        state = container_state(self.p.get("container"))
        status, _ = http(f"{self.base}/health", timeout=5)
        seen = f"container {state}, /health {status or 'not listening'}"
        ok = state == "running" and status == 200
        return self._record("soak", ok, start, f"still healthy after {self.p['soak_s']:g} s", seen)

    def run(self) -> bool:
        deadline = self.started + int(self.p["timeout_s"])
        return (
            self.health(deadline)
            and self.models(deadline)
            and self.completion()
            and self.accuracy()
            and (float(self.p["soak_s"]) <= 0 or self.soak())
        )


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str", "required": True},
            "container": {"type": "str"},
            "model": {"type": "str", "required": True},
            "timeout_s": {"type": "int", "required": True},
            "timeout_source": {"type": "str", "default": ""},
            "interval_s": {"type": "float", "default": 1.0},
            "api_key_file": {"type": "path"},
            "latency_budget_s": {"type": "float", "default": 30.0},
            "smoke_prompts": {"type": "int", "default": 3},
            "max_error_rate": {"type": "float", "default": 0.0},
            "prompts": {"type": "list", "elements": "str", "required": True},
            "max_tokens": {"type": "int", "default": 8},
            "top_logprobs": {"type": "int", "default": 5},
            "baseline": {"type": "dict"},
            "tolerance": {"type": "float", "default": 0.005},
            "soak_s": {"type": "float", "default": 0},
            "label": {"type": "str", "default": ""},
            "log_lines": {"type": "int", "default": 50},
            "progress_s": {"type": "float", "default": 0},
            "state_dir": {"type": "path", "default": "/run/ascend-vllm-gate"},
        },
        supports_check_mode=True,
    )
    p = module.params
    if module.check_mode:
        module.exit_json(changed=False, pending=False, gates=[], sample={}, label=p["label"])
    key = None
    if p["api_key_file"]:
        with open(p["api_key_file"], encoding="utf-8") as f:
            key = f.read().strip()
        module.no_log_values.add(key)
    progress = float(p["progress_s"] or 0)
    ident = container_id(p.get("container")) or p["url"]
    # a wait that spans calls: the next call resumes within a few of its own lengths, else it starts anew
    key_name = (p.get("container") or p["url"]) if progress > 0 else None
    anchor = Anchor(p["state_dir"], key_name, ident, 3 * progress + 60)
    gates = Gates(p, key, anchor.t0)
    try:
        passed = gates.run()
    except Pending:
        anchor.keep(ident)
        waited = round(time.time() - anchor.t0, 1)
        phase = startup_phase(log_tail(p.get("container"), PHASE_LOG_LINES))
        phase = phase or "starting (no phase in its log yet)"
        module.exit_json(
            changed=False,
            pending=True,
            progress=phase,
            waited_s=waited,
            container=p.get("container") or "",
            gates=[],
            label=p["label"],
            msg=f"{p['label'] or p['url']}: starting for {waited:.0f} s: {phase} ({gates.last_seen})",
        )
    anchor.done()
    if passed:
        module.exit_json(
            changed=False, pending=False, gates=gates.results, sample=gates.sample, label=p["label"]
        )
    bad = gates.results[-1]
    module.fail_json(
        pending=False,
        msg=f"{p['label'] or p['url']}: gate {bad['gate']} failed: expected {bad['expected']}, "
        f"seen {bad['seen']}",
        gates=gates.results,
        failed_gate=bad["gate"],
        label=p["label"],
        log_tail=log_tail(p.get("container"), p["log_lines"]),
    )


if __name__ == "__main__":
    main()
