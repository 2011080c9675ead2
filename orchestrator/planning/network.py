"""HCCN address plan: one address per NPU device (die) for the NPU-integrated RoCE NICs.

Pure: a plan that cannot be laid out (orchestrator/validation/plan_checks/hccn_layout.py says why) yields
the addresses it could derive up to that point, never a finding.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network

from orchestrator.planning.model import HccnDevice
from orchestrator.spec.network import HccnPlan, HccnSubnet

__all__ = ["HccnServer", "host_address", "plan_hccn", "slots_per_server", "subnet_of"]


@dataclass(frozen=True)
class HccnServer:
    """A server that takes part in the HCCN plan, in plan order."""

    name: str
    spec_index: int  # index in spec.servers, for error paths
    devices: int
    explicit: tuple[IPv4Address, ...] | None


def subnet_of(plan: HccnPlan, address: IPv4Address) -> HccnSubnet | None:
    return next((s for s in plan.subnets if address in s.cidr), None)


def subnets_disjoint(plan: HccnPlan) -> bool:
    subnets = plan.subnets
    return not any(b.cidr.overlaps(a.cidr) for j, b in enumerate(subnets) for a in subnets[:j])


def _device(index: int, address: IPv4Address, subnet: HccnSubnet) -> HccnDevice:
    netdetect = subnet.netdetect or subnet.gateway
    return HccnDevice(
        index=index,
        address=str(address),
        netmask=str(subnet.cidr.netmask),
        gateway=str(subnet.gateway) if subnet.gateway else None,
        netdetect=str(netdetect) if netdetect else None,
    )


def host_address(cidr: IPv4Network, host_number: int) -> IPv4Address | None:
    """The host_number-th address of cidr, or None when it is the broadcast address or beyond."""
    if host_number >= cidr.num_addresses - 1:  # the last address is the broadcast address
        return None
    return cidr.network_address + host_number


def slots_per_server(plan: HccnPlan, servers: list[HccnServer]) -> list[int]:
    """Per server, how many addresses it takes in each subnet (device d in subnets[d % k])."""
    k = len(plan.subnets)
    return [math.ceil(s.devices / k) for s in servers]


def _explicit(plan: HccnPlan, srv: HccnServer) -> tuple[HccnDevice, ...] | None:
    addrs = srv.explicit or ()
    if len(addrs) != srv.devices:
        return None
    devices = []
    for d, given in enumerate(addrs):
        found = subnet_of(plan, given)
        if found is not None:  # an address outside every subnet is dropped
            devices.append(_device(d, given, found))
    return tuple(devices)


def plan_hccn(plan: HccnPlan, servers: list[HccnServer]) -> dict[str, tuple[HccnDevice, ...]]:
    """Addresses per server: explicit ones as written, the others numbered after all earlier servers'."""
    result: dict[str, tuple[HccnDevice, ...]] = {}
    if not plan.subnets or (plan.plan == "single_subnet" and len(plan.subnets) != 1):
        return result
    if not subnets_disjoint(plan):  # every address would be ambiguous
        return result
    k = len(plan.subnets)  # per_index: device d in subnets[d % k]; single_subnet: k == 1, all in subnets[0]
    slots_before = list(itertools.accumulate(slots_per_server(plan, servers), initial=0))
    # netmask, gateway and netdetect as text once per subnet, not per device (160,000 at 20,000 servers)
    shared = [_device(0, subnet.cidr.network_address, subnet) for subnet in plan.subnets]
    for order, srv in enumerate(servers):
        if srv.explicit is not None or plan.plan == "explicit":
            explicit = _explicit(plan, srv)
            if explicit is not None:
                result[srv.name] = explicit
            continue
        devices: list[HccnDevice] = []
        for d in range(srv.devices):
            subnet = plan.subnets[d % k]
            # servers may have different device counts: number them after all earlier servers' slots
            addr = host_address(subnet.cidr, plan.first_host + slots_before[order] + d // k)
            if addr is None:  # the subnet is too small: this server and the later ones get none
                return result
            same = shared[d % k]
            devices.append(HccnDevice(d, str(addr), same.netmask, same.gateway, same.netdetect))
        result[srv.name] = tuple(devices)
    return result
