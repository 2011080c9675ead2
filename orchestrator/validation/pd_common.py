"""What the prefill/decode rules share: the two pools with their spec paths, each instance's kv_port, DP
ranks per server and devices, the profile of each server, the pool settings that default to serving's."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from orchestrator.catalog import ChipFacts
from orchestrator.planning.pd_model import PdRole
from orchestrator.planning.resolve import ResolvedProfile, resolve_profile
from orchestrator.spec.disaggregation import KV_PORT_STEP, PdInstance, PdPool
from orchestrator.spec.findings import SpecPath
from orchestrator.spec.site import SiteSpec

ROLES: tuple[PdRole, ...] = ("prefill", "decode")


@dataclass(frozen=True)
class Pool:
    role: PdRole
    pool: PdPool
    path: SpecPath  # ("serving", "disaggregation", role)

    def field(self, *rest: str | int) -> SpecPath:
        return (*self.path, *rest)

    def name(self, *rest: str | int) -> str:
        """The dotted field name for messages: serving.disaggregation.prefill.parallelism.tp."""
        return ".".join(str(p) for p in (*self.path, *rest))


def pools(spec: SiteSpec) -> list[Pool]:
    d = spec.serving.disaggregation
    if d is None:
        return []
    return [Pool(role, getattr(d, role), ("serving", "disaggregation", role)) for role in ROLES]


def kv_port(pool: PdPool, index: int) -> int:
    """The Mooncake kv_port of instance `index` of the pool (its own, else the pool's + 100 x index)."""
    own = pool.instances[index].kv_port
    return own if own is not None else pool.kv_port + KV_PORT_STEP * index


def ranks_per_server(pool: PdPool, inst: PdInstance) -> int | None:
    """DP ranks of the instance on each of its servers; None when dp does not divide evenly."""
    dp = pool.parallelism.dp
    n = len(inst.servers)
    return dp // n if dp % n == 0 else None


def devices_per_rank(pool: PdPool) -> int:
    par = pool.parallelism
    return par.tp * par.pp


def server_profiles(spec: SiteSpec) -> dict[str, ResolvedProfile]:
    """Server name -> its resolved profile, for the servers whose profile exists and whose chip the catalog
    knows (references.py and profile_rules.py report the others)."""
    resolved: dict[str, ResolvedProfile] = {}
    for name, prof in spec.profiles.items():
        try:
            resolved[name] = resolve_profile(name, prof)
        except (KeyError, ValueError):
            continue
    out: dict[str, ResolvedProfile] = {}
    for srv in spec.servers:
        if srv.profile is not None and srv.profile in resolved:
            out.setdefault(srv.name, resolved[srv.profile])
    return out


def instance_devices(inst: PdInstance, profile: ResolvedProfile) -> tuple[int, ...]:
    """The device indices the instance may use on one of its servers."""
    if inst.devices is not None:
        return tuple(inst.devices)
    return tuple(range(profile.devices))


def generation(chip: ChipFacts) -> str:
    """The hardware generation users name: A2 (910B), A3 (910_93), 300I Duo (310P)."""
    return {"910b": "Atlas A2", "910_93": "Atlas A3", "310p": "Atlas 300I Duo"}.get(chip.family, chip.family)


def instances(spec: SiteSpec) -> Iterator[tuple[Pool, int, PdInstance]]:
    for p in pools(spec):
        for i, inst in enumerate(p.pool.instances):
            yield p, i, inst


def server_index(spec: SiteSpec) -> Mapping[str, int]:
    out: dict[str, int] = {}
    for i, srv in enumerate(spec.servers):
        out.setdefault(srv.name, i)
    return out
