# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""Why a serving container would (re)start: what `orchestrator plan` prints for a replica (check mode).

- ``running_results | ascend.npu.vllm_serve_why(records)``: per wanted container of this server that is not
  running the wanted release (docker_container_info loop results over _vllm_serve_wanted; records: the
  release records, {container: {"current": ..., "previous": ...} or None}), {replica, container, role,
  reason}. The reasons, from what the server runs (docker inspect) and its release record:
  "container missing", "container exited" (or another Docker state), "image differs" (the running image ID is
  not the one the image phase built), "arguments differ" (the command), "environment differs", "weights
  differ" (the release record's weights manifest is not the verified one), and "settings differ (NPUs, mounts,
  CPU set, shm or API key)" when the release hash differs for none of these.
"""

from __future__ import annotations

from typing import Any


def _differences(want: dict[str, Any], ctr: dict[str, Any], record: dict[str, Any]) -> list[str]:
    params = want["params"]
    config = ctr.get("Config") or {}
    out = []
    if ctr.get("Image") != params["image"]:
        out.append("image differs")
    if list(config.get("Cmd") or []) != [str(a) for a in params["command"]]:
        out.append("arguments differ")
    env = set(config.get("Env") or [])
    if any(f"{k}={v}" not in env for k, v in (params.get("env") or {}).items()):
        out.append("environment differs")
    recorded = record.get("weights_manifest_sha256")
    if recorded is not None and recorded != want["record"].get("weights_manifest_sha256"):
        out.append("weights differ")
    return out


def why(results: list[dict[str, Any]], records: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for res in results:
        want = res["item"]
        name = str(want["params"]["name"])
        ctr = res.get("container") if res.get("exists", True) else None
        entry = (records or {}).get(name) or {}
        record = entry.get("current") or {} if isinstance(entry, dict) else {}
        if not ctr:
            reasons = ["container missing"]
        else:
            state = ctr.get("State") or {}
            labels = (ctr.get("Config") or {}).get("Labels") or {}
            current = labels.get("io.ascend-orchestrator.release") == want["release"]
            if state.get("Running") and current:
                continue
            reasons = [] if state.get("Running") else [f"container {state.get('Status') or 'stopped'}"]
            if not current:
                reasons += _differences(want, ctr, record) or [
                    "settings differ (NPUs, mounts, CPU set, shm or API key)"
                ]
        reason = ", ".join(reasons)
        out.append({"replica": want["replica"], "container": name, "role": want["role"], "reason": reason})
    return out


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"vllm_serve_why": why}
