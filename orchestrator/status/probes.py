"""HTTP probes from the controller (stdlib urllib, short timeouts): a replica's /health and the
vllm:num_requests_running gauge of its /metrics (neither needs the API key in vLLM), and the gateway's
worker list (vllm-router GET /list_workers -> {"urls": [...]})."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

TIMEOUT_S = 3.0
RUNNING = "vllm:num_requests_running"


@dataclass(frozen=True)
class Probe:
    ok: bool
    detail: str = ""  # why not (one line), or the answer's summary


def _get(url: str, timeout: float) -> tuple[int, bytes]:
    req = urllib.request.Request(url, headers={"Accept": "*/*"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return int(resp.status), resp.read(4 * 1024 * 1024)
    except urllib.error.HTTPError as exc:
        return int(exc.code), b""


def health(base_url: str, timeout: float = TIMEOUT_S) -> Probe:
    try:
        status, _ = _get(f"{base_url}/health", timeout)
    except (OSError, ValueError) as exc:
        return Probe(False, f"no answer: {exc}")
    return Probe(status == 200, f"HTTP {status}")


def requests_running(base_url: str, timeout: float = TIMEOUT_S) -> float | None:
    """The sum of vllm:num_requests_running over its label sets (one per model / engine); None when the
    metrics cannot be read."""
    try:
        status, body = _get(f"{base_url}/metrics", timeout)
        if status != 200:
            return None
        families = list(text_string_to_metric_families(body.decode("utf-8", "replace")))
    except (OSError, ValueError):
        return None
    samples = [s.value for f in families for s in f.samples if s.name == RUNNING]
    return float(sum(samples)) if samples else None


def gateway_workers(gateway_url: str, timeout: float = TIMEOUT_S) -> tuple[set[str] | None, str]:
    """The worker URLs the router lists (None and why when it does not answer)."""
    try:
        status, body = _get(f"{gateway_url}/list_workers", timeout)
        if status != 200:
            return None, f"GET {gateway_url}/list_workers: HTTP {status}"
        urls = json.loads(body).get("urls")
    except (OSError, ValueError, AttributeError) as exc:
        return None, f"GET {gateway_url}/list_workers: {exc}"
    if not isinstance(urls, list):
        return None, f"GET {gateway_url}/list_workers: no 'urls' list in the answer"
    return {str(u).rstrip("/") for u in urls}, ""
