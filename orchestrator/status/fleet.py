"""The replicas of a site as its rendered inventory describes them (group_vars/all.yml rollout_replicas and
gateway_url, host_vars/<server>.yml vllm_serve_instances), and their live state: healthy (/health from
the controller), release and image (the release records on their servers), requests running (the head's
/metrics), listed by the gateway (GET /list_workers)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from orchestrator.status.probes import Probe, gateway_workers, health, requests_running

if TYPE_CHECKING:  # bench reads the site (read_site) without the runner that reads the releases
    from orchestrator.status.releases import Releases


class InventoryMissing(Exception):
    """The site has no rendered inventory to read (a sentence with the fix)."""


@dataclass(frozen=True)
class Replica:
    name: str
    head: str
    members: tuple[str, ...]
    url: str  # worker URL: http://<head address>:<port> (what the gateway lists)
    containers: dict[str, str]  # server -> container name of this replica there


@dataclass(frozen=True)
class Site:
    name: str
    replicas: tuple[Replica, ...]
    gateway_url: str | None
    servers: tuple[str, ...]  # the NPU servers that run replica containers


def _yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise InventoryMissing(
            f"cannot read {path}: {exc}. Fix: run `orchestrator render SITE` (or an apply) first."
        ) from None
    return data if isinstance(data, dict) else {}


def read_site(inventory_dir: Path) -> Site:
    all_vars = _yaml(inventory_dir / "group_vars" / "all.yml")
    containers: dict[str, dict[str, str]] = {}  # replica -> server -> container
    for path in sorted((inventory_dir / "host_vars").glob("*.yml")):
        for inst in _yaml(path).get("vllm_serve_instances") or []:
            containers.setdefault(str(inst["replica"]), {})[path.stem] = str(inst["container_name"])
    replicas = tuple(
        Replica(
            name=str(r["name"]),
            head=str(r["head"]),
            members=tuple(str(m) for m in r.get("members") or [r["head"]]),
            url=str(r["worker_url"]).rstrip("/"),
            containers=containers.get(str(r["name"]), {}),
        )
        for r in all_vars.get("rollout_replicas") or []
    )
    gateway = all_vars.get("gateway_url") if all_vars.get("gateway_enabled") else None
    servers = sorted({s for r in replicas for s in r.containers})
    return Site(str(all_vars.get("orchestrator_site", "")), replicas, gateway, tuple(servers))


@dataclass
class ReplicaState:
    replica: str
    head: str
    members: list[str]
    url: str
    healthy: bool
    health: str  # "HTTP 200", "no answer: ..."
    requests_running: float | None
    in_gateway: bool | None  # None: no gateway, or it did not answer
    release: str | None  # the head container's current release (None: no record)
    image_id: str | None
    since: str | None  # when that release was recorded
    releases: dict[str, str | None] = field(default_factory=dict)  # member -> release / None / "unreachable"
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class FleetState:
    replicas: list[ReplicaState]
    gateway_url: str | None
    gateway_error: str = ""
    unreachable: dict[str, str] = field(default_factory=dict)  # server -> message (release records)
    failed: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "replicas": [r.as_dict() for r in self.replicas],
            "gateway": {"url": self.gateway_url, "error": self.gateway_error or None},
            "unreachable": self.unreachable,
            "failed": self.failed,
        }


def _member_release(releases: Releases, rep: Replica, server: str) -> str | None:
    if server in releases.unreachable:
        return "unreachable"
    cur = releases.current(server, rep.containers.get(server, ""))
    return str(cur.get("release")) if cur and cur.get("release") else None


def fleet_state(
    site: Site,
    releases: Releases,
    probe_health: Callable[[str], Probe] = health,
    probe_running: Callable[[str], float | None] = requests_running,
    probe_gateway: Callable[[str], tuple[set[str] | None, str]] = gateway_workers,
) -> FleetState:
    urls = [r.url for r in site.replicas]
    with ThreadPoolExecutor(max_workers=min(16, max(1, 2 * len(urls)))) as pool:
        healths = list(pool.map(probe_health, urls))
        running = list(pool.map(probe_running, urls))
    listed, gateway_error = (None, "") if site.gateway_url is None else probe_gateway(site.gateway_url)
    out = []
    for rep, h, n in zip(site.replicas, healths, running, strict=True):
        head = releases.current(rep.head, rep.containers.get(rep.head, "")) or {}
        per_member = {m: _member_release(releases, rep, m) for m in rep.members}
        state = ReplicaState(
            replica=rep.name,
            head=rep.head,
            members=list(rep.members),
            url=rep.url,
            healthy=h.ok,
            health=h.detail,
            requests_running=n,
            in_gateway=None if listed is None else rep.url in listed,
            release=str(head["release"]) if head.get("release") else None,
            image_id=str(head["image_id"]) if head.get("image_id") else None,
            since=str(head["time"]) if head.get("time") else None,
            releases=per_member,
        )
        if rep.head in releases.unreachable:
            state.note = f"{rep.head} unreachable: release unknown"
        out.append(state)
    return FleetState(out, site.gateway_url, gateway_error, dict(releases.unreachable), dict(releases.failed))
