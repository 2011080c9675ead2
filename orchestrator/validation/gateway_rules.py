"""The gateway (vllm-router): what the pinned router refuses, or cannot do as the gateway role runs it."""

from __future__ import annotations

from collections.abc import Iterator

from orchestrator.spec.findings import Finding, error
from orchestrator.spec.gateway import ROUTER_WHEELS
from orchestrator.spec.site import SiteSpec


def check(spec: SiteSpec) -> Iterator[Finding]:
    gw = spec.gateway
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
