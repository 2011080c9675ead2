"""The PD round trip (module ascend.npu.vllm_pd_roundtrip) against the fake vLLM in PD mode, as
test_fake_vllm_pd.py starts it: a prefill on 127.0.0.2 (external DP rank 1 of 2) and a decode on 127.0.0.3,
both with an API key. A good round trip passes every gate; each Mooncake fault of the prefill (switched on
live through the fault file) fails its own gate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.ascend.npu.plugins.modules import vllm_pd_roundtrip as m

from tests.helpers import PATIENCE_S

from .conftest import Sandbox, free_port
from .pd_helpers import HostProc, kv_config, pd_argv, start, wait_healthy

P_HOST, D_HOST, MODEL, KEY = "127.0.0.2", "127.0.0.3", "dsv3", "pd-secret"
ENGINE = "plan-prefill"  # the plan's kv_transfer_config engine_id; vLLM appends _dp<local rank> (0: external)
ROOT = Path(__file__).resolve().parents[3]
MODULE = ROOT / "collections/ansible_collections/ascend/npu/plugins/modules/vllm_pd_roundtrip.py"
ALL = ["pd_prefill", "pd_decode", "pd_kv_pulled", "pd_kv_freed"]


@dataclass
class Pair:
    prefill: HostProc
    decode: HostProc
    sandbox: Sandbox

    def faults(self, **faults: Any) -> None:
        """Faults of the prefill only (its API port), as `sim fault` writes them; wait for the re-read."""
        self.sandbox.faults.parent.mkdir(parents=True, exist_ok=True)
        self.sandbox.faults.write_text(json.dumps({"ports": {str(self.prefill.port): faults}}))
        time.sleep(0.4)  # FAKE_VLLM_FAULTS_POLL_S is 0.1 in the sandbox

    def params(self, **over: Any) -> dict[str, Any]:
        p: dict[str, Any] = {
            "prefill_url": f"http://{P_HOST}:{self.prefill.port}",
            "decode_url": f"http://{D_HOST}:{self.decode.port}",
            "model": MODEL,
            "prefill_engine_id": f"{ENGINE}_dp0",
            "check": "both",
            "api_key_file": None,
            "timeout_s": int(PATIENCE_S),
            "free_timeout_s": 5,
            "prompt": "The capital of France is",
            "max_tokens": 8,
            "label": "",
            "partners": [],
        }
        p.update(over)
        return p

    def trip(self, **over: Any) -> m.RoundTrip:
        trip = m.RoundTrip(self.params(**over), KEY)
        trip.run()
        return trip


@pytest.fixture(scope="module")
def pair(module_sandbox: Sandbox, checkpoints: dict[str, Path]) -> Iterator[Pair]:
    kv_port, common, dp = pd_argv(checkpoints["a"], MODEL, P_HOST)
    # no VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT: at its default (480 s) only the decode's done signal frees
    prefill = start(
        module_sandbox,
        P_HOST,
        [*common, *dp, "--kv-transfer-config", kv_config("kv_producer", kv_port, engine_id=ENGINE)],
        VLLM_API_KEY=KEY,
    )
    decode = start(
        module_sandbox,
        D_HOST,
        [*common, "--kv-transfer-config", kv_config("kv_consumer", 36000, engine_id="plan-decode")],
        mask="1",
        FAKE_VLLM_KV_SOCKET_TIMEOUT_S="0.2",
        VLLM_API_KEY=KEY,
    )
    wait_healthy(prefill)
    wait_healthy(decode)
    yield Pair(prefill, decode, module_sandbox)
    module_sandbox.faults.unlink(missing_ok=True)
    assert prefill.terminate() == 0 and decode.terminate() == 0


def gates(trip: m.RoundTrip) -> list[tuple[str, bool]]:
    return [(r["gate"], r["ok"]) for r in trip.results]


def test_a_good_round_trip_passes_every_gate(pair: Pair) -> None:
    trip = pair.trip()
    assert gates(trip) == [(g, True) for g in ALL], trip.why
    assert all({"gate", "ok", "seconds", "expected", "seen"} <= set(r) for r in trip.results)
    params = trip.kv_transfer_params
    assert params["remote_engine_id"] == f"{ENGINE}_dp0" and params["remote_host"] == P_HOST
    assert params["do_remote_prefill"] is True and params["remote_block_ids"] == [
        [params["remote_block_ids"][0][0]]
    ]
    assert trip.results[2]["seen"] == "+5"  # "The capital of France is": 5 prompt tokens pulled


def test_another_engine_id_than_planned_fails_the_prefill_gate(pair: Pair) -> None:
    trip = pair.trip(prefill_engine_id="plan-prefill")  # without the _dp0 vLLM appends
    assert gates(trip) == [("pd_prefill", False)]
    assert trip.results[0]["seen"] == f"engine {ENGINE}_dp0"
    assert "_dp<local rank>" in trip.why and "plan-prefill_dp0" in trip.why


def test_a_missing_api_key_fails_the_prefill_gate(pair: Pair) -> None:
    trip = m.RoundTrip(pair.params(), None)
    assert not trip.run()
    assert gates(trip) == [("pd_prefill", False)] and trip.results[0]["seen"] == "HTTP 401"


@pytest.mark.parametrize("fault", ["wrong_engine_id", "kv_transfer_failure"])
def test_a_failed_pull_fails_the_decode_gate(pair: Pair, fault: str) -> None:
    pair.faults(**{fault: True})
    try:
        trip = pair.trip()
    finally:
        pair.faults()
    assert gates(trip) == [("pd_prefill", True), ("pd_decode", False)]
    assert trip.results[1]["seen"].startswith("HTTP 500: ")
    p = pair.params()
    for part in ("could not pull the KV", p["prefill_url"], p["decode_url"], p["prefill_engine_id"]):
        assert part in trip.why


def test_blocks_never_freed_fail_the_freed_gate(pair: Pair) -> None:
    pair.faults(kv_never_freed=True)
    try:
        trip = pair.trip(free_timeout_s=1)
        decode_only = pair.trip(check="decode")  # the decode side is fine: no wait for the prefill's blocks
    finally:
        pair.faults()
    assert gates(trip) == [(g, g != "pd_kv_freed") for g in ALL]
    assert trip.results[-1]["seconds"] >= 1 and trip.results[-1]["seen"].endswith("after 1 s")
    assert "kept the KV blocks" in trip.why and "VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT" in trip.why
    assert gates(decode_only) == [(g, True) for g in ALL[:3]]


def test_a_decode_that_computes_the_prompt_itself_fails_the_pulled_gate(pair: Pair) -> None:
    """The prefill as its own "decode": a producer serves kv_transfer_params.do_remote_prefill locally."""
    trip = pair.trip(decode_url=pair.params()["prefill_url"], check="decode")
    assert gates(trip) == [("pd_prefill", True), ("pd_decode", True), ("pd_kv_pulled", False)]
    assert trip.results[-1]["seen"] == "+0" and "kv_consumer" in trip.why


def test_an_instance_that_never_answers_fails_the_health_wait(pair: Pair) -> None:
    nobody = f"http://127.0.0.4:{free_port()}"
    trip = pair.trip(decode_url=nobody, timeout_s=1)
    assert gates(trip) == [("pd_health", False)]
    assert trip.results[0]["seen"] == f"{nobody}/health not listening" and trip.results[0]["seconds"] >= 1


def test_a_partner_that_does_not_answer_is_passed_over_for_the_next(pair: Pair) -> None:
    """The gated side keeps its URL; the partner is the first of ``partners`` whose /health answers 200."""
    nobody = f"http://127.0.0.4:{free_port()}"
    good = pair.params()
    dead = {"url": nobody, "engine_id": "gone_dp0"}
    trip = pair.trip(
        check="prefill", decode_url=nobody, partners=[dead, {"url": good["decode_url"], "engine_id": ""}]
    )
    assert gates(trip) == [("pd_prefill", True), ("pd_decode", True), ("pd_kv_freed", True)], trip.why
    assert (trip.prefill, trip.partner) == (good["prefill_url"], good["decode_url"])
    live = {"url": good["prefill_url"], "engine_id": good["prefill_engine_id"]}
    trip = pair.trip(check="decode", prefill_url=nobody, prefill_engine_id="gone_dp0", partners=[dead, live])
    assert gates(trip) == [(g, True) for g in ALL[:3]], trip.why
    assert (trip.decode, trip.partner, trip.engine) == (good["decode_url"], live["url"], live["engine_id"])
    # none answers: the wait is on the given partner, and its failure names it
    trip = pair.trip(check="prefill", decode_url=nobody, partners=[dead], timeout_s=1)
    assert gates(trip) == [("pd_health", False)] and nobody in trip.results[0]["seen"]


def test_metric_sums_the_matching_samples() -> None:
    text = (
        "# TYPE vllm:kv_cache_usage_perc gauge\n"
        'vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25\n'
        'vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.5\n'
        'vllm:prompt_tokens_by_source_total{engine="0",source="external_kv_transfer"} 7.0\n'
        'vllm:prompt_tokens_by_source_total{engine="0",source="local_compute"} 3.0\n'
        "vllm:kv_cache_usage_perc_other 9\n"
    )
    assert m.metric(text, m.USAGE) == 0.75
    assert m.metric(text, m.PULLED, source="external_kv_transfer") == 7.0


def test_the_module_fails_with_its_gates_and_reads_the_key_file(pair: Pair, tmp_path: Path) -> None:
    """As Ansible runs it on a host: arguments from a JSON file, the key from api_key_file, fail_json."""
    key_file = tmp_path / "api-key"
    key_file.write_text(f"{KEY}\n", encoding="utf-8")
    args = pair.params(api_key_file=str(key_file), prefill_engine_id="someone-else", label="pd pair 1")
    argfile = tmp_path / "args.json"
    argfile.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "collections")}
    proc = subprocess.run(
        [sys.executable, str(MODULE), str(argfile)],
        capture_output=True,
        text=True,
        env=env,
        timeout=PATIENCE_S,
        check=False,
    )
    result = json.loads(proc.stdout)
    assert result["failed"] is True and result["failed_gate"] == "pd_prefill", result
    assert result["msg"].startswith("pd pair 1: gate pd_prefill failed: the prefill http://127.0.0.2:")
    assert result["gates"][0]["ok"] is False and result["kv_transfer_params"]["remote_engine_id"]
    assert KEY not in proc.stdout
