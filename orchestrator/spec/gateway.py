"""The gateway: vllm-router (the vLLM project's Rust router, PyPI `vllm-router`) in front of the replicas.

Every field maps to a flag of the pinned router (`vllm-router --help` of 0.1.17; see
orchestrator/render/vars/gateway.py for the argv). Defaults are the router's own, except where a
slow-loading vLLM replica needs another: health checks every 10 s instead of 60 s (a dead replica leaves
the rotation within failure_threshold x interval), 3 retries instead of 5 (a request is not sent to the
whole fleet before it fails), worker start-up timeout 1800 s instead of 600 s and a 5 s check interval
instead of 30 s (a replica added while still loading is taken as soon as it answers /health).
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field, field_validator

from orchestrator.spec.common import Renamed, SpecModel

RouterPolicy = Literal[
    "random",
    "round_robin",
    "cache_aware",
    "kv_aware",
    "power_of_two",
    "consistent_hash",
    "sticky_least_loaded",
]
"""Exactly the `--policy` choices of vllm-router 0.1.17 (vllm_router/router_args.py)."""

POLICY_DOCS: dict[str, str] = {
    "round_robin": "each request to the next healthy replica in turn",
    "random": "each request to a random healthy replica",
    "power_of_two": "of two random healthy replicas, to the one with fewer requests in flight (needs 2 or "
    "more replicas)",
    "cache_aware": "to the replica whose earlier requests share the longest prompt prefix (prefix-cache "
    "hits), or to the least loaded one when the load is uneven",
    "kv_aware": "to the replica whose KV cache (as its vLLM reports it in KV events) holds the longest "
    "prefix of the prompt, else to the least loaded one",
    "consistent_hash": "keeps a user's session on one replica: requests with the same X-Session-ID header "
    "(else X-User-ID, then the OpenAI 'user' field) always go to the same replica",
    "sticky_least_loaded": "a new session (X-Session-ID ...) goes to the replica with the fewest active "
    "sessions and stays there; requests without a session go to the least loaded replica",
}
"""Each policy in a sentence, from vllm-router's docs/load_balancing/README.md and src/policies/*.rs
(https://github.com/vllm-project/router)."""


def policy_hint(written: str) -> str:
    """What to write instead of a policy that is not one: the session policies for words about sessions."""
    if any(word in written.lower() for word in ("stick", "session", "affin", "user", "hash")):
        return (
            "to keep each user's session on one replica, write consistent_hash (clients send X-Session-ID or "
            "X-User-ID) or sticky_least_loaded. "
        )
    return ""


def policy_help() -> str:
    """Every policy with its sentence, for the docs and the fix of a wrong gateway.policy."""
    return "; ".join(f"{name}: {POLICY_DOCS[name]}" for name in get_args(RouterPolicy))


RouterArch = Literal["x86_64", "aarch64"]

DEFAULT_ROUTER_VERSION = "0.1.17"

# Wheels of the pinned router, from PyPI's JSON API (https://pypi.org/pypi/vllm-router/json, releases
# ["0.1.17"]: url and digests.sha256 of each manylinux_2_28 wheel). Both are cp38-abi3: any CPython >= 3.8
# on glibc >= 2.28 loads them.
ROUTER_WHEELS: dict[str, dict[str, tuple[str, str]]] = {
    "0.1.17": {
        "x86_64": (
            "https://files.pythonhosted.org/packages/26/99/48e47ba5847cbb3c3fabc65973a8de7c00ad429f29c3aace954b"
            "56771431/vllm_router-0.1.17-cp38-abi3-manylinux_2_28_x86_64.whl",
            "85c96bea4d573a49b5a8ae4c72ee3dfe733aba26b6f1ff1256e6142f1f42694d",
        ),
        "aarch64": (
            "https://files.pythonhosted.org/packages/62/fc/1d4c8aaace174fa056a1b5a3bc445f6ec735b0ff1d9ad30620b8"
            "09d49e7e/vllm_router-0.1.17-cp38-abi3-manylinux_2_28_aarch64.whl",
            "1ec4d5ce14c19431cc84e36238507dff89020ab024d99f042f091f5e9f2c895a",
        ),
    }
}

RENAMED_POLICIES: dict[str, Renamed] = {
    "least_outstanding": Renamed(
        "sticky_least_loaded",
        "the gateway is vllm-router now and it has no 'least_outstanding'; its closest equivalent is "
        "'sticky_least_loaded' (the least loaded replica; requests carrying a session id stay on theirs), "
        "else write 'round_robin' (the default)",
        "the closest equivalent: the least loaded replica, requests carrying a session id stay on theirs; "
        "'round_robin', the default, is the other choice",
    ),
}
"""Policy names the spec used to accept: the policy `orchestrator migrate` writes and the error's words."""


class RouterWheel(SpecModel):
    url: str = Field(description="Where the controller downloads the wheel when it is not in its cache.")
    sha256: str = Field(pattern="^[0-9a-f]{64}$", description="SHA-256 of the wheel (PyPI's digests.sha256).")


class RouterBuild(SpecModel):
    version: str = Field(
        DEFAULT_ROUTER_VERSION,
        pattern=r"^[0-9]+\.[0-9]+\.[0-9]+([a-z0-9.+-]*)$",
        description="vllm-router release (PyPI). Known here: 0.1.17; another needs 'wheels'.",
    )
    wheels: dict[RouterArch, RouterWheel] = Field(
        default_factory=dict,
        description="Per architecture: wheel URL and sha256 (default: PyPI's, for a known version).",
    )
    base_image: str = Field(
        "python:3.12-slim-bookworm",
        min_length=1,
        description="Image the router container is built FROM on the gateway host: needs python3 >= 3.8 and "
        "glibc >= 2.28 (nothing is installed from the network).",
    )


class HealthCheck(SpecModel):
    interval_s: int = Field(10, ge=1, le=3600, description="Seconds between the router's worker checks.")
    timeout_s: int = Field(5, ge=1, le=600, description="Timeout of one check.")
    endpoint: str = Field("/health", pattern="^/", description="Path checked on each worker (no auth).")
    failure_threshold: int = Field(3, ge=1, le=1000, description="Failed checks before out of rotation.")
    success_threshold: int = Field(2, ge=1, le=1000, description="Passed checks before back in rotation.")


class Retry(SpecModel):
    enabled: bool = Field(True, description="false: --disable-retries (one attempt).")
    max_retries: int = Field(3, ge=1, le=100, description="Attempts per request (router default 5).")
    initial_backoff_ms: int = Field(50, ge=0, le=600_000)
    max_backoff_ms: int = Field(30_000, ge=0, le=3_600_000)
    backoff_multiplier: float = Field(1.5, ge=1, le=100, allow_inf_nan=False)
    jitter_factor: float = Field(0.2, ge=0, le=1, allow_inf_nan=False)


class CircuitBreaker(SpecModel):
    enabled: bool = Field(True, description="false: --disable-circuit-breaker.")
    failure_threshold: int = Field(10, ge=1, le=100_000, description="Failures that open a worker's circuit.")
    success_threshold: int = Field(3, ge=1, le=100_000, description="Successes that close it again.")
    timeout_s: int = Field(60, ge=1, le=86_400, description="Open time before a trial request.")
    window_s: int = Field(120, ge=1, le=86_400, description="Window the failures are counted in.")


class Gateway(SpecModel):
    enabled: bool = False
    host: str | None = Field(None, description="Server with role 'gateway' (default: the first such server).")
    port: int = Field(8080, ge=1, le=65535, description="Client API and worker API (/add_worker ...) port.")
    policy: RouterPolicy = Field(
        "round_robin",
        description="vllm-router --policy, where it sends each request. "
        + policy_help()
        + ". round_robin needs nothing from the workers but /health; cache_aware and kv_aware also call "
        "POST /v1/completions/render (docs/playbooks.md).",
    )
    prefill_policy: RouterPolicy = Field(
        "cache_aware",
        description="PD sites only (serving.disaggregation): vllm-router --prefill-policy, which prefill DP "
        "rank gets a request. cache_aware (the router docs' recommendation for prefill: prompts sharing a "
        "prefix meet the prefix cache; it calls POST /v1/completions/render on the prefill ranks).",
    )
    decode_policy: RouterPolicy = Field(
        "round_robin",
        description="PD sites only: vllm-router --decode-policy, which decode DP rank gets the request after "
        "its prefill. round_robin (the router docs recommend power_of_two or round_robin for decode; "
        "power_of_two needs 2 or more decode ranks).",
    )
    router: RouterBuild = Field(default_factory=RouterBuild)
    prometheus_port: int = Field(29000, ge=1, le=65535, description="The router's own /metrics listener.")
    request_timeout_s: int = Field(1800, ge=1, le=86_400, description="Per request, streaming included.")
    max_concurrent_requests: int = Field(32768, ge=1, le=10_000_000)
    queue_size: int = Field(
        100, ge=0, le=10_000_000, description="Waiting requests beyond the limit (0: 429)."
    )
    queue_timeout_s: int = Field(60, ge=1, le=86_400)
    worker_startup_timeout_s: int = Field(
        1800, ge=10, le=86_400, description="How long POST /add_worker waits for a worker's /health."
    )
    worker_startup_check_interval_s: int = Field(5, ge=1, le=3600)
    health_check: HealthCheck = Field(default_factory=HealthCheck)
    retry: Retry = Field(default_factory=Retry)
    circuit_breaker: CircuitBreaker = Field(default_factory=CircuitBreaker)

    @field_validator("policy", "prefill_policy", "decode_policy", mode="before")
    @classmethod
    def _renamed(cls, value: object) -> object:
        if isinstance(value, str) and value in RENAMED_POLICIES:
            raise ValueError(f"'{value}' is not a vllm-router policy: {RENAMED_POLICIES[value].why}")
        return value
