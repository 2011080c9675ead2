"""One HCCL_IF_BASE_PORT per replica on a shared server.

HCCL listens on the host NIC from HCCL_IF_BASE_PORT (default 60000) for a range of ports when a communicator
is created from root info (CANN environment variable reference, envref_07_0074: 16 ports up to CANN 8.2,
32 ports -- 60000-60031 by default -- from CANN 8.3 on, Atlas A2/A3 and 300I Duo). Two multi-device
replicas on one server (containers on the host network) would both listen from 60000: "Failed to bind the
IP port" (EJ0003/EI0019; vllm-ascend #405, PR #16205, which sets 60100 and 60200 for jobs sharing a host).
So the plan gives each such replica its own base, PORT_STEP apart, wider than the 32-port range.
"""

from __future__ import annotations

from collections.abc import Mapping

from orchestrator.planning.resolve import effective_parallelism
from orchestrator.spec.site import SiteSpec

BASE_PORT = 60000
PORT_RANGE = 32
PORT_STEP = 100
ENV = "HCCL_IF_BASE_PORT"


def colocated(spec: SiteSpec) -> dict[str, list[str]]:
    """server -> the multi-device replicas on it (spec order), for servers holding two or more of them."""
    on: dict[str, list[str]] = {}
    for replica in spec.serving.replicas:
        par = effective_parallelism(spec.serving, replica)
        if par.tp * par.pp * par.dp < 2:
            continue  # a one-device replica creates no HCCL communicator
        for server in replica.servers:
            on.setdefault(server, []).append(replica.name)
    return {server: names for server, names in on.items() if len(names) > 1}


def base_ports(spec: SiteSpec) -> Mapping[tuple[str, str], int]:
    """(replica, server) -> HCCL_IF_BASE_PORT for replicas sharing a server, when serving.env leaves it unset
    (a value there applies to every replica: validation refuses it for shared servers)."""
    if ENV in spec.serving.env:
        return {}
    return {
        (name, server): BASE_PORT + PORT_STEP * i
        for server, names in colocated(spec).items()
        for i, name in enumerate(names)
    }
