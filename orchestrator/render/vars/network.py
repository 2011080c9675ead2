"""The network phase's variables (role hccn_network): the host's NPU NIC addresses, the peer NICs its gate
pings and the HCCL rank tables of its multi-node replicas (planning/network.py, planning/hccn_peers.py)."""

from __future__ import annotations

from typing import Any

from orchestrator.planning.model import HostPlan
from orchestrator.spec.site import SiteSpec


def network_vars(spec: SiteSpec) -> dict[str, Any]:
    """group_vars/npu.yml: the fabric's options (network.hccn)."""
    hccn = spec.network.hccn
    return {
        "hccn_network_tls": hccn.tls if hccn else False,
        "hccn_network_mtu": hccn.mtu if hccn else None,
    }


def network_host_vars(host: HostPlan) -> dict[str, Any]:
    """host_vars of an NPU server: its own NIC addresses."""
    return {
        "hccn_network_devices": [
            {
                "index": d.index,
                "address": d.address,
                "netmask": d.netmask,
                "gateway": d.gateway,
                "netdetect": d.netdetect,
            }
            for d in host.hccn
        ],
    }


def network_gate_vars(host: HostPlan) -> dict[str, Any]:
    """host_vars of an NPU server: the peer NICs its gate pings, its replicas' rank tables."""
    return {
        "hccn_network_peers": [
            {"server": p.server, "index": p.index, "address": p.address} for p in host.hccn_peers
        ],
        "hccn_network_rank_tables": [{"replica": n, "table": t} for n, t in host.rank_tables],
    }
