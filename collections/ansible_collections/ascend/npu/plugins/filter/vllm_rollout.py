# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""Filters of the serve phase's rolling update (run on the controller).

- ``results | ascend.npu.vllm_serve_existing``: replicas with a container of this server (any state), from
  docker_container_info loop results over the wanted containers.
- ``replicas | ascend.npu.vllm_serve_new(hostvars, play_hosts)``: of the replicas to (re)start
  (_vllm_serve_restart), those without any member container on a server of the play: a first deploy,
  no traffic, started all at once; the others roll.
- ``slurp_results | ascend.npu.vllm_serve_records``: {container: release record or None}.
- ``wanted | ascend.npu.vllm_serve_rollout_entries(records, replicas, rollback)``: per container of
  ``replicas`` what the rollout starts (``target``: docker_container params and record) and what a failed
  gate restores (``restore``: the release running now, from its record; None when the record has no
  params; ``kept``: the record's previous release, for a restart of the current one). ``rollback``: the
  target is the record's previous release instead of the spec's.
- ``names | ascend.npu.rollout_missing_previous(records, wanted)``: replicas without a previous release.
- ``host | ascend.npu.rollout_batch(play_hosts_all, serial)``: [n, N] of the batch holding ``host``.
- ``hosts | ascend.npu.rollout_batches(serial)``: the batches Ansible's ``serial`` makes of ``hosts``, for
  the rendered ``play_serve_serial`` (batch sizes the plan computed from rollout.batch_size).
- ``replica | ascend.npu.rollout_rolls(hostvars)``: whether the replica (an entry of rollout_replicas)
  rolls: its head lists it in _vllm_serve_update and every member has its entries.
- ``replicas | ascend.npu.rollout_heads(hostvars)``: the head servers of the replicas that roll, once each,
  in plan order (the hosts of the rolling play: the canary is the head of the plan's first replica to roll).
- ``replicas | ascend.npu.rollout_headed(head, hostvars)``: the replicas ``head`` heads that roll, in plan
  order (it rolls them one after another).
- ``replicas | ascend.npu.rollout_orphans(host, hostvars, play_hosts)``: {replica: [servers left out]} of
  the replicas ``host`` is a member of and wants to update while another of their members is not in the play
  (``--limit`` left it out): a replica rolls as a unit, so it would not roll.
- ``replica | ascend.npu.rollout_members(hostvars, key)``: [{host, ...entry}] of a replica's members, from
  each member's ``key`` list (e.g. _vllm_serve_entries).
"""

from __future__ import annotations

from typing import Any


def existing(results: list[dict[str, Any]]) -> list[str]:
    return sorted({str(r["item"]["replica"]) for r in results if r.get("exists")})


def _hostvar(hostvars: Any, host: str, name: str, default: Any) -> Any:
    try:
        value = hostvars[host].get(name)
    except (KeyError, AttributeError):
        return default
    return default if value is None else value


def new(
    replicas: list[str], rollout_replicas: list[dict[str, Any]], hostvars: Any, play_hosts: list[str]
) -> list[str]:
    out = []
    for rep in rollout_replicas:
        if rep["name"] not in replicas:
            continue
        members = [m for m in rep.get("members") or [] if m in play_hosts]
        if not any(rep["name"] in _hostvar(hostvars, m, "_vllm_serve_existing", []) for m in members):
            out.append(str(rep["name"]))
    return out


def records(results: list[dict[str, Any]]) -> dict[str, Any]:
    import base64
    import json

    out: dict[str, Any] = {}
    for res in results:
        name = str(res["item"]["params"]["name"])
        try:
            out[name] = json.loads(base64.b64decode(res["content"]))
        except (KeyError, ValueError, TypeError):
            out[name] = None
    return out


def _release(entry: dict[str, Any] | None) -> dict[str, Any] | None:
    if not entry or not entry.get("params"):
        return None
    record = {k: v for k, v in entry.items() if k not in ("params", "time")}
    return {"params": entry["params"], "record": record}


def rollout_entries(
    wanted: list[dict[str, Any]], recs: dict[str, Any], replicas: list[str], rollback: bool
) -> list[dict[str, Any]]:
    out = []
    for want in wanted:
        if want["replica"] not in replicas:
            continue
        name = str(want["params"]["name"])
        rec = recs.get(name) or {}
        current = _release(rec.get("current"))
        if rollback:
            target = _release(rec.get("previous"))
        else:
            target = {"params": want["params"], "record": want["record"]}
        out.append(
            {
                "replica": want["replica"],
                "role": want["role"],
                "name": name,
                "target": target,
                "restore": current,
                # the record's previous release as written, kept when the target is the current release
                # again (a heal's restart): a restart must not cost the rollback its target
                "kept": rec.get("previous") if _release(rec.get("previous")) else None,
                "address": want.get("address"),
                "port": want.get("port"),
            }
        )
    return out


def missing_previous(replicas: list[str], recs: dict[str, Any], wanted: list[dict[str, Any]]) -> list[str]:
    out = []
    for want in wanted:
        rec = recs.get(str(want["params"]["name"])) or {}
        if want["replica"] in replicas and _release(rec.get("previous")) is None:
            out.append(str(want["replica"]))
    return sorted(set(out))


def _sizes(serial: Any) -> list[int]:
    """The rendered batch sizes (play_serve_serial: whole numbers, planned from rollout.batch_size; nothing
    to parse here)."""
    items = serial if isinstance(serial, list) else [serial]
    sizes = [int(item) for item in items]
    if not sizes or any(size < 1 for size in sizes):
        raise ValueError(f"serial must be a list of batch sizes >= 1 (play_serve_serial), got {serial!r}")
    return sizes


def batches(hosts: list[str], serial: Any) -> list[list[str]]:
    hosts = list(hosts)
    sizes = _sizes(serial)
    out: list[list[str]] = []
    i = 0
    while i < len(hosts):
        size = sizes[min(len(out), len(sizes) - 1)]
        out.append(hosts[i : i + size])
        i += size
    return out


def batch(host: str, play_hosts_all: list[str], serial: Any) -> list[int]:
    split = batches(play_hosts_all, serial)
    for n, names in enumerate(split, 1):
        if host in names:
            return [n, len(split)]
    return [0, len(split)]


def members(replica: dict[str, Any], hostvars: Any, key: str) -> list[dict[str, Any]]:
    out = []
    for host in replica.get("members") or []:
        for entry in _hostvar(hostvars, host, key, []):
            if entry["replica"] == replica["name"]:
                out.append({"host": host, **entry})
    return out


def rolls(replica: dict[str, Any], hostvars: Any) -> bool:
    """True when the replica's head lists it among the replicas to update and every member computed what
    to start for it (a member that failed or was left out of the play did not: the replica stays as is)."""
    if replica["name"] not in _hostvar(hostvars, replica["head"], "_vllm_serve_update", []):
        return False
    return all(
        any(e["replica"] == replica["name"] for e in _hostvar(hostvars, m, "_vllm_serve_entries", []))
        for m in replica.get("members") or []
    )


def heads(replicas: list[dict[str, Any]], hostvars: Any) -> list[str]:
    out: list[str] = []
    for rep in replicas:
        if rolls(rep, hostvars) and rep["head"] not in out:
            out.append(str(rep["head"]))
    return out


def headed(replicas: list[dict[str, Any]], head: str, hostvars: Any) -> list[dict[str, Any]]:
    return [rep for rep in replicas if rep["head"] == head and rolls(rep, hostvars)]


def orphans(
    replicas: list[dict[str, Any]], host: str, hostvars: Any, play_hosts: list[str]
) -> dict[str, list[str]]:
    entries = _hostvar(hostvars, host, "_vllm_serve_entries", [])
    out: dict[str, list[str]] = {}
    for rep in replicas:
        members = rep.get("members") or []
        if host not in members or not any(e["replica"] == rep["name"] for e in entries):
            continue
        left_out = [str(m) for m in members if m not in play_hosts]
        if left_out:
            out[str(rep["name"])] = left_out
    return out


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "vllm_serve_existing": existing,
            "vllm_serve_new": new,
            "vllm_serve_records": records,
            "vllm_serve_rollout_entries": rollout_entries,
            "rollout_missing_previous": missing_previous,
            "rollout_batches": batches,
            "rollout_batch": batch,
            "rollout_members": members,
            "rollout_rolls": rolls,
            "rollout_heads": heads,
            "rollout_headed": headed,
            "rollout_orphans": orphans,
        }
