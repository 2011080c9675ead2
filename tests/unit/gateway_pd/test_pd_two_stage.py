"""The two-stage request of the real vllm-router in PD mode, field by field, against vllm-ascend's own PD
proxy.

What the router (0.1.17, `--vllm-pd-disaggregation`, default `--kv-connector nixl`) sends to the prefill stub,
then to the decode stub, for /v1/completions and /v1/chat/completions, streamed and not. The prefill leg is
compared with `build_prefill_request()` of vllm-ascend's examples/disaggregated_prefill_v1/
load_balance_proxy_server_example.py @v0.23.0 (run here from the verbatim copy in
tests/data/upstream/vllm-ascend/v0.23.0/), the proxy
vllm-ascend documents for MooncakeConnectorV1; the decode leg with what that proxy does after the prefill:
the client's body plus the prefill response's kv_transfer_params, unchanged.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.unit.gateway_pd.router import Router, pd_args
from tests.unit.gateway_pd.stubs import Backend, prefill_kv_params

UPSTREAM = (
    Path(__file__).parents[2] / "data/upstream/vllm-ascend/v0.23.0/examples/disaggregated_prefill_v1"
) / "load_balance_proxy_server_example.py"

# Fields the router writes into both legs with their default values (it parses the OpenAI request into its
# typed model and serialises it again); vLLM's request models accept and ignore unknown fields.
ROUTER_DEFAULTS: dict[str, dict[str, Any]] = {
    "/v1/completions": {
        "echo": False, "no_stop_trim": False, "ignore_eos": False, "skip_special_tokens": True,
        "return_hidden_states": False, "stream": False,
    },
    "/v1/chat/completions": {
        "logprobs": False, "no_stop_trim": False, "ignore_eos": False, "continue_final_message": False,
        "skip_special_tokens": True, "separate_reasoning": True, "stream_reasoning": True,
        "return_hidden_states": False, "include_reasoning": True, "stream": False,
    },
}  # fmt: skip


def upstream_build_prefill_request() -> Callable[[dict[str, Any]], dict[str, Any]]:
    """`build_prefill_request` as vllm-ascend v0.23.0 wrote it, taken out of the proxy's source with ast."""
    tree = ast.parse(UPSTREAM.read_text(encoding="utf-8"))
    (fn,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "build_prefill_request"]
    scope: dict[str, Any] = {}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), str(UPSTREAM), "exec"), scope)
    build: Callable[[dict[str, Any]], dict[str, Any]] = scope["build_prefill_request"]
    return build


def client_body(path: str, stream: bool, max_field: str) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "stub-model", max_field: 9, "temperature": 0.5, "stream": stream}
    if path == "/v1/chat/completions":
        body["messages"] = [{"role": "user", "content": "Why is the sky blue?"}]
    else:
        body["prompt"] = "Why is the sky blue?"
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body


def with_defaults(path: str, body: dict[str, Any]) -> dict[str, Any]:
    return {**ROUTER_DEFAULTS[path], **body}


def streamed_text(body: str) -> str:
    events = [line.removeprefix("data: ") for line in body.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]", body
    chunks = [json.loads(e)["choices"][0] for e in events[:-1]]
    return "".join(c.get("text") or c.get("delta", {}).get("content", "") for c in chunks)


def answer_text(path: str, body: str) -> str:
    choice = json.loads(body)["choices"][0]
    return str(choice["message"]["content"] if path == "/v1/chat/completions" else choice["text"])


@pytest.fixture
def pd(backend: Callable[..., Backend], router: Callable[..., Router]) -> tuple[Router, Backend, Backend]:
    p, d = backend("prefill", engine_id="7"), backend("decode")
    r = router(pd_args([p.url], [d.url], "--prefill-policy", "round_robin", "--decode-policy", "round_robin"),
               env={"OPENAI_API_KEY": "sk-serving"})  # fmt: skip
    r.wait("/readiness")
    return r, p, d


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions"])
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("max_field", ["max_tokens", "max_completion_tokens"])
def test_prefill_then_decode_as_vllm_ascends_proxy_does(
    pd: tuple[Router, Backend, Backend], path: str, stream: bool, max_field: str
) -> None:
    r, p, d = pd
    sent = client_body(path, stream, max_field)
    resp = r.post(path, sent)
    assert resp.status == 200, resp.body
    (pre,), (dec,) = p.completions(), d.completions()
    assert pre.path == dec.path == path

    # prefill: exactly vllm-ascend's build_prefill_request(), plus the router's defaults
    expected_prefill = upstream_build_prefill_request()(dict(sent))
    assert expected_prefill["kv_transfer_params"]["do_remote_decode"] is True
    if max_field == "max_completion_tokens":
        expected_prefill["max_completion_tokens"] = 1  # both proxies cap it too
    assert pre.body == with_defaults(path, expected_prefill)

    # decode: the client's body (its stream flag, its max tokens) plus the prefill's kv_transfer_params
    assert dec.body == with_defaults(path, {**sent, "kv_transfer_params": prefill_kv_params("7", 36000)})

    # the client gets the decode stage's answer
    text = streamed_text(resp.body) if stream else answer_text(path, resp.body)
    assert text.strip() == f"decoded by {d.url}"


