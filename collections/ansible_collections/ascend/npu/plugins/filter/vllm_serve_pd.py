# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""Filters of the serve phase on a prefill/decode disaggregated site (run on the controller).

- ``replicas | ascend.npu.vllm_pd_pairs(pd)``: the PD round trips that gate the PD instances ``replicas``
  (entries of rollout_replicas with mode "pd"; ``pd``: group_vars vllm_serve_pd): one per DP rank of each
  instance, paired with a rank of the other pool (chosen by the rank's index, so the round trips of one
  instance spread over the other pool), as ``ascend.npu.vllm_pd_roundtrip`` takes them: {label,
  prefill_url, decode_url, prefill_engine_id, check, partners}. ``check`` is the gated side: a prefill
  instance must free the KV once the decode pulled it, a decode instance must have pulled it. ``partners``:
  that rank and the next ones of the other pool (at most PARTNERS, {url, engine_id}), from which the module
  takes the first that answers /health, so one partner down or restarting does not fail the gate.
- ``replicas | ascend.npu.vllm_replica_ranks``: every API server of ``replicas`` (entries of
  rollout_replicas) as {name, url}: a PD instance's every DP rank (``urls``), an aggregated replica's head
  (``worker_url``). What drift's health probe asks.
"""

from __future__ import annotations

from typing import Any

PARTNERS = 4  # a partner that does not answer costs the module up to 3 s of its round-trip timeout


def _engines(pd: dict[str, Any]) -> dict[str, str]:
    """URL of every DP rank -> the engine id it reports (the rank's, rendered: vLLM's _dp suffix included)."""
    return {
        str(rank["url"]): str(rank.get("engine_id", inst["engine_id"]))
        for inst in pd.get("instances") or []
        for rank in inst.get("ranks") or []
    }


def pairs(replicas: list[dict[str, Any]], pd: dict[str, Any] | None) -> list[dict[str, Any]]:
    if not pd:
        return []
    engines = _engines(pd)
    out: list[dict[str, Any]] = []
    for rep in replicas:
        if rep.get("mode") != "pd":
            continue
        pool = str(rep["pool"])
        side = "decode_worker_urls" if pool == "prefill" else "prefill_worker_urls"
        other = [str(u) for u in pd.get(side) or []]
        if not other:
            raise ValueError(f"PD instance {rep['name']} ({pool}) has no rank of the other pool to pair with")
        for i, url in enumerate(rep.get("urls") or [rep["worker_url"]]):
            partner = other[i % len(other)]
            tried = [other[(i + k) % len(other)] for k in range(min(PARTNERS, len(other)))]
            prefill, decode = (str(url), partner) if pool == "prefill" else (partner, str(url))
            out.append(
                {
                    "label": f"{pool} instance {rep['name']} rank {url}",
                    "prefill_url": prefill,
                    "decode_url": decode,
                    "prefill_engine_id": engines.get(prefill, str(rep.get("engine_id", ""))),
                    "check": pool,
                    "partners": [{"url": u, "engine_id": engines.get(u, "")} for u in tried],
                }
            )
    return out


def replica_ranks(replicas: list[dict[str, Any]]) -> list[dict[str, str]]:
    return [
        {"name": str(rep["name"]), "url": str(url)}
        for rep in replicas
        for url in rep.get("urls") or [rep["worker_url"]]
    ]


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"vllm_pd_pairs": pairs, "vllm_replica_ranks": replica_ranks}
