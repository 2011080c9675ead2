"""The gateway phase's variables (role gateway, group_vars/all.yml): vllm-router on the gateway host.

Contract with the serve phase's rollout: `gateway_enabled`, `gateway_host` (inventory name or null) and
`gateway_url` (http://<gateway address>:<port>, the router's client API and worker API: POST
/add_worker?url=, POST /remove_worker?url=, GET /list_workers) are what other roles read. A replica's worker
URL is its head's endpoint without /v1 (http://<head address>:<port>), as rollout_replicas[].endpoint.

`gateway_router_args` is the router's whole command line after `vllm-router` (flags of 0.1.17's
`vllm-router --help`), without --worker-urls: the router starts with no workers (with --worker-urls it exits
when they are not healthy within --worker-startup-timeout-secs) and the role adds the replica heads through
its worker API.

A PD site (plan.pd, serving.disaggregation) is different, as measured with the real router 0.1.17
(tests/unit/gateway_pd, docs/pd-gateway.md): its worker API cannot add a prefill or decode worker (POST
/workers and /add_worker answer 400 "PD router requires specific add_prefill_server or add_decode_server
methods"; --enable-igw can add them but routes by model name, one stage for any other name, and ignores the
stage policies), so the argv of a PD router carries every DP rank as a static --prefill URL none / --decode
URL. To change the lists without refusing clients (a router refuses connections while it drains), the
gateway of a PD site is a front router in regular mode on gateway.port (`gateway_router_args`, as without
PD) whose one worker is the active one of two PD routers ("slots" a and b, `gateway_pd_slots`, on
gateway.port + 1 and + 2); the role starts the idle slot with the new lists and swaps it in through the
front's worker API (docs/pd-gateway.md).
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlparse

from orchestrator.planning.model import SitePlan
from orchestrator.planning.pd_model import PdPlan
from orchestrator.render.vars.serve import worker_url
from orchestrator.spec.gateway import ROUTER_WHEELS, Gateway
from orchestrator.spec.site import SiteSpec


def router_args(gw: Gateway, address: str) -> list[str]:
    hc, rt, cb = gw.health_check, gw.retry, gw.circuit_breaker
    args = [
        "--host", address,
        "--port", str(gw.port),
        "--policy", gw.policy,
        "--prometheus-host", address,
        "--prometheus-port", str(gw.prometheus_port),
        "--request-timeout-secs", str(gw.request_timeout_s),
        "--max-concurrent-requests", str(gw.max_concurrent_requests),
        "--queue-size", str(gw.queue_size),
        "--queue-timeout-secs", str(gw.queue_timeout_s),
        "--worker-startup-timeout-secs", str(gw.worker_startup_timeout_s),
        "--worker-startup-check-interval", str(gw.worker_startup_check_interval_s),
        "--health-check-interval-secs", str(hc.interval_s),
        "--health-check-timeout-secs", str(hc.timeout_s),
        "--health-check-endpoint", hc.endpoint,
        "--health-failure-threshold", str(hc.failure_threshold),
        "--health-success-threshold", str(hc.success_threshold),
    ]  # fmt: skip
    if rt.enabled:
        args += [
            "--retry-max-retries", str(rt.max_retries),
            "--retry-initial-backoff-ms", str(rt.initial_backoff_ms),
            "--retry-max-backoff-ms", str(rt.max_backoff_ms),
            "--retry-backoff-multiplier", str(rt.backoff_multiplier),
            "--retry-jitter-factor", str(rt.jitter_factor),
        ]  # fmt: skip
    else:
        args.append("--disable-retries")
    if cb.enabled:
        args += [
            "--cb-failure-threshold", str(cb.failure_threshold),
            "--cb-success-threshold", str(cb.success_threshold),
            "--cb-timeout-duration-secs", str(cb.timeout_s),
            "--cb-window-duration-secs", str(cb.window_s),
        ]  # fmt: skip
    else:
        args.append("--disable-circuit-breaker")
    return args


def pd_router_args(gw: Gateway, pd: PdPlan) -> list[str]:
    """The PD part of the argv: every prefill and decode DP rank as a static worker (one URL per rank).

    - `--prefill URL none`: no bootstrap port. vllm-ascend's MooncakeConnectorV1 has no bootstrap server
      (its handshake is the kv_port ZMQ side channel; vllm-ascend #12364), and the prefill's
      kv_transfer_params carry remote_host/remote_port themselves.
    - `--kv-connector nixl`: the router's default, written out: the prefill-first two-stage request
      (prefill with max_tokens 1 and kv_transfer_params {do_remote_decode: true}, then decode with the
      prefill's kv_transfer_params) that vllm-ascend's load_balance_proxy_server_example.py also makes.
      `mooncake` is upstream vLLM's bootstrap protocol (transfer_id, remote_bootstrap_addr), not Ascend's.
    - no --intra-node-data-parallel-size: each URL is already one DP rank (external DP); a size > 1 would make
      the router split every URL into URL@0..URL@n-1 and send X-data-parallel-rank headers (measured). The
      router also counts the `engine` labels of each worker's /metrics; a one-rank `vllm serve` shows one.
    """
    args = ["--vllm-pd-disaggregation", "--kv-connector", "nixl"]
    for url in pd.worker_urls("prefill"):
        args += ["--prefill", url, "none"]
    for url in pd.worker_urls("decode"):
        args += ["--decode", url]
    return [*args, "--prefill-policy", gw.prefill_policy, "--decode-policy", gw.decode_policy]


PD_SLOTS = ("a", "b")
"""The two PD routers of the A/B swap; slot i listens on gateway.port + 1 + i, its metrics on
gateway.prometheus_port + 1 + i."""


def pd_slots(gw: Gateway, address: str, pd: PdPlan) -> list[dict[str, Any]]:
    """Each PD router slot: name, port, URL (the front's worker) and its whole argv."""
    slots = []
    for i, name in enumerate(PD_SLOTS):
        ports = {"port": gw.port + 1 + i, "prometheus_port": gw.prometheus_port + 1 + i}
        slot_gw = gw.model_copy(update=ports)
        slots.append(
            {
                "name": name,
                "port": slot_gw.port,
                "url": f"http://{address}:{slot_gw.port}",
                "args": router_args(slot_gw, address) + pd_router_args(slot_gw, pd),
            }
        )
    return slots


def _wheels(gw: Gateway) -> dict[str, dict[str, str]]:
    known = {arch: (url, sha) for arch, (url, sha) in ROUTER_WHEELS.get(gw.router.version, {}).items()}
    known.update({arch: (w.url, w.sha256) for arch, w in gw.router.wheels.items()})
    # folder and file name apart: a PyPI URL is longer than a YAML line may be (yamllint)
    return {
        arch: {
            "url_dir": url.rsplit("/", 1)[0],
            "filename": PurePosixPath(urlparse(url).path).name,
            "sha256": sha,
        }
        for arch, (url, sha) in sorted(known.items())
    }


def gateway_vars(spec: SiteSpec, plan: SitePlan) -> dict[str, Any]:
    gw = spec.gateway
    host = plan.roles.gateway  # None when the gateway is disabled
    address = plan.host(host).address if host else None
    url = f"http://{address}:{gw.port}" if address else None
    pd = plan.pd
    return {
        "gateway_enabled": gw.enabled,
        "gateway_host": host,
        "gateway_url": url,
        "gateway_router_version": gw.router.version,
        "gateway_router_wheels": _wheels(gw),
        "gateway_router_base_image": gw.router.base_image,
        "gateway_router_args": router_args(gw, address) if address else [],
        "gateway_worker_urls": [worker_url(r) for r in plan.replicas],
        "gateway_pd": pd is not None,
        "gateway_pd_slots": pd_slots(gw, address, pd) if pd is not None and address else [],
        "gateway_pd_prefill_urls": list(pd.worker_urls("prefill")) if pd else [],
        "gateway_pd_decode_urls": list(pd.worker_urls("decode")) if pd else [],
        # PD: the router sends this key (OPENAI_API_KEY in its environment) to the ranks, not the client's
        "gateway_api_key_ref": spec.serving.api_key if pd is not None else None,
        "gateway_worker_startup_timeout_s": gw.worker_startup_timeout_s,
    }
