"""HTTP probes from the controller (stdlib urllib, short timeouts): a replica's /health and the
vllm:num_requests_running gauge of its /metrics (neither needs the API key in vLLM), and the gateway's
worker list (vllm-router GET /list_workers -> {"urls": [...]}). On a prefill/decode site the front router
lists a PD router slot, whose own GET /workers -> {"workers": [{"url": ...}, ...]} lists the PD ranks."""

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


def _json_get(url: str, timeout: float) -> tuple[dict[str, object] | None, str]:
    try:
        status, body = _get(url, timeout)
        if status != 200:
            return None, f"GET {url}: HTTP {status}"
        data = json.loads(body)
    except (OSError, ValueError) as exc:
        return None, f"GET {url}: {exc}"
    return (data, "") if isinstance(data, dict) else (None, f"GET {url}: not a JSON object")


def _slot_workers(slot_url: str, timeout: float) -> tuple[set[str] | None, str]:
    """The PD ranks a PD router slot routes to (GET /workers of vllm-router in --vllm-pd-disaggregation)."""
    data, why = _json_get(f"{slot_url}/workers", timeout)
    workers = None if data is None else data.get("workers")
    if not isinstance(workers, list):
        return None, why or f"GET {slot_url}/workers: no 'workers' list in the answer"
    return {str(w.get("url", "")).rstrip("/") for w in workers if isinstance(w, dict)}, ""


def gateway_workers(
    gateway_url: str, pd_slots: frozenset[str] = frozenset(), timeout: float = TIMEOUT_S
) -> tuple[set[str] | None, str]:
    """The worker URLs the router lists, and behind each listed PD router slot (``pd_slots``: their URLs)
    the ranks that slot lists; None and why when one of them does not answer."""
    data, why = _json_get(f"{gateway_url}/list_workers", timeout)
    urls = None if data is None else data.get("urls")
    if not isinstance(urls, list):
        return None, why or f"GET {gateway_url}/list_workers: no 'urls' list in the answer"
    listed = {str(u).rstrip("/") for u in urls}
    for slot in sorted(listed & pd_slots):
        ranks, why = _slot_workers(slot, timeout)
        if ranks is None:
            return None, why
        listed |= ranks
    return listed, ""
