"""What the HCCN network gate checks and what HCCL reads, per host, from the plan: the peer NPU NICs a host's
NICs must reach (the NICs of the other servers of each multi-node replica it serves) and the HCCL rank table
of each multi-node replica.

Rank table layout (version 1.0), from Huawei's HCCL rank table documentation (hiascend.com): {"status":
"completed", "version": "1.0", "server_count": "N", "server_list": [{"server_id": ..., "device":
[{"device_id": "0", "device_ip": <address_0 of /etc/hccn.conf>, "rank_id": "0"}, ...]}]}, every value a
string, rank ids contiguous per server. server_id is the server's management address (the value HCCL's own
rank table examples put there; one documented sample shows a placeholder name).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from orchestrator.planning.model import HccnDevice, HccnPeer, HostPlan, ReplicaPlan


@dataclass(frozen=True)
class HccnView:
    """One host's share: the peer NICs its gate pings and the rank tables of its multi-node replicas."""

    peers: tuple[HccnPeer, ...]
    rank_tables: dict[str, dict[str, Any]]


Nics = dict[str, dict[int, HccnDevice]]


def rank_table(rep: ReplicaPlan, nics: Nics) -> dict[str, Any]:
    """The HCCL rank table of a multi-node replica (members in node-rank order)."""
    servers: list[dict[str, Any]] = []
    rank = 0
    for m in sorted(rep.members, key=lambda m: m.node_rank):
        devices = []
        for d in m.devices:
            address = nics[m.server][d].address
            devices.append({"device_id": str(d), "device_ip": address, "rank_id": str(rank)})
            rank += 1
        servers.append({"server_id": m.address, "device": devices})
    return {
        "status": "completed",
        "version": "1.0",
        "server_count": str(len(servers)),
        "server_list": servers,
    }


def hccn_views(
    hosts: Sequence[HostPlan],
    replicas: Sequence[ReplicaPlan],
    links: Sequence[tuple[str, str, tuple[int, ...]]] = (),
) -> dict[str, HccnView]:
    """Every host's view, in one pass over the replicas (linear in the site size). Only replicas over
    several servers whose NPUs all have planned NIC addresses (RoCE chips) count; a peer NIC is one the
    other member uses for the replica, listed once, in (server, index) order. links: more (server, peer
    server, peer devices) to reach (a PD site's, planning/pd_peers.py), where the peer's NICs are planned."""
    nics: Nics = {h.name: {d.index: d for d in h.hccn} for h in hosts}
    peers: dict[str, dict[tuple[str, int], HccnPeer]] = {}
    tables: dict[str, dict[str, dict[str, Any]]] = {}
    for rep in replicas:
        if len(rep.members) < 2 or not all(
            d in nics.get(m.server, {}) for m in rep.members for d in m.devices
        ):  # addresses the plan checks refuse (outside every subnet) are not planned: no table to write
            continue
        table = rank_table(rep, nics)
        for m in rep.members:
            tables.setdefault(m.server, {})[rep.name] = table
            mine = peers.setdefault(m.server, {})
            for other in rep.members:
                if other.server == m.server:
                    continue
                for d in other.devices:
                    peer = HccnPeer(other.server, d, nics[other.server][d].address)
                    mine.setdefault((other.server, d), peer)
    for server, to, devices in links:
        if server in nics and all(d in nics.get(to, {}) for d in devices):
            linked = peers.setdefault(server, {})
            for d in devices:
                linked.setdefault((to, d), HccnPeer(to, d, nics[to][d].address))
    return {
        h.name: HccnView(tuple(v for _, v in sorted(peers.get(h.name, {}).items())), tables.get(h.name, {}))
        for h in hosts
    }
