"""HCCN address plan: one address per NPU device (die) for the NPU-integrated RoCE NICs."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from ipaddress import IPv4Address, IPv4Network

from orchestrator.planning.hccn_checks import (
    HccnServer,
    HostAddress,
    check_addresses,
    check_subnets,
    subnet_of,
)
from orchestrator.planning.model import HccnDevice
from orchestrator.spec.findings import Finding, SpecPath, error
from orchestrator.spec.network import HccnPlan, HccnSubnet

__all__ = ["HccnServer", "HostAddress", "host_address", "plan_hccn"]


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


def _last_host(cidr: IPv4Network) -> str:
    if cidr.prefixlen > 30:  # a /31 or /32 has no address besides the network and broadcast ones
        return f"a /{cidr.prefixlen} has no host addresses"
    last = cidr.num_addresses - 2
    return f"the last host number of a /{cidr.prefixlen} is {last} ({cidr.network_address + last})"


def _explicit(plan: HccnPlan, srv: HccnServer) -> tuple[list[HccnDevice] | None, list[Finding]]:
    where: SpecPath = ("servers", srv.spec_index, "overrides", "hccn_addresses")
    addrs = srv.explicit or ()
    if len(addrs) != srv.devices:
        return None, [
            error(
                where,
                f"server '{srv.name}' has {srv.devices} NPU devices but {len(addrs)} HCCN addresses",
                f"list exactly {srv.devices} addresses, one per device index",
                "hccn",
            )
        ]
    devices: list[HccnDevice] = []
    findings: list[Finding] = []
    for d, given in enumerate(addrs):
        found = subnet_of(plan, given)
        if found is None:
            findings.append(
                error(
                    (*where, d),
                    f"address {given} is in none of the HCCN subnets "
                    f"({', '.join(str(s.cidr) for s in plan.subnets)})",
                    "pick an address inside one of network.hccn.subnets",
                    "hccn",
                )
            )
            continue
        devices.append(_device(d, given, found))
    return devices, findings


def plan_hccn(
    plan: HccnPlan,
    servers: list[HccnServer],
    host_addresses: Mapping[str, HostAddress] | None = None,
) -> tuple[dict[str, tuple[HccnDevice, ...]], list[Finding]]:
    """Addresses per server, plus findings for plans that cannot be laid out.

    host_addresses: the site's host addresses (management, HCCL_IF_IP) that no NPU NIC may take.
    """
    findings: list[Finding] = []
    result: dict[str, tuple[HccnDevice, ...]] = {}
    base: SpecPath = ("network", "hccn")
    if not plan.subnets:
        return result, [
            error(
                (*base, "subnets"),
                "the HCCN plan has no subnets",
                "add at least one subnet, e.g. subnets: [{cidr: 192.168.100.0/24}]",
                "hccn",
            )
        ]
    if plan.plan == "single_subnet" and len(plan.subnets) != 1:
        findings.append(
            error(
                (*base, "subnets"),
                f"plan 'single_subnet' takes exactly one subnet, {len(plan.subnets)} given",
                "use plan: per_index for several subnets",
                "hccn",
            )
        )
        return result, findings
    overlaps = check_subnets(plan)
    if overlaps:  # every address below would be ambiguous
        return result, overlaps
    k = len(plan.subnets)  # per_index: device d in subnets[d % k]; single_subnet: k == 1, all in subnets[0]
    slots_per_server = [math.ceil(s.devices / k) for s in servers]
    slots_before = list(itertools.accumulate(slots_per_server, initial=0))  # one pass, not a sum per device
    # netmask, gateway and netdetect as text once per subnet, not per device (160,000 at 20,000 servers)
    shared = [_device(0, subnet.cidr.network_address, subnet) for subnet in plan.subnets]
    for order, srv in enumerate(servers):
        if srv.explicit is not None or plan.plan == "explicit":
            explicit, found = _explicit(plan, srv)
            findings.extend(found)
            if explicit is not None:
                result[srv.name] = tuple(explicit)
            continue
        devices: list[HccnDevice] = []
        for d in range(srv.devices):
            subnet = plan.subnets[d % k]
            slot = d // k
            # servers may have different device counts: number them after all earlier servers' slots
            host_number = plan.first_host + slots_before[order] + slot
            addr = host_address(subnet.cidr, host_number)
            if addr is None:
                needed = plan.first_host + sum(slots_per_server) - 1
                findings.append(
                    error(
                        (*base, "subnets", plan.subnets.index(subnet), "cidr"),
                        f"subnet {subnet.cidr} is too small: the plan needs host numbers up "
                        f"to {needed} ({len(servers)} servers, {sum(slots_per_server)} addresses "
                        f"per subnet from first_host {plan.first_host}), {_last_host(subnet.cidr)}",
                        "use a larger subnet (e.g. a /24) or lower first_host",
                        "hccn",
                    )
                )
                return result, findings
            same = shared[d % k]
            devices.append(HccnDevice(d, str(addr), same.netmask, same.gateway, same.netdetect))
        result[srv.name] = tuple(devices)
    findings.extend(check_addresses(plan, servers, result, host_addresses or {}))
    return result, findings
