#!/usr/bin/python
# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""ascend.npu.vllm_pd_roundtrip: one prefill -> decode round trip through a PD pair (read-only).

Sources (vllm-ascend at tag v0.23.0): examples/disaggregated_prefill_v1/load_balance_proxy_server_example.py
(``build_prefill_request``: the prefill request; vllm-router's ``--vllm-pd-disaggregation`` sends it too)
and vllm_ascend/distributed/kv_transfer/kv_p2p/mooncake_connector.py (``request_finished`` returns the
kv_transfer_params; the decode pulls the blocks and tells the prefill, which frees them, else after
``VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT`` s). Metrics: vLLM's vllm/v1/metrics/loggers.py and stats.py
(``PromptTokenStats``) at v0.23.0.
"""

from __future__ import annotations

DOCUMENTATION = r"""
module: vllm_pd_roundtrip
short_description: One prefill -> decode round trip through a vLLM-Ascend PD pair (Mooncake connector)
description:
  - Waits for C(GET /health) 200 on both instances, sends a completion with
    C(kv_transfer_params.do_remote_decode) and C(max_tokens) 1 to the prefill, then the original request
    with the prefill's C(kv_transfer_params) to the decode, as vllm-ascend's disaggregated prefill proxy does.
  - Gates, in order, stopping at the first that fails - C(pd_prefill) (the prefill answers 200 with
    C(kv_transfer_params) whose C(remote_engine_id) is I(prefill_engine_id)), C(pd_decode) (the decode
    answers 200 with text; a 500 is a failed KV pull), C(pd_kv_pulled) (the decode's
    C(vllm:prompt_tokens_by_source_total{source="external_kv_transfer"}) grew by the prompt's N tokens, N-1
    counting as a full pull as vLLM recomputes the last one; I(check) decode or both), C(pd_kv_freed) (the
    prefill's C(vllm:kv_cache_usage_perc) is back to its value before the round trip within
    I(free_timeout_s); I(check) prefill or both). A /health that never answers 200 is recorded
    as gate C(pd_health).
  - With I(partners), the partner of the gated side (the decode when I(check) is C(prefill), the prefill when
    it is C(decode)) is the first of them whose C(/health) answers 200 at once, so a partner rank that is
    down or restarting does not fail the gated instance; when none answers, the wait is on the given one.
  - The API key is read from I(api_key_file) on the host, never passed as a parameter.
  - Changes nothing; in check mode it reports nothing run.
options:
  prefill_url:
    description: Base URL of the prefill instance (http://ADDRESS:PORT).
    type: str
    required: true
  decode_url:
    description: Base URL of the decode instance.
    type: str
    required: true
  model:
    description: Served model name.
    type: str
    required: true
  prefill_engine_id:
    description: The plan's engine id of the prefill engine (with vLLM's C(_dp<local rank>) suffix under DP).
    type: str
    required: true
  check:
    description: Which side is being gated (C(prefill) skips C(pd_kv_pulled), C(decode) skips C(pd_kv_freed)).
    type: str
    choices: [prefill, decode, both]
    default: both
  partners:
    description:
      - Ranks of the other pool to pair with, in order of preference (the given partner first), each with
        C(url) and C(engine_id) (the engine id a prefill rank reports). Ignored when I(check) is C(both).
    type: list
    elements: dict
    default: []
  api_key_file:
    description: Host file holding the API key (Bearer token), sent on every request.
    type: path
  timeout_s:
    description: Seconds the health wait and both requests may take together.
    type: int
    default: 60
  free_timeout_s:
    description: Seconds the prefill may take to free the KV blocks after the decode pulled them.
    type: int
    default: 10
  prompt:
    description: Prompt of the round trip (shorter than one KV block, so no prefix cache hit can serve it).
    type: str
    default: The capital of France is
  max_tokens:
    description: Tokens the decode generates.
    type: int
    default: 8
  label:
    description: Prefix of the messages (e.g. "pd pair 1").
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
- name: PD round trip through the new prefill
  ascend.npu.vllm_pd_roundtrip:
    prefill_url: http://10.0.0.2:7100
    decode_url: http://10.0.0.3:7100
    model: deepseek-r1
    prefill_engine_id: p0_dp0
    check: prefill
    api_key_file: /etc/vllm/api-key
"""

RETURN = r"""
gates:
  description: One entry per gate run, in order - gate, ok, seconds, expected, seen.
  returned: always
  type: list
  elements: dict
partner:
  description: The URL of the partner the round trip used (one of I(partners), or the given one).
  returned: always
  type: str
kv_transfer_params:
  description: The kv_transfer_params the prefill answered (engine id, host, port, block ids).
  returned: when the prefill answered them
  type: dict
seconds:
  description: Seconds the round trip took.
  returned: always
  type: float
failed_gate:
  description: The gate that failed.
  returned: failure
  type: str
"""

import json
import re
import time
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ascend.npu.plugins.module_utils.http import http

PULLED = "vllm:prompt_tokens_by_source_total"
USAGE = "vllm:kv_cache_usage_perc"
EPSILON = 1e-6  # below one block of any real KV cache
SAMPLE = re.compile(r"^([A-Za-z_:][\w:]*)(?:\{([^}]*)\})?\s+(\S+)", re.M)


def metric(text: str, name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels`` (Prometheus text format)."""
    total = 0.0
    for m in SAMPLE.finditer(text):
        have = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        if m.group(1) == name and all(have.get(k) == v for k, v in labels.items()):
            try:
                total += float(m.group(3))
            except ValueError:
                continue
    return total


def as_json(body: str) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    return data if isinstance(data, dict) else {}


class RoundTrip:
    """Runs the gates in order; ``results`` holds one entry per gate run, ``why`` the failure's sentence."""

    def __init__(self, p: dict[str, Any], key: str | None) -> None:
        self.p, self.key = p, key
        self.prefill = str(p["prefill_url"]).rstrip("/")
        self.decode = str(p["decode_url"]).rstrip("/")
        self.engine = str(p["prefill_engine_id"])
        self.results: list[dict[str, Any]] = []
        self.kv_transfer_params: dict[str, Any] = {}
        self.why = ""
        self.deadline = 0.0

    def _record(self, gate: str, ok: bool, start: float, expected: str, seen: str, why: str = "") -> bool:
        self.results.append(
            {
                "gate": gate,
                "ok": ok,
                "seconds": round(time.monotonic() - start, 2),
                "expected": expected,
                "seen": seen,
            }
        )
        self.why = why
        return ok

    def _left(self) -> float:
        return self.deadline - time.monotonic()

    def _metrics(self, base: str) -> str:
        status, body = http(f"{base}/metrics", self.key, timeout=min(self._left(), 10.0))
        return body if status == 200 else ""

    @property
    def partner(self) -> str:
        return self.decode if self.p["check"] == "prefill" else self.prefill

    def choose_partner(self) -> None:
        """The first of ``partners`` whose /health answers 200 now becomes the gated side's partner."""
        check = self.p["check"]
        if check == "both":
            return
        for alt in self.p.get("partners") or []:
            url = str(alt["url"]).rstrip("/")
            status, _ = http(f"{url}/health", None, timeout=min(self._left(), 3.0))
            if status == 200:
                if check == "prefill":
                    self.decode = url
                else:
                    self.prefill, self.engine = url, str(alt["engine_id"])
                return

    def health(self) -> bool:
        self.choose_partner()
        start = time.monotonic()
        waiting = [self.prefill, self.decode]
        last = ""
        while waiting:
            status, _ = http(f"{waiting[0]}/health", None, timeout=min(self._left(), 5.0))
            if status == 200:
                waiting.pop(0)
                continue
            last = f"{waiting[0]}/health {status or 'not listening'}"
            if self._left() <= 0:
                why = f"{last} after {self.p['timeout_s']} s: start both instances (see their logs) first"
                return self._record("pd_health", False, start, "/health 200 on both", last, why)
            time.sleep(0.2)
        return True

    def run(self) -> bool:
        self.deadline = time.monotonic() + int(self.p["timeout_s"])
        if not self.health():
            return False
        check = self.p["check"]
        pulled = usage = 0.0
        if check in ("decode", "both"):
            pulled = metric(self._metrics(self.decode), PULLED, source="external_kv_transfer")
        if check in ("prefill", "both"):
            usage = metric(self._metrics(self.prefill), USAGE)
        request = {"model": self.p["model"], "prompt": self.p["prompt"], "max_tokens": self.p["max_tokens"]}
        rid = f"pd-roundtrip-{time.time_ns()}"
        answer = self.prefill_step(request, rid)
        if answer is None or not self.decode_step(request, rid):
            return False
        if check in ("decode", "both") and not self.pulled(pulled, answer):
            return False
        return check == "decode" or self.freed(usage)

    def prefill_step(self, request: dict[str, Any], rid: str) -> dict[str, Any] | None:
        """Gate pd_prefill: the prefill request (build_prefill_request of the proxy example); its answer."""
        start, engine = time.monotonic(), self.engine
        keys = ("remote_engine_id", "remote_block_ids", "remote_host", "remote_port")
        kv = {"do_remote_decode": True, "do_remote_prefill": False, **dict.fromkeys(keys)}
        first = dict(request, max_tokens=1, min_tokens=1, stream=False, kv_transfer_params=kv)
        status, body = http(f"{self.prefill}/v1/completions", self.key, first, self._left(), rid)
        answer = as_json(body)
        params = answer.get("kv_transfer_params")
        expected = f"200 with kv_transfer_params of engine {engine}"
        if status != 200:
            why = (
                f"the prefill {self.prefill} answered HTTP {status or 'nothing'} to the prefill request: "
                f"{body[:200]} (check its log and the API key)"
            )
            self._record("pd_prefill", False, start, expected, f"HTTP {status}", why)
            return None
        if not isinstance(params, dict) or not params:
            why = (
                f"the prefill {self.prefill} kept no KV for a decode (no kv_transfer_params in its answer): "
                "run it with --kv-transfer-config kv_role kv_producer, kv_connector MooncakeConnectorV1"
            )
            self._record("pd_prefill", False, start, expected, "no kv_transfer_params", why)
            return None
        self.kv_transfer_params = params
        got = params.get("remote_engine_id")
        if got != engine:
            why = (
                f"the prefill {self.prefill} answered for engine {got}, the plan's prefill engine is "
                f"{engine}: the URL reaches another instance than planned, or its kv_transfer_config "
                "engine_id differs from the plan's (vLLM appends _dp<local rank> under data parallelism); "
                "render its configuration again and restart it"
            )
            self._record("pd_prefill", False, start, expected, f"engine {got}", why)
            return None
        self._record(
            "pd_prefill", True, start, expected, f"engine {got}, blocks {params.get('remote_block_ids')}"
        )
        return answer

    def decode_step(self, request: dict[str, Any], rid: str) -> bool:
        """Gate pd_decode: the original request with the prefill's kv_transfer_params."""
        start, params = time.monotonic(), self.kv_transfer_params
        second = dict(request, kv_transfer_params=params)
        status, body = http(f"{self.decode}/v1/completions", self.key, second, self._left(), rid)
        choice = (as_json(body).get("choices") or [{}])[0]
        text = str(choice.get("text") or "") if isinstance(choice, dict) else ""
        if status == 200 and text:
            return self._record("pd_decode", True, start, "200 with text", f"{len(text)} characters")
        seen = f"HTTP {status or 'nothing'}: {body[:200]}"
        why = (
            f"the decode {self.decode} could not pull the KV from the prefill engine "
            f"{self.engine} at {self.prefill} (kv port {params.get('remote_host')}:"
            f"{params.get('remote_port')}, request {params.get('remote_request_id')}): {seen}. The decode's "
            "log says why ('Conflict engine id': both instances have the same engine_id; 'Mooncake transfer "
            "failed': the transfer network between them): fix that and run the gate again"
        )
        return self._record("pd_decode", False, start, "200 with text", seen, why)

    def pulled(self, before: float, answer: dict[str, Any]) -> bool:
        start = time.monotonic()
        tokens = int((answer.get("usage") or {}).get("prompt_tokens") or 0)
        # vLLM recomputes the last prompt token when the whole prompt came from elsewhere (and the connector
        # loads N-1 for Mamba models): N-1 of N is a full pull
        want = max(tokens - 1, 1)
        grew = metric(self._metrics(self.decode), PULLED, source="external_kv_transfer") - before
        expected = f'{PULLED}{{source="external_kv_transfer"}} +{want} or more'
        seen = f"+{grew:g}"
        why = (
            f"the decode {self.decode} answered but pulled {grew:g} prompt tokens from the prefill engine "
            f"{self.engine} at {self.prefill} (expected {want} or more): it computed the "
            "prompt itself; run it with --kv-transfer-config kv_role kv_consumer and MooncakeConnectorV1"
        )
        return self._record("pd_kv_pulled", grew >= want, start, expected, seen, "" if grew >= want else why)

    def freed(self, before: float) -> bool:
        start = time.monotonic()
        limit = int(self.p["free_timeout_s"])
        expected = f"{USAGE} back to {before:g} within {limit} s"
        while True:
            now = metric(self._metrics(self.prefill), USAGE)
            if now <= before + EPSILON:
                return self._record("pd_kv_freed", True, start, expected, f"{now:g}")
            if time.monotonic() - start >= limit:
                break
            time.sleep(0.2)
        why = (
            f"the prefill engine {self.engine} at {self.prefill} kept the KV blocks after "
            f"the decode {self.decode} pulled them ({USAGE} {now:g}, {before:g} before, after {limit} s): "
            "VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT frees them only after that many seconds (default 480). "
            "Check the decode's log for its done signal to the prefill's kv port, then restart the prefill"
        )
        return self._record("pd_kv_freed", False, start, expected, f"{now:g} after {limit} s", why)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "prefill_url": {"type": "str", "required": True},
            "decode_url": {"type": "str", "required": True},
            "model": {"type": "str", "required": True},
            "prefill_engine_id": {"type": "str", "required": True},
            "check": {"type": "str", "choices": ["prefill", "decode", "both"], "default": "both"},
            "api_key_file": {"type": "path"},
            "timeout_s": {"type": "int", "default": 60},
            "free_timeout_s": {"type": "int", "default": 10},
            "prompt": {"type": "str", "default": "The capital of France is"},
            "max_tokens": {"type": "int", "default": 8},
            "label": {"type": "str", "default": ""},
            "partners": {"type": "list", "elements": "dict", "default": []},
        },
        supports_check_mode=True,
    )
    p = module.params
    if module.check_mode:
        module.exit_json(changed=False, gates=[], kv_transfer_params={}, seconds=0.0, partner="")
    key = None
    if p["api_key_file"]:
        with open(p["api_key_file"], encoding="utf-8") as f:
            key = f.read().strip()
        module.no_log_values.add(key)
    start = time.monotonic()
    trip = RoundTrip(p, key)
    ok = trip.run()
    seconds = round(time.monotonic() - start, 2)
    if ok:
        module.exit_json(
            changed=False,
            gates=trip.results,
            kv_transfer_params=trip.kv_transfer_params,
            seconds=seconds,
            partner=trip.partner,
        )
    bad = trip.results[-1]
    module.fail_json(
        msg=f"{p['label'] or 'PD round trip'}: gate {bad['gate']} failed: {trip.why}",
        gates=trip.results,
        failed_gate=bad["gate"],
        kv_transfer_params=trip.kv_transfer_params,
        seconds=seconds,
        partner=trip.partner,
    )


if __name__ == "__main__":
    main()
