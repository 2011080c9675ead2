"""PD disaggregation with the Mooncake connector: a prefill on 127.0.0.2 (external DP rank 1 of 2) and a
decode on 127.0.0.3, driven by a two-stage proxy built from vllm-ascend's own ``build_prefill_request``.
Expected texts come from the saved upstream connector
(tests/data/upstream/vllm-ascend/v0.23.0/vllm_ascend/distributed/kv_transfer/kv_p2p/mooncake_connector.py)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace as NS
from typing import Any

import pytest

from .conftest import Sandbox, free_port
from .pd_helpers import (
    HostProc,
    build_prefill_request,
    call,
    fstring,
    kv_config,
    log_format,
    metric,
    pd_argv,
    request_finished_keys,
    sse_text,
    start,
    two_stage,
    wait_for,
    wait_healthy,
)

P_HOST, D_HOST, MODEL = "127.0.0.2", "127.0.0.3", "dsv3"
ABORT_S = 2  # short, yet long enough that a busy machine's proxy round trip does not outlive the held KV
GENERATION_ERROR = {
    "error": {"message": "Internal server error", "type": "InternalServerError", "param": None, "code": 500}
}  # vllm/entrypoints/openai/engine/serving.py@v0.23.0 GenerationError


@dataclass
class Pair:
    prefill: HostProc
    decode: HostProc
    kv_port: int
    sandbox: Sandbox

    def faults(self, **faults: Any) -> None:
        """Faults of the prefill only (its API port), as `sim fault` writes them; wait for the re-read."""
        assert self.prefill.port is not None
        self.sandbox.faults.parent.mkdir(parents=True, exist_ok=True)
        self.sandbox.faults.write_text(json.dumps({"ports": {str(self.prefill.port): faults}}))
        time.sleep(0.4)  # FAKE_VLLM_FAULTS_POLL_S is 0.1 in the sandbox

    def held(self) -> float:
        return metric(call(self.prefill, "/metrics").body.decode(), "ascend_sim_kv_held_blocks")

    def decode_engine_id(self) -> str:
        found = re.search(r"Initializing Mooncake Scheduler (\S+)", self.decode.stdout())
        assert found, self.decode.stdout()
        return found.group(1)


@pytest.fixture(scope="module")
def pair(module_sandbox: Sandbox, checkpoints: dict[str, Path]) -> Iterator[Pair]:
    kv_port, common, dp = pd_argv(checkpoints["a"], MODEL, P_HOST)
    debug = {"VLLM_LOGGING_LEVEL": "DEBUG"}
    prefill = start(
        module_sandbox,
        P_HOST,
        [*common, *dp, "--kv-transfer-config", kv_config("kv_producer", kv_port)],
        VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT=str(ABORT_S),
        **debug,
    )
    decode = start(
        module_sandbox,
        D_HOST,
        [*common, "--kv-transfer-config", kv_config("kv_consumer", 36000)],
        mask="1",
        FAKE_VLLM_KV_SOCKET_TIMEOUT_S="0.2",
        **debug,
    )
    wait_healthy(prefill)
    wait_healthy(decode)
    yield Pair(prefill, decode, kv_port, module_sandbox)
    module_sandbox.faults.unlink(missing_ok=True)
    assert prefill.terminate() == 0 and decode.terminate() == 0


def test_round_trip_pulls_the_kv_from_the_prefill(pair: Pair) -> None:
    request = {"model": MODEL, "prompt": "split the prefill from the decode", "max_tokens": 20}
    before = call(pair.decode, "/metrics").body.decode()
    first, second = two_stage(pair.prefill, pair.decode, "/v1/completions", request)
    params = first.json()["kv_transfer_params"]
    assert set(params) == request_finished_keys()
    assert params["do_remote_prefill"] is True and params["do_remote_decode"] is False
    assert params["remote_host"] == P_HOST and params["remote_port"] == pair.kv_port + 1
    assert re.fullmatch(r"[0-9a-f-]{36}_dp0", params["remote_engine_id"])  # uuid4 + vLLM's _dp<local rank>
    assert (
        len(params["remote_block_ids"]) == 1 and len(params["remote_block_ids"][0]) == 1
    )  # 6 tokens, 128/block
    assert first.json()["choices"][0]["finish_reason"] == "length"
    plain = call(pair.decode, "/v1/completions", request)  # no kv_transfer_params: computed locally
    assert second.status == 200 and plain.status == 200
    text = plain.json()["choices"][0]["text"]
    assert second.json()["choices"][0]["text"] == text
    assert text.startswith(first.json()["choices"][0]["text"])
    rid = params["remote_request_id"]
    assert rid.startswith("cmpl-proxy-")
    p_log = pair.prefill.stdout()
    assert log_format("Delaying free of %d blocks for request %s") % (1, rid) in p_log
    assert f"Got DONE_RECVING_MSG for request {rid}" in p_log  # the decode's TCP connection to the kv port
    assert f"KVCacheSendingThread started listening on path: tcp://{P_HOST}:{pair.kv_port + 1}." in p_log
    d_log = pair.decode.stdout()
    took = log_format("KV cache transfer for request %s took").split(" %.2f")[0] % rid
    assert f"{took} " in d_log
    assert f"remote_session_id {P_HOST}:{pair.kv_port + 1}" in d_log
    assert f"'remote_engine_id': '{params['remote_engine_id']}'" in d_log  # get_num_new_matched_tokens DEBUG
    after = call(pair.decode, "/metrics").body.decode()
    name, source = "vllm:prompt_tokens_by_source_total", "external_kv_transfer"
    assert metric(after, name, source=source) - metric(before, name, source=source) == 6
    assert pair.held() == 0  # freed once the decode said done


def test_chat_stream_through_the_decode_matches_the_plain_answer(pair: Pair) -> None:
    request = {"model": MODEL, "messages": [{"role": "user", "content": "hello there"}], "max_tokens": 12}
    plain = call(pair.decode, "/v1/chat/completions", request).json()["choices"][0]["message"]["content"]
    first, second = two_stage(pair.prefill, pair.decode, "/v1/chat/completions", {**request, "stream": True})
    assert first.json()["kv_transfer_params"]["remote_request_id"].startswith("chatcmpl-proxy-")
    text, events = sse_text(second.body)
    assert second.status == 200 and text == plain and events[-1] == "[DONE]"
    assert call(pair.decode, "/health").status == 200
    assert [m["id"] for m in call(pair.decode, "/v1/models").json()["data"]] == [MODEL]


def test_transfer_failure_fails_the_decode_request(pair: Pair) -> None:
    pair.faults(kv_transfer_failure=True)
    try:
        request = {"model": MODEL, "prompt": "this pull fails", "max_tokens": 5}
        first, second = two_stage(pair.prefill, pair.decode, "/v1/completions", request)
        assert second.status == 500 and second.json() == GENERATION_ERROR
        rid = first.json()["kv_transfer_params"]["remote_request_id"]
        log = pair.decode.stdout()
        assert log_format("Mooncake transfer failed for request.") % (rid, -1) in log
        assert log_format("Failed to transfer KV cache") % (rid, "Mooncake transfer failed, ret: -1") in log
        assert "Failing 1 request(s) due to KV load failure (failure_policy=fail" in log
        _first, streamed = two_stage(
            pair.prefill, pair.decode, "/v1/completions", {**request, "stream": True}
        )
        _text, events = sse_text(streamed.body)
        assert streamed.status == 200 and [json.loads(events[0]), events[1]] == [GENERATION_ERROR, "[DONE]"]
        assert pair.held() == 0  # the decode still said done
    finally:
        pair.faults()


def test_wrong_engine_id_trips_the_conflict_assertion(pair: Pair) -> None:
    pair.faults(wrong_engine_id=True)
    try:
        request = {"model": MODEL, "prompt": "whose engine is this", "max_tokens": 5}
        _first, second = two_stage(pair.prefill, pair.decode, "/v1/completions", request)
        assert second.status == 500
        own = pair.decode_engine_id()
        assert (
            fstring("Conflict engine id", engine_id=own, self=NS(local_engine_id=own)) in pair.decode.stdout()
        )
    finally:
        pair.faults()


def test_unreachable_prefill_fails_the_request(pair: Pair) -> None:
    port = free_port()
    params = {
        "do_remote_prefill": True,
        "do_remote_decode": False,
        "remote_block_ids": [[1]],
        "remote_engine_id": "gone",
        "remote_request_id": "cmpl-gone-0",
        "remote_host": "127.0.0.4",
        "remote_port": port,
        "remote_ptp_size": 1,
    }
    request = {"model": MODEL, "prompt": "nobody home", "max_tokens": 5, "kv_transfer_params": params}
    assert call(pair.decode, "/v1/completions", request).json() == GENERATION_ERROR
    cause = f"Failed to send data to tcp://127.0.0.4:{port} after 3 retries: Resource temporarily unavailable"
    assert log_format("Failed to transfer KV cache") % ("cmpl-gone-0", cause) in pair.decode.stdout()


def test_abort_timeout_frees_unpulled_kv_and_a_late_pull_reads_stale_blocks(pair: Pair) -> None:
    request = {"model": MODEL, "prompt": "nobody pulls this one", "max_tokens": 8}
    first = call(pair.prefill, "/v1/completions", build_prefill_request(request))
    params = first.json()["kv_transfer_params"]
    rid = params["remote_request_id"]
    assert pair.held() >= 1
    wait_for(pair.prefill, log_format("Force freed expired request") % (rid, ABORT_S), timeout=ABORT_S + 10)
    assert pair.held() == 0
    late = call(pair.decode, "/v1/completions", {**request, "kv_transfer_params": params})
    plain = call(pair.decode, "/v1/completions", request)
    assert late.status == 200 and late.json()["choices"][0]["text"] != plain.json()["choices"][0]["text"]
    wait_for(pair.prefill, log_format("MooncakeConnector finish req not in reqs to process") % rid)


def test_kv_never_freed_keeps_the_blocks_past_the_timeout(pair: Pair) -> None:
    pair.faults(kv_never_freed=True)
    try:
        held = pair.held()
        request = {"model": MODEL, "prompt": "leak these blocks please", "max_tokens": 8}
        rid = call(pair.prefill, "/v1/completions", build_prefill_request(request)).json()[
            "kv_transfer_params"
        ]["remote_request_id"]
        wait_for(
            pair.prefill,
            f"fault kv_never_freed: not freeing the blocks of request {rid}",
            timeout=ABORT_S + 10,
        )
        assert pair.held() == held + 1
        assert f"Force freed expired request: {rid}." not in pair.prefill.stdout()
    finally:
        pair.faults()


def _serve_kv(sandbox: Sandbox, model: Path, config: dict[str, Any]) -> str:
    proc = sandbox.run(["serve", str(model), "--kv-transfer-config", json.dumps(config)])
    assert proc.popen.returncode == 1
    return proc.stderr().strip().splitlines()[-1]


def test_startup_checks_of_the_connector(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    config = json.loads(kv_config("kv_consumer", 36000, p_tp=1, d_tp=2))
    expected = fstring("must be greater than", self=NS(_prefill_tp_size=1, _decode_tp_size=2))
    assert _serve_kv(sandbox, checkpoints["a"], config) == f"ValueError: {expected}"
    del config["kv_connector_extra_config"]["decode"]["dp_size"]
    source = Path(__file__).resolve().parents[3] / "tests/data/upstream/vllm-ascend/v0.23.0"
    text = (source / "vllm_ascend/distributed/kv_transfer/kv_p2p/mooncake_connector.py").read_text()
    assert '        assert "dp_size" in decode_parallel_config\n' in text  # a bare assert: no message
    assert _serve_kv(sandbox, checkpoints["a"], config) == "AssertionError"


def test_recompute_policy_serves_a_failed_pull_locally(
    sandbox: Sandbox, checkpoints: dict[str, Path]
) -> None:
    config = kv_config("kv_consumer", 36000, kv_load_failure_policy="recompute")
    args = ["serve", str(checkpoints["a"]), "--served-model-name", MODEL, "--kv-transfer-config", config]
    decode = start(sandbox, D_HOST, args, FAKE_VLLM_KV_SOCKET_TIMEOUT_S="0.1")
    wait_healthy(decode)
    params = {
        "do_remote_prefill": True,
        "remote_block_ids": [[1]],
        "remote_engine_id": "gone",
        "remote_request_id": "cmpl-gone-0",
        "remote_host": "127.0.0.4",
        "remote_port": free_port(),
    }
    request = {"model": MODEL, "prompt": "compute it here then", "max_tokens": 6}
    plain = call(decode, "/v1/completions", request)
    recovered = call(decode, "/v1/completions", {**request, "kv_transfer_params": params})
    assert recovered.status == 200 and recovered.json()["choices"] == plain.json()["choices"]
    assert "Recovered from KV load failure: 1 request(s) rescheduled (4 tokens affected)." in decode.stdout()
    assert decode.terminate() == 0


def test_external_dp_rank_out_of_range(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    args = ["serve", str(checkpoints["a"]), "--data-parallel-size", "2", "--data-parallel-rank", "2"]
    proc = sandbox.run(args)
    assert proc.popen.returncode == 1
    assert (
        proc.stderr().strip().splitlines()[-1]
        == "ValueError: data_parallel_rank (2) must be in the range [0, 2)"
    )
