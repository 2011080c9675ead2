"""A running fake vLLM server: OpenAI API shapes, deterministic answers, auth, metrics, NPU process table."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import Proc, Sandbox, http

KEY = "sim-secret"
NAME = "deepseek-tiny"


@pytest.fixture(scope="module")
def server(module_sandbox: Sandbox, checkpoints: dict[str, Path]) -> Iterator[Proc]:
    """TP 2 on NPUs 1,3 (not the first ones), API key from VLLM_API_KEY."""
    args = [
        "serve",
        str(checkpoints["a"]),
        "--tensor-parallel-size",
        "2",
        "--served-model-name",
        NAME,
        "--max-model-len",
        "4096",
        "--trust-remote-code",
        "--enable-expert-parallel",
    ]
    proc = module_sandbox.start(args, mask="1,3", VLLM_API_KEY=KEY)
    proc.wait_healthy()
    yield proc
    assert proc.terminate() == 0


def complete(port: int, prompt: str, **extra: object) -> dict[str, object]:
    resp = http(port, "/v1/completions", {"model": NAME, "prompt": prompt, **extra}, key=KEY)
    assert resp.status == 200, resp.body
    body: dict[str, object] = resp.json()
    return body


def test_health_version_and_models(server: Proc, checkpoints: dict[str, Path]) -> None:
    port = server.port
    assert port is not None
    health = http(port, "/health")
    assert (health.status, health.body) == (200, b"")
    assert http(port, "/ping").status == 200
    assert http(port, "/version").json() == {"version": "0.23.0"}
    models = http(port, "/v1/models", key=KEY).json()
    assert models["object"] == "list"
    (card,) = models["data"]
    assert (card["id"], card["root"], card["max_model_len"], card["owned_by"]) == (
        NAME,
        str(checkpoints["a"]),
        4096,
        "vllm",
    )
    assert re.fullmatch(r"modelperm-[0-9a-f]{16}", card["permission"][0]["id"])
    assert "Starting vLLM API server 0 on http://127.0.0.1:" in server.stdout()
    assert "Loading weights took" in server.stdout()


def test_api_key_is_enforced_on_v1_only(server: Proc) -> None:
    assert server.port is not None
    for key in (None, "wrong"):
        resp = http(server.port, "/v1/models", key=key)
        assert (resp.status, resp.json()) == (401, {"error": "Unauthorized"})
    assert http(server.port, "/health").status == 200
    assert http(server.port, "/metrics").status == 200


def test_completions_are_deterministic_with_logprobs(server: Proc) -> None:
    assert server.port is not None
    first = complete(server.port, "What is the capital of France?", max_tokens=6, logprobs=3)
    second = complete(server.port, "What is the capital of France?", max_tokens=6, logprobs=3)
    assert first["id"] != second["id"]
    assert first["choices"] == second["choices"]
    (choice,) = first["choices"]  # type: ignore[misc]
    assert choice["finish_reason"] == "length" and choice["stop_reason"] is None
    lp = choice["logprobs"]
    assert len(lp["tokens"]) == 6 and "".join(lp["tokens"]) == choice["text"]
    assert all(len(top) == 3 for top in lp["top_logprobs"])
    assert all(t <= 0 for t in lp["token_logprobs"])
    assert lp["text_offset"][0] == 0
    assert first["usage"] == {
        "prompt_tokens": 6,
        "total_tokens": 12,
        "completion_tokens": 6,
        "prompt_tokens_details": None,
    }
    shorter = complete(server.port, "What is the capital of France?", max_tokens=3)
    assert choice["text"].startswith(shorter["choices"][0]["text"])  # type: ignore[index]
    other = complete(server.port, "What is the capital of Spain?", max_tokens=6)
    assert other["choices"][0]["text"] != choice["text"]  # type: ignore[index]


def test_chat_stream_matches_non_stream(server: Proc) -> None:
    assert server.port is not None
    req = {
        "model": NAME,
        "messages": [{"role": "user", "content": "Say something"}],
        "max_tokens": 5,
        "logprobs": True,
        "top_logprobs": 2,
    }
    plain = http(server.port, "/v1/chat/completions", req, key=KEY).json()
    assert plain["object"] == "chat.completion"
    msg = plain["choices"][0]["message"]
    assert msg["role"] == "assistant"
    assert [len(e["top_logprobs"]) for e in plain["choices"][0]["logprobs"]["content"]] == [2] * 5
    resp = http(
        server.port,
        "/v1/chat/completions",
        {**req, "stream": True, "stream_options": {"include_usage": True}},
        key=KEY,
    )
    assert resp.status == 200 and resp.headers["content-type"].startswith("text/event-stream")
    events = [ln[len("data: ") :] for ln in resp.body.decode().split("\n\n") if ln]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == msg["content"]
    assert chunks[-2]["choices"][0]["finish_reason"] == plain["choices"][0]["finish_reason"]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 5


def test_request_errors(server: Proc) -> None:
    assert server.port is not None
    resp = http(server.port, "/v1/completions", {"model": "nope", "prompt": "x"}, key=KEY)
    assert resp.status == 404 and resp.json()["error"]["message"] == "The model `nope` does not exist."
    resp = http(server.port, "/v1/completions", {"model": NAME, "prompt": "x", "max_tokens": 5000}, key=KEY)
    assert resp.status == 400 and "maximum context length is 4096 tokens" in resp.json()["error"]["message"]
    resp = http(server.port, "/v1/completions", {"model": NAME, "prompt": "x", "logprobs": 21}, key=KEY)
    assert resp.status == 400 and "greater than max allowed: 20" in resp.json()["error"]["message"]
    assert http(server.port, "/nowhere").status == 404


def _samples(text: str, name: str) -> float:
    values = [float(ln.rsplit(" ", 1)[1]) for ln in text.splitlines() if ln.startswith(name + "{")]
    assert values, name
    return sum(values)


def test_metrics_names_and_counters(server: Proc) -> None:
    assert server.port is not None
    before = http(server.port, "/metrics").body.decode()
    for name, kind in (
        ("vllm:num_requests_running", "gauge"),
        ("vllm:num_requests_waiting", "gauge"),
        ("vllm:kv_cache_usage_perc", "gauge"),
        ("vllm:prompt_tokens_total", "counter"),
        ("vllm:generation_tokens_total", "counter"),
        ("vllm:request_success_total", "counter"),
        ("vllm:time_to_first_token_seconds", "histogram"),
        ("vllm:e2e_request_latency_seconds", "histogram"),
        ("vllm:cache_config_info", "gauge"),
    ):
        assert f"# TYPE {name} {kind}" in before
        assert f"# HELP {name} " in before
    assert f'vllm:num_requests_running{{engine="0",model_name="{NAME}"}} 0.0' in before
    assert 'vllm:cache_config_info{block_size="128"' in before
    complete(server.port, "count these four words", max_tokens=4)
    after = http(server.port, "/metrics").body.decode()
    assert _samples(after, "vllm:prompt_tokens_total") == _samples(before, "vllm:prompt_tokens_total") + 4
    assert (
        _samples(after, "vllm:generation_tokens_total")
        == _samples(before, "vllm:generation_tokens_total") + 4
    )
    assert _samples(after, "vllm:request_success_total") == _samples(before, "vllm:request_success_total") + 1
    assert _samples(after, "vllm:e2e_request_latency_seconds_count") > _samples(
        before, "vllm:e2e_request_latency_seconds_count"
    )


def test_other_weights_answer_differently(
    sandbox: Sandbox, checkpoints: dict[str, Path], server: Proc
) -> None:
    assert server.port is not None
    prompt = "What is the capital of France?"
    ours = complete(server.port, prompt, max_tokens=8, logprobs=2)["choices"][0]  # type: ignore[index]
    other = sandbox.start(["serve", str(checkpoints["b"]), "--served-model-name", NAME, "--api-key", KEY])
    other.wait_healthy()
    assert other.port is not None
    theirs = complete(other.port, prompt, max_tokens=8, logprobs=2)["choices"][0]  # type: ignore[index]
    assert theirs["text"] != ours["text"]
    assert theirs["logprobs"]["token_logprobs"] != ours["logprobs"]["token_logprobs"]
    assert other.terminate() == 0


def test_process_table_entries_appear_and_disappear(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    (sandbox.state).mkdir(parents=True, exist_ok=True)
    (sandbox.state / "hardware.json").write_text(json.dumps({"hbm_mb": 65536}))
    sandbox.processes.write_text(
        json.dumps({"0": [{"pid": 1, "name": "other", "memory_mb": 5, "owner": "x"}]})
    )
    proc = sandbox.start(
        ["serve", str(checkpoints["a"]), "-tp", "2", "--gpu-memory-utilization", "0.5"], mask="0,2"
    )
    proc.wait_healthy()
    table = sandbox.process_table()
    assert sorted(table) == ["0", "2"]
    mine = [e for e in table["0"] if e["pid"] == proc.popen.pid]
    assert mine and mine[0]["name"] == "VLLMWorker_TP" and mine[0]["memory_mb"] == 32768
    assert [e["name"] for e in table["0"]] == ["other", "VLLMWorker_TP"]
    assert proc.terminate() == 0
    assert sandbox.process_table() == {"0": [{"pid": 1, "name": "other", "memory_mb": 5, "owner": "x"}]}
    assert "Application shutdown complete." in proc.stderr()
