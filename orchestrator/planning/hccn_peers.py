"""What the HCCN network gate checks and what HCCL reads, per host, from the plan: the peer NPU NICs a host's
NICs must reach (the NICs of the other servers of each multi-node replica it serves) and the HCCL rank table
of each multi-node replica.

Rank table layout (version 1.0), from ../shared/reference/ascend-host.md "hccn_tool": {"status":
"completed", "version": "1.0", "server_count": "N", "server_list": [{"server_id": ..., "device":
[{"device_id": "0", "device_ip": <address_0 of /etc/hccn.conf>, "rank_id": "0"}, ...]}]}, every value a
string, rank ids contiguous per server. server_id is the server's management address (the value HCCL's own
rank table examples put there; the reference sample shows a placeholder name).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orchestrator.planning.model import HccnDevice, ReplicaPlan, SitePlan


@dataclass(frozen=True)
class HccnPeer:
    server: str
    index: int
    address: str


def _nics(plan: SitePlan, server: str) -> dict[int, HccnDevice]:
    return {d.index: d for d in plan.host(server).hccn}


def _multi_node(plan: SitePlan) -> list[ReplicaPlan]:
    """Replicas over several servers whose NPUs all have planned NIC addresses (RoCE chips)."""
    return [
        rep
        for rep in plan.replicas
        if len(rep.members) > 1 and all(_nics(plan, m.server) for m in rep.members)
    ]


def hccn_peers(plan: SitePlan, server: str) -> tuple[HccnPeer, ...]:
    """The NICs of the devices the other members of server's multi-node replicas use, once each, in
    (server, index) order."""
    seen: dict[tuple[str, int], HccnPeer] = {}
    for rep in _multi_node(plan):
        if all(m.server != server for m in rep.members):
            continue
        for m in rep.members:
            if m.server == server:
                continue
            nics = _nics(plan, m.server)
            for d in m.devices:
                if d in nics:
                    seen.setdefault((m.server, d), HccnPeer(m.server, d, nics[d].address))
    return tuple(seen[k] for k in sorted(seen))


def rank_table(plan: SitePlan, rep: ReplicaPlan) -> dict[str, Any]:
    """The HCCL rank table of a multi-node replica (members in node-rank order)."""
    servers: list[dict[str, Any]] = []
    rank = 0
    for m in sorted(rep.members, key=lambda m: m.node_rank):
        nics = _nics(plan, m.server)
        devices = []
        for d in m.devices:
            devices.append({"device_id": str(d), "device_ip": nics[d].address, "rank_id": str(rank)})
            rank += 1
        servers.append({"server_id": m.address, "device": devices})
    return {
        "status": "completed",
        "version": "1.0",
        "server_count": str(len(servers)),
        "server_list": servers,
    }


def rank_tables(plan: SitePlan, server: str) -> dict[str, dict[str, Any]]:
    """Replica name -> rank table, for the multi-node replicas server is a member of."""
    return {
        rep.name: rank_table(plan, rep)
        for rep in _multi_node(plan)
        if any(m.server == server for m in rep.members)
    }
