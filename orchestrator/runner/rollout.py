"""The serve phase's rolling update as the apply reports it.

Each replica that rolls in playbooks/serve.yml records its outcome with set_stats on its head server (key
``orchestrator_rollout``: {replica: {batch, batches, result, gates, ...}}; a batch is a set of head servers,
each rolling its replicas one after another); the gate module's results carry
``gates`` and ``label`` ("batch n/N replica R"), which the progress output prints as they arrive.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

STAT = "orchestrator_rollout"
OK_RESULTS = ("updated", "rolled_back", "healed")


def summary(artifact_data: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """{batches: [[replica, ...], ...], replicas: {name: {...}}, result} or None when nothing rolled."""
    data = (artifact_data or {}).get(STAT)
    if not isinstance(data, Mapping) or not data:
        return None
    replicas = {str(k): dict(v) for k, v in data.items() if isinstance(v, Mapping)}
    planned = max((int(r.get("batches") or 0) for r in replicas.values()), default=0)
    batches: list[list[str]] = []
    for n in range(1, max(planned, *(int(r.get("batch") or 0) for r in replicas.values())) + 1):
        names = [name for name, r in replicas.items() if int(r.get("batch") or 0) == n]
        if names:
            batches.append(names)
    ok = all(str(r.get("result")) in OK_RESULTS for r in replicas.values())
    return {
        "batches": batches,
        "batches_planned": planned,
        "replicas": replicas,
        "result": "ok" if ok else "failed",
        **timing(replicas),
    }


def _gate_s(rep: Mapping[str, Any], names: tuple[str, ...]) -> float:
    return sum(float(g.get("seconds") or 0) for g in rep.get("gates") or [] if g.get("gate") in names)


def timing(replicas: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """wall_s: first replica taken out to last one done; ready_sum_s: the replicas' times to ready (their
    health gates, i.e. start to /health 200); ready_to_passed_s: per replica, /health 200 to the gates
    passed without the soak and the warm-up (models, completion, accuracy, gateway), soak_s and warmup_s
    apart."""
    starts = [float(r["started"]) for r in replicas.values() if r.get("started") is not None]
    ends = [float(r["finished"]) for r in replicas.values() if r.get("finished") is not None]
    if not starts or not ends:
        return {}
    ready = sum(_gate_s(r, ("health",)) for r in replicas.values())
    return {
        "wall_s": round(max(ends) - min(starts), 1),
        "ready_sum_s": round(ready, 1),
        "ready_to_passed_s": {
            name: round(_gate_s(r, ("models", "completion", "accuracy", "gateway")), 2)
            for name, r in replicas.items()
        },
        "soak_s": {name: round(_gate_s(r, ("soak",)), 2) for name, r in replicas.items()},
        "warmup_s": {name: round(_gate_s(r, ("warmup",)), 2) for name, r in replicas.items()},
    }


def gate_lines(res: Mapping[str, Any]) -> list[str]:
    """One line per gate of a vllm_gate result, e.g.
    'batch 1/2 replica r0: gate health ok (3.1 s): /health 200'."""
    gates = res.get("gates")
    if not isinstance(gates, list) or not gates:
        return []
    label = str(res.get("label") or "replica")
    out = []
    for g in gates:
        if isinstance(g, Mapping):
            state = "ok" if g.get("ok") else "FAILED"
            seen = str(g.get("seen"))
            what = seen if g.get("ok") else f"expected {g.get('expected')}, seen {seen}"
            out.append(
                f"{label}: gate {g.get('gate')} {state} ({float(g.get('seconds') or 0):.1f} s): {what}"
            )
    return out


def startup_line(res: Mapping[str, Any]) -> str | None:
    """The line of a vllm_gate call that returned while its replica still starts (progress_s), e.g.
    'batch 1/2 replica r0: vllm-r0 starting for 95 s: loading weights: 74/163 shards (45%)'."""
    if not res.get("pending"):
        return None
    label = str(res.get("label") or "replica")
    container = f" {res['container']}" if res.get("container") else ""
    return (
        f"{label}:{container} starting for {float(res.get('waited_s') or 0):.0f} s: "
        f"{res.get('progress') or 'no phase in its log yet'}"
    )
