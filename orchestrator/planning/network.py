"""HCCN address plan: one address per NPU device (die) for the NPU-integrated RoCE NICs."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network

from orchestrator.planning.model import HccnDevice
from orchestrator.spec.findings import Finding, SpecPath, error
from orchestrator.spec.network import HccnPlan, HccnSubnet


@dataclass(frozen=True)
class HccnServer:
    """A server that takes part in the HCCN plan, in plan order."""

    name: str
    spec_index: int  # index in spec.servers, for error paths
    devices: int
    explicit: tuple[IPv4Address, ...] | None


def _subnet_of(plan: HccnPlan, address: IPv4Address) -> HccnSubnet | None:
    return next((s for s in plan.subnets if address in s.cidr), None)


def _device(index: int, address: IPv4Address, subnet: HccnSubnet) -> HccnDevice:
    netdetect = subnet.netdetect or subnet.gateway
    return HccnDevice(
        index=index,
        address=str(address),
        netmask=str(subnet.cidr.netmask),
        gateway=str(subnet.gateway) if subnet.gateway else None,
        netdetect=str(netdetect) if netdetect else None,
    )


def _host_address(cidr: IPv4Network, host_number: int) -> IPv4Address | None:
    if host_number >= cidr.num_addresses - 1:  # the last address is the broadcast address
        return None
    return cidr.network_address + host_number


def plan_hccn(
    plan: HccnPlan, servers: list[HccnServer]
) -> tuple[dict[str, tuple[HccnDevice, ...]], list[Finding]]:
    """Addresses per server, plus findings for plans that cannot be laid out."""
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
    k = len(plan.subnets)
    slots_per_server = [math.ceil(s.devices / k) if plan.plan == "per_index" else s.devices for s in servers]
    slots_before = list(itertools.accumulate(slots_per_server, initial=0))  # one pass, not a sum per device
    for order, srv in enumerate(servers):
        devices: list[HccnDevice] = []
        if srv.explicit is not None or plan.plan == "explicit":
            where: SpecPath = ("servers", srv.spec_index, "overrides", "hccn_addresses")
            addrs = srv.explicit or ()
            if len(addrs) != srv.devices:
                findings.append(
                    error(
                        where,
                        f"server '{srv.name}' has {srv.devices} NPU devices but {len(addrs)} HCCN addresses",
                        f"list exactly {srv.devices} addresses, one per device index",
                        "hccn",
                    )
                )
                continue
            for d, given in enumerate(addrs):
                found = _subnet_of(plan, given)
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
        else:
            for d in range(srv.devices):
                subnet = plan.subnets[d % k] if plan.plan == "per_index" else plan.subnets[0]
                slot = d // k if plan.plan == "per_index" else d
                # servers may have different device counts: number them after all earlier servers' slots
                host_number = plan.first_host + slots_before[order] + slot
                addr = _host_address(subnet.cidr, host_number)
                if addr is None:
                    needed = plan.first_host + sum(slots_per_server)
                    findings.append(
                        error(
                            (*base, "subnets", plan.subnets.index(subnet), "cidr"),
                            f"subnet {subnet.cidr} is too small: the plan needs host numbers up "
                            f"to {needed} ({len(servers)} servers, {sum(slots_per_server)} addresses "
                            f"per subnet from first_host {plan.first_host})",
                            "use a larger subnet (e.g. a /24) or lower first_host",
                            "hccn",
                        )
                    )
                    return result, findings
                devices.append(_device(d, addr, subnet))
        result[srv.name] = tuple(devices)
    findings.extend(check_addresses(plan, servers, result))
    return result, findings


def check_addresses(
    plan: HccnPlan, servers: list[HccnServer], result: dict[str, tuple[HccnDevice, ...]]
) -> list[Finding]:
    findings: list[Finding] = []
    seen: dict[str, str] = {}
    index = {s.name: s.spec_index for s in servers}
    for i, subnet in enumerate(plan.subnets):
        for label, addr in (("gateway", subnet.gateway), ("netdetect", subnet.netdetect)):
            if addr is not None and addr not in subnet.cidr:
                findings.append(
                    error(
                        ("network", "hccn", "subnets", i, label),
                        f"{label} {addr} is outside its subnet {subnet.cidr}",
                        f"use an address inside {subnet.cidr}",
                        "hccn",
                    )
                )
    reserved = {str(s.gateway) for s in plan.subnets if s.gateway} | {
        str(s.netdetect) for s in plan.subnets if s.netdetect
    }
    for name, devices in result.items():
        for dev in devices:
            path: SpecPath = ("servers", index[name], "overrides", "hccn_addresses", dev.index)
            addr = IPv4Address(dev.address)
            home = _subnet_of(plan, addr)
            if home is not None and addr in (home.cidr.network_address, home.cidr.broadcast_address):
                findings.append(
                    error(
                        path,
                        f"{addr} is the network or broadcast address of {home.cidr}",
                        "use a host address",
                        "hccn",
                    )
                )
            if dev.address in reserved:
                findings.append(
                    error(
                        path,
                        f"NPU {dev.index} of '{name}' would get {addr}, which is the HCCN "
                        "gateway/netdetect address",
                        "raise network.hccn.first_host or move the gateway",
                        "hccn",
                    )
                )
            if dev.address in seen:
                findings.append(
                    error(
                        path,
                        f"HCCN address {addr} of '{name}' NPU {dev.index} is already used "
                        f"by {seen[dev.address]}",
                        "give every NPU NIC its own address",
                        "hccn",
                    )
                )
            else:
                seen[dev.address] = f"'{name}' NPU {dev.index}"
    return findings
