#!/usr/bin/python
# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""ascend.npu.vllm_warmup: serve the warm-up set until latency settles, before a replica is routable.

vLLM-Ascend compiles kernels for each new shape on its first requests (high TTFT on the first request while
Triton / bisheng JIT-compile: https://github.com/vllm-project/vllm-ascend/issues/7193); the gateway adds a
replica only after this module passed, so users do not pay that time. The set comes from the plan
(planning/warmup.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: vllm_warmup
short_description: Warm a vLLM-Ascend API server up until its latency settles
description:
  - Sends every request of I(requests) in order, one round after another, and times each.
  - Latency has settled when two rounds in a row took at most I(settle_ratio) times each other's total
    (or 50 ms per request more). A round that still compiles a shape is seconds slower than one that does
    not, while the scheduling noise of single fast requests averages out over the round.
  - Stops at the settled round, or after I(max_rounds). The slowest request of the last round must finish
    within I(latency_budget_s); a replica whose latency has not settled but that serves every shape within
    the budget passes (and says it did not settle).
  - Fails (gate C(warmup)) on a request that does not answer 200 with an answer, and on a last round whose
    slowest request is over the budget.
  - The API key is read from I(api_key_file) on the host, never passed as a parameter.
  - Changes nothing; in check mode it sends nothing.
options:
  url:
    description: Base URL of the API server (http://ADDRESS:PORT).
    type: str
    required: true
  model:
    description: Served model name.
    type: str
    required: true
  requests:
    description:
      - The warm-up set, each with C(name), C(endpoint) (C(completion) or C(chat)) and C(body) (the request
        body without the model); a completion with C(prompt_words) N gets a prompt of N words.
    type: list
    elements: dict
    required: true
  max_rounds:
    description: Rounds at most (at least 2); the last one is held to the budget.
    type: int
    default: 5
  settle_ratio:
    description: The largest ratio between the totals of two rounds in a row that counts as settled.
    type: float
    default: 1.25
  latency_budget_s:
    description: Seconds the slowest request of the last round may take.
    type: float
    default: 30
  timeout_s:
    description: Seconds one request may take.
    type: int
    default: 600
  api_key_file:
    description: Host file holding the API key (Bearer token), sent on every request.
    type: path
  label:
    description: Prefix of the messages (e.g. "replica r1").
    type: str
    default: ""
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
author: ascend-orchestrator
"""

EXAMPLES = r"""
- name: Warm the new replica up
  ascend.npu.vllm_warmup:
    url: http://10.0.0.2:8000
    model: deepseek-r1
    requests: "{{ rollout_warmup.requests }}"
    max_rounds: 5
    api_key_file: /etc/vllm/api-key
"""

RETURN = r"""
gates:
  description: One entry, gate C(warmup) - ok, seconds, expected, seen.
  returned: always
  type: list
  elements: dict
rounds:
  description: Per round, the seconds of each request by name.
  returned: always
  type: list
  elements: dict
seconds:
  description: Seconds the warm-up took.
  returned: always
  type: float
label:
  description: I(label), for the gate lines of the apply output.
  returned: always
  type: str
"""

import json
import time
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ascend.npu.plugins.module_utils.http import http

PATHS = {"completion": "/v1/completions", "chat": "/v1/chat/completions"}
WORD = "hello"  # one token for the usual BPE vocabularies
SLACK_S = 0.05  # below this, two times count as equal (scheduling noise of a fast request)


def answered(body: str, stream: bool) -> bool:
    if stream:
        return "data: [DONE]" in body
    try:
        data = json.loads(body)
    except ValueError:
        return False
    return isinstance(data, dict) and bool(data.get("choices"))


def settled(now: dict[str, float], before: dict[str, float], ratio: float) -> bool:
    """Two rounds whose totals are within `ratio` of each other (or SLACK_S per request apart)."""
    a, b = sum(now.values()), sum(before.values())
    return abs(a - b) <= SLACK_S * len(now) or max(a, b) <= ratio * min(a, b)


class Warmup:
    def __init__(self, p: dict[str, Any], key: str | None) -> None:
        self.p, self.key = p, key
        self.url = str(p["url"]).rstrip("/")
        self.rounds: list[dict[str, float]] = []
        self.why = ""

    def round(self) -> dict[str, float] | None:
        times: dict[str, float] = {}
        for req in self.p["requests"]:
            body = dict(req["body"], model=self.p["model"])
            if req.get("prompt_words"):
                body["prompt"] = " ".join([WORD] * int(req["prompt_words"]))
            start = time.monotonic()
            status, text = http(f"{self.url}{PATHS[req['endpoint']]}", self.key, body, self.p["timeout_s"])
            times[req["name"]] = round(time.monotonic() - start, 3)
            if status != 200 or not answered(text, bool(body.get("stream"))):
                self.why = (
                    f"warm-up request '{req['name']}' to {self.url} answered HTTP {status or 'nothing'}: "
                    f"{text[:200]} (see the container's log)"
                )
                return None
        return times

    def run(self) -> tuple[bool, str]:
        """(ok, what was seen)."""
        done = False
        for _ in range(int(self.p["max_rounds"])):
            times = self.round()
            if times is None:
                return False, "a request failed"
            self.rounds.append(times)
            done = len(self.rounds) >= 2 and settled(times, self.rounds[-2], float(self.p["settle_ratio"]))
            if done:
                break
        times = self.rounds[-1]
        slowest = max(times, key=lambda k: times[k])
        n = len(self.rounds)
        state = f"settled after {n} rounds" if done else f"not settled after {n} rounds"
        seen = f"{state}, slowest '{slowest}' {times[slowest]:.2f} s"
        if times[slowest] > float(self.p["latency_budget_s"]):
            totals = " -> ".join(f"{sum(r.values()):.2f} s" for r in self.rounds)
            hint = (
                "raise rollout.gates.latency_budget_s if that is its steady latency"
                if done
                else "raise rollout.warmup.max_rounds, or see the container's log for recompiles"
            )
            self.why = (
                f"{self.url}: after {n} warm-up rounds (round totals {totals}) '{slowest}' still takes "
                f"{times[slowest]:.2f} s, over the latency budget of {self.p['latency_budget_s']} s "
                f"(rollout.gates.latency_budget_s): {hint}"
            )
            return False, seen
        return True, seen


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str", "required": True},
            "model": {"type": "str", "required": True},
            "requests": {"type": "list", "elements": "dict", "required": True},
            "max_rounds": {"type": "int", "default": 5},
            "settle_ratio": {"type": "float", "default": 1.25},
            "latency_budget_s": {"type": "float", "default": 30},
            "timeout_s": {"type": "int", "default": 600},
            "api_key_file": {"type": "path"},
            "label": {"type": "str", "default": ""},
        },
        supports_check_mode=True,
    )
    p = module.params
    if module.check_mode:
        module.exit_json(changed=False, gates=[], rounds=[], seconds=0.0, label=p["label"])
    if p["max_rounds"] < 2:
        module.fail_json(msg="max_rounds must be at least 2: settling compares two rounds")
    key = None
    if p["api_key_file"]:
        with open(p["api_key_file"], encoding="utf-8") as f:
            key = f.read().strip()
        module.no_log_values.add(key)
    start = time.monotonic()
    warm = Warmup(p, key)
    ok, seen = warm.run()
    seconds = round(time.monotonic() - start, 2)
    expected = f"slowest <= {p['latency_budget_s']} s after at most {p['max_rounds']} rounds"
    gate = {"gate": "warmup", "ok": ok, "seconds": seconds, "expected": expected, "seen": seen}
    if ok:
        module.exit_json(changed=False, gates=[gate], rounds=warm.rounds, seconds=seconds, label=p["label"])
    module.fail_json(
        msg=f"{p['label'] or 'warm-up'}: gate warmup failed: {warm.why}",
        gates=[gate],
        failed_gate="warmup",
        rounds=warm.rounds,
        seconds=seconds,
        label=p["label"],
    )


if __name__ == "__main__":
    main()
