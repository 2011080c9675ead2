"""The replicas of a site as its rendered inventory describes them (group_vars/all.yml rollout_replicas and
gateway_url, host_vars/<server>.yml vllm_serve_instances), and their live state: healthy (/health from
the controller), release and image (the release records on their servers), requests running (the head's
/metrics), listed by the gateway (GET /list_workers).

A prefill/decode instance (rollout_replicas[] with ``urls``) is a replica whose every DP rank runs its own API
server: it is healthy when every rank is, its requests are the ranks' sum, and it is in the gateway when the
PD router slot the front lists (group_vars gateway_pd_slots) lists every rank."""

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
    containers: dict[str, str]  # server -> container name of this replica there (its first one)
    urls: tuple[str, ...] = ()  # a PD instance's DP ranks, each its own API server (url: the first)

    @property
    def ranks(self) -> tuple[str, ...]:
        return self.urls or (self.url,)


@dataclass(frozen=True)
class Site:
    name: str
    replicas: tuple[Replica, ...]
    gateway_url: str | None
    servers: tuple[str, ...]  # the NPU servers that run replica containers
    pd_slots: frozenset[str] = frozenset()  # URLs of the PD router slots (the front lists the active one)


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
            containers.setdefault(str(inst["replica"]), {}).setdefault(path.stem, str(inst["container_name"]))
    replicas = tuple(
        Replica(
            name=str(r["name"]),
            head=str(r["head"]),
            members=tuple(str(m) for m in r.get("members") or [r["head"]]),
            url=str(r["worker_url"]).rstrip("/"),
            containers=containers.get(str(r["name"]), {}),
            urls=tuple(str(u).rstrip("/") for u in r.get("urls") or []),
        )
        for r in all_vars.get("rollout_replicas") or []
    )
    gateway = all_vars.get("gateway_url") if all_vars.get("gateway_enabled") else None
    servers = sorted({s for r in replicas for s in r.containers})
    slots = frozenset(str(s["url"]).rstrip("/") for s in all_vars.get("gateway_pd_slots") or [])
    return Site(str(all_vars.get("orchestrator_site", "")), replicas, gateway, tuple(servers), slots)


@dataclass
class ReplicaState:
    replica: str
    head: str
    members: list[str]
    url: str
    healthy: bool
    health: str  # "HTTP 200", "no answer: ..." (a PD instance: "<rank url>: ..." of its first unhealthy rank)
    requests_running: float | None
    in_gateway: bool | None  # None: no gateway, or it did not answer
    release: str | None  # the head container's current release (None: no record)
    image_id: str | None
    since: str | None  # when that release was recorded
    releases: dict[str, str | None] = field(default_factory=dict)  # member -> release / None / "unreachable"
    note: str = ""
    urls: list[str] = field(default_factory=list)  # every rank's URL (one for an aggregated replica)

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


def _health(rep: Replica, probes: dict[str, Probe]) -> Probe:
    """Healthy when every rank is; the detail of the first rank that is not (named when there are several)."""
    bad = [(u, probes[u]) for u in rep.ranks if not probes[u].ok]
    if not bad:
        return probes[rep.ranks[0]]
    url, probe = bad[0]
    return Probe(False, probe.detail if len(rep.ranks) == 1 else f"{url}: {probe.detail}")


def _running(rep: Replica, running: dict[str, float | None]) -> float | None:
    known = [n for n in (running[u] for u in rep.ranks) if n is not None]
    return float(sum(known)) if known else None


def fleet_state(
    site: Site,
    releases: Releases,
    probe_health: Callable[[str], Probe] = health,
    probe_running: Callable[[str], float | None] = requests_running,
    probe_gateway: Callable[[str, frozenset[str]], tuple[set[str] | None, str]] = gateway_workers,
) -> FleetState:
    urls = sorted({u for r in site.replicas for u in r.ranks})
    with ThreadPoolExecutor(max_workers=min(16, max(1, 2 * len(urls)))) as pool:
        healths = dict(zip(urls, pool.map(probe_health, urls), strict=True))
        running = dict(zip(urls, pool.map(probe_running, urls), strict=True))
    listed, gateway_error = (
        (None, "") if site.gateway_url is None else probe_gateway(site.gateway_url, site.pd_slots)
    )
    out = []
    for rep in site.replicas:
        h = _health(rep, healths)
        head = releases.current(rep.head, rep.containers.get(rep.head, "")) or {}
        per_member = {m: _member_release(releases, rep, m) for m in rep.members}
        state = ReplicaState(
            replica=rep.name,
            head=rep.head,
            members=list(rep.members),
            url=rep.url,
            healthy=h.ok,
            health=h.detail,
            requests_running=_running(rep, running),
            in_gateway=None if listed is None else all(u in listed for u in rep.ranks),
            release=str(head["release"]) if head.get("release") else None,
            image_id=str(head["image_id"]) if head.get("image_id") else None,
            since=str(head["time"]) if head.get("time") else None,
            releases=per_member,
            urls=list(rep.ranks),
        )
        if rep.head in releases.unreachable:
            state.note = f"{rep.head} unreachable: release unknown"
        out.append(state)
    return FleetState(out, site.gateway_url, gateway_error, dict(releases.unreachable), dict(releases.failed))