def test_headers_the_router_key_not_the_clients(pd: tuple[Router, Backend, Backend]) -> None:
    """Both legs carry `Authorization: Bearer $OPENAI_API_KEY` of the router's environment (as vllm-ascend's
    proxy does, auth_headers()) and one X-Request-Id the router makes; the client's Authorization and
    X-Request-Id do not reach the ranks, and the router does not check the client's key at all."""
    r, p, d = pd
    mine = {"authorization": "Bearer sk-client", "x-request-id": "client-id-1"}
    assert r.post("/v1/completions", client_body("/v1/completions", False, "max_tokens"), mine).status == 200
    assert r.post("/v1/completions", client_body("/v1/completions", False, "max_tokens")).status == 200
    legs = [*p.completions(), *d.completions()]
    assert [s.headers["authorization"] for s in legs] == ["Bearer sk-serving"] * 4
    (id1, id2), (id3, id4) = (
        [s.headers["x-request-id"] for s in p.completions()],
        [s.headers["x-request-id"] for s in d.completions()],
    )
    assert (id1, id2) == (id3, id4) and id1 != id2
    host_p, host_d = p.url.removeprefix("http://"), d.url.removeprefix("http://")
    assert id1.startswith(f"___prefill_addr_{host_p}___decode_addr_{host_d}_")


def test_without_openai_api_key_the_ranks_get_an_empty_bearer(
    backend: Callable[..., Backend], router: Callable[..., Router]
) -> None:
    """--api-key is not what the two stages send (only the /render calls of cache_aware carry it)."""
    p, d = backend("prefill"), backend("decode")
    r = router(pd_args([p.url], [d.url], "--prefill-policy", "round_robin", "--api-key", "sk-flag"))
    r.wait("/readiness")
    assert r.post("/v1/completions", client_body("/v1/completions", False, "max_tokens")).status == 200
    assert [s.headers["authorization"] for s in [*p.completions(), *d.completions()]] == ["Bearer "] * 2


def test_sampling_floats_reach_the_ranks_as_f32(pd: tuple[Router, Backend, Backend]) -> None:
    """The router re-serialises the request from its typed model: temperature 0.6 arrives as the f32 value
    0.6000000238418579 on both legs (0.5, exact in f32, arrives unchanged: the test above)."""
    r, p, d = pd
    body = {**client_body("/v1/completions", False, "max_tokens"), "temperature": 0.6, "top_p": 0.95}
    assert r.post("/v1/completions", body).status == 200
    for leg in (*p.completions(), *d.completions()):
        assert (leg.body["temperature"], leg.body["top_p"]) == (0.6000000238418579, 0.949999988079071)


def test_a_prefill_without_kv_transfer_params_is_decoded_anyway(
    backend: Callable[..., Backend], router: Callable[..., Router]
) -> None:
    """No kv_transfer_params in the prefill's answer (a prefill rank without the connector): the router still
    sends the request to decode, without kv_transfer_params, so the decode rank would prefill it again itself
    (here the decode stub refuses it with 400, which the client gets)."""
    p, d = backend("prefill", send_kv=False), backend("decode")
    r = router(pd_args([p.url], [d.url], "--prefill-policy", "round_robin"))
    r.wait("/readiness")
    resp = r.post("/v1/completions", client_body("/v1/completions", False, "max_tokens"))
    assert resp.status == 400 and "decode stub: no kv_transfer_params" in resp.body, resp.body
    (dec,) = d.completions()
    assert "kv_transfer_params" not in dec.body and dec.body["max_tokens"] == 9


def test_the_entry_script_reads_the_key_from_a_file(
    backend: Callable[..., Backend], router: Callable[..., Router], tmp_path: Path
) -> None:
    """roles/gateway/files/vllm-router/vllm-router-entry.py: OPENAI_API_KEY_FILE (the role's 0600 file)
    becomes the router's OPENAI_API_KEY, which the real router then sends on both legs."""
    key = tmp_path / "key"
    key.write_text("sk-from-file\n", encoding="utf-8")
    p, d = backend("prefill"), backend("decode")
    r = router(
        pd_args([p.url], [d.url], "--prefill-policy", "round_robin"), env={"OPENAI_API_KEY_FILE": str(key)}
    )
    r.wait("/readiness")
    assert r.post("/v1/completions", client_body("/v1/completions", False, "max_tokens")).status == 200
    assert [s.headers["authorization"] for s in [*p.completions(), *d.completions()]] == [
        "Bearer sk-from-file"
    ] * 2
