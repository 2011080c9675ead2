"""Where bench sends its load: `--endpoint`, else the site's gateway when the spec enables it, else the first
replica's head (the rendered inventory's gateway_url / rollout_replicas[0].worker_url, as
`orchestrator status` reads them); the served model name from the plan; the API key from serving.api_key
(env:NAME or file:PATH), which is sent as the bearer token and never printed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.status.fleet import read_site
from orchestrator.validation.controller import SecretMissing, resolve_secret


class TargetError(Exception):
    """No endpoint or key could be found (a sentence with the fix)."""


@dataclass(frozen=True)
class Target:
    base_url: str  # .../v1
    via: str  # "gateway", "replica <name>", "--endpoint"
    model: str
    api_key: str | None = field(default=None, repr=False)


def openai_base(url: str) -> str:
    url = url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


def read_secret(ref: str | None, spec_dir: Path) -> str | None:
    if ref is None:
        return None
    try:
        return resolve_secret(ref, spec_dir)
    except SecretMissing as exc:
        raise TargetError(
            f"serving.api_key is {ref}, and {exc}. Fix: make it resolve to the key the replicas were "
            "started with (export the variable, or run bench as a user who can read the file)."
        ) from None


def find_target(inventory_dir: Path, model: str, key_ref: str | None, endpoint: str | None) -> Target:
    key = read_secret(key_ref, inventory_dir)
    if endpoint:
        return Target(openai_base(endpoint), "--endpoint", model, key)
    site = read_site(inventory_dir)
    if site.gateway_url:
        return Target(openai_base(site.gateway_url), "gateway", model, key)
    if not site.replicas:
        raise TargetError(
            f"the rendered inventory in {inventory_dir} lists no replica. "
            "Fix: run `orchestrator render SITE` (or an apply), or pass --endpoint URL."
        )
    first = site.replicas[0]
    return Target(openai_base(first.url), f"replica {first.name}", model, key)
