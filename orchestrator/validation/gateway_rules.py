"""The gateway (vllm-router): what the pinned router refuses, or cannot do as the gateway role runs it."""

from __future__ import annotations

from collections.abc import Iterator

from orchestrator.spec.disaggregation import Disaggregation, PdPool
from orchestrator.spec.findings import Finding, error, warning
from orchestrator.spec.gateway import ROUTER_WHEELS
from orchestrator.spec.site import SiteSpec


def _ranks(pool: PdPool) -> int:
    """Gateway workers of a pool: one per DP rank (every rank is its own `vllm serve`)."""
    return len(pool.instances) * pool.parallelism.dp


def check_pd(spec: SiteSpec, pd: Disaggregation) -> Iterator[Finding]:
    """A PD site: the two-stage request (prefill, then decode with the prefill's kv_transfer_params) is the
    gateway's."""
    gw = spec.gateway
    if not gw.enabled:  # validation/pd_rules.py reports it (pd-gateway)
        return
    if pd.connector == "MooncakeLayerwiseConnector":
        yield error(
            ("serving", "disaggregation", "connector"),
            "MooncakeLayerwiseConnector is decode-first (the proxy sends to decode, decode calls the proxy's "
            "/v1/metaserver, then the proxy sends to prefill: vllm-ascend "
            "examples/disaggregated_prefill_v1/load_balance_proxy_layerwise_server_example.py @v0.23.0); "
            "vllm-router's two-stage path is prefill-first only",
            "use MooncakeConnectorV1 (decode pulls the KV after the prefill), which the PD gateway carries",
            code="gateway",
        )
    for stage, policy, pool in (
        ("prefill", gw.prefill_policy, pd.prefill),
        ("decode", gw.decode_policy, pd.decode),
    ):
        if policy == "power_of_two" and _ranks(pool) < 2:
            # measured with 0.1.17 (tests/unit/gateway_pd): "Power-of-two policy for decode requires at
            # least 2 decode workers", exit 1 at start-up
            yield error(
                ("gateway", f"{stage}_policy"),
                f"vllm-router refuses to start with {stage} policy power_of_two and {_ranks(pool)} {stage} "
                "worker (it needs 2 or more; each DP rank is one worker)",
                f"use round_robin for {stage}, or give the {stage} pool 2 or more DP ranks",
                code="gateway",
            )
    ports = [gw.port + i for i in range(3)] + [gw.prometheus_port + i for i in range(3)]
    if len(set(ports)) < len(ports) or max(ports) > 65535:
        yield error(
            ("gateway", "prometheus_port"),
            f"a PD gateway listens on gateway.port {gw.port} (the front router), {gw.port + 1} and "
            f"{gw.port + 2} (the two PD routers it swaps between), and their metrics on "
            f"{gw.prometheus_port}-{gw.prometheus_port + 2}: these must be 6 different ports <= 65535",
            "keep gateway.port and gateway.prometheus_port at least 3 apart (defaults 8080 and 29000)",
            code="gateway",
        )
    if spec.serving.api_key is not None:
        yield warning(
            ("serving", "api_key"),
            "in PD mode vllm-router 0.1.17 sends its own OPENAI_API_KEY (not the client's Authorization) to "
            "the prefill and decode ranks, and it accepts clients without a key: the gateway host holds "
            "the serving key (the router's environment) and the gateway port is open to anyone who reaches "
            "it",
            "keep the gateway port on a protected network, or put an authenticating proxy in front of it "
            "(docs/pd-gateway.md)",
            code="gateway",
        )


def check(spec: SiteSpec) -> Iterator[Finding]:
    gw = spec.gateway
    pd = spec.serving.disaggregation
    if pd is not None:
        yield from check_pd(spec, pd)
    if not gw.enabled:
        return
    if gw.policy == "power_of_two":
        # measured with 0.1.17: "Configuration validation failed: Incompatible configuration: Power-of-two
        # policy requires at least 2 workers" at start-up without --worker-urls
        yield error(
            ("gateway", "policy"),
            "vllm-router refuses to start with policy power_of_two and fewer than 2 --worker-urls, and the "
            "gateway role starts it without workers (it adds the replicas through its worker API, so that a "
            "replica still loading does not stop the router)",
            "use 'sticky_least_loaded' (least loaded replica) or 'round_robin'",
            code="gateway",
        )
    if gw.router.version not in ROUTER_WHEELS and not gw.router.wheels:
        known = ", ".join(sorted(ROUTER_WHEELS))
        yield error(
            ("gateway", "router", "version"),
            f"no wheel checksums are known here for vllm-router {gw.router.version} (known: {known})",
            "add gateway.router.wheels: {x86_64: {url: ..., sha256: ...}, aarch64: {...}} from "
            f"https://pypi.org/pypi/vllm-router/{gw.router.version}/json (urls[].url, digests.sha256), or "
            f"use version {known}",
            code="gateway",
        )
    if gw.prometheus_port == gw.port:
        yield error(
            ("gateway", "prometheus_port"),
            f"the router's metrics listener and its API would both bind port {gw.port}",
            "pick another gateway.prometheus_port (default 29000)",
            code="gateway",
        )
