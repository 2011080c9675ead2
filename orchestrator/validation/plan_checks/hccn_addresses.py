"""Checks on an HCCN plan: disjoint subnets, host addresses only, every NPU NIC its own address.

A finding points at a node the user wrote: an explicit address (servers[i].overrides.hccn_addresses[d]) or,
for an address the plan derived, the subnet it was derived from (network.hccn.subnets[k]) or the gateway it
collides with. The other node of a clash is a Related position.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from ipaddress import IPv4Address
from socket import inet_aton

from orchestrator.planning.model import HccnDevice
from orchestrator.planning.network import HccnServer
from orchestrator.spec.findings import Finding, Related, SpecPath, error
from orchestrator.spec.network import HccnPlan

_SUBNETS: SpecPath = ("network", "hccn", "subnets")
_OWN = "give every NPU NIC its own address"


@dataclass(frozen=True)
class HostAddress:
    """A host address of the site (management address, HCCL_IF_IP) that no NPU NIC may take."""

    path: SpecPath
    what: str  # "the management address of 'a2-01'"


@dataclass(frozen=True)
class _Nic:
    """One NPU NIC address and the node the user wrote for it."""

    server: str
    device: int
    address: IPv4Address
    path: SpecPath  # the explicit address, or the subnet the plan took it from
    explicit: bool
    subnet: int  # index in plan.subnets

    @property
    def who(self) -> str:
        return f"'{self.server}' NPU {self.device}"


def check_subnets(plan: HccnPlan) -> list[Finding]:
    """Each subnet is its own network: a duplicate or overlapping subnet is reported where it is written."""
    findings: list[Finding] = []
    for j, later in enumerate(plan.subnets):
        for i, earlier in enumerate(plan.subnets[:j]):
            if not later.cidr.overlaps(earlier.cidr):
                continue
            related = (Related((*_SUBNETS, i, "cidr")),)
            if later.cidr == earlier.cidr:
                message = f"subnet {later.cidr} is listed twice (also subnets[{i}])"
            else:
                # overlapping CIDRs nest; the inner one sorts last (higher address, or same and longer mask)
                inner = max(later.cidr, earlier.cidr)
                message = f"subnet {later.cidr} overlaps subnets[{i}] {earlier.cidr} (both contain {inner})"
            findings.append(
                error(
                    (*_SUBNETS, j, "cidr"),
                    message,
                    "use disjoint subnets: every address must belong to exactly one of network.hccn.subnets",
                    "hccn",
                    related,
                )
            )
            break
    return findings


def _nics(plan: HccnPlan, servers: list[HccnServer], result: dict[str, tuple[HccnDevice, ...]]) -> list[_Nic]:
    out = []
    for srv in servers:
        for dev in result.get(srv.name, ()):
            addr = IPv4Address(inet_aton(dev.address))  # str() of an IPv4Address: inet_aton is 4x faster
            # the plan only holds addresses inside a subnet (explicit ones outside are reported and dropped)
            k = next(i for i, s in enumerate(plan.subnets) if addr in s.cidr)
            if srv.explicit is not None:
                path: SpecPath = ("servers", srv.spec_index, "overrides", "hccn_addresses", dev.index)
            else:
                path = (*_SUBNETS, k, "cidr")
            out.append(_Nic(srv.name, dev.index, addr, path, srv.explicit is not None, k))
    return out


def _gateways(plan: HccnPlan) -> tuple[list[Finding], dict[IPv4Address, tuple[SpecPath, str]]]:
    findings: list[Finding] = []
    reserved: dict[IPv4Address, tuple[SpecPath, str]] = {}
    for i, subnet in enumerate(plan.subnets):
        for label, addr in (("gateway", subnet.gateway), ("netdetect", subnet.netdetect)):
            if addr is None:
                continue
            if addr not in subnet.cidr:
                findings.append(
                    error(
                        (*_SUBNETS, i, label),
                        f"{label} {addr} is outside its subnet {subnet.cidr}",
                        f"use an address inside {subnet.cidr}",
                        "hccn",
                    )
                )
            reserved.setdefault(addr, ((*_SUBNETS, i, label), f"{label} of subnets[{i}]"))
    return findings, reserved


def _host_part(plan: HccnPlan, nic: _Nic) -> list[Finding]:
    home = plan.subnets[nic.subnet].cidr
    if nic.address not in (home.network_address, home.broadcast_address):
        return []
    which = "network" if nic.address == home.network_address else "broadcast"
    first, last = home.network_address + 1, home.broadcast_address - 1
    return [
        error(
            nic.path,
            f"HCCN address {nic.address} of {nic.who} is the {which} address of {home}",
            f"use a host address of {home}: {first} to {last}",
            "hccn",
        )
    ]


def _reserved(nic: _Nic, reserved: Mapping[IPv4Address, tuple[SpecPath, str]]) -> list[Finding]:
    if nic.address not in reserved:
        return []
    where, what = reserved[nic.address]
    if nic.explicit:
        return [
            error(
                nic.path,
                f"HCCN address {nic.address} of {nic.who} is the {what}",
                "give the NPU NIC another address",
                "hccn",
                (Related(where, "also used"),),
            )
        ]
    return [
        error(
            where,
            f"the {what} ({nic.address}) is also the address the plan gives {nic.who}",
            "move the gateway below network.hccn.first_host (e.g. host number 1) or raise first_host",
            "hccn",
        )
    ]


def _host_clash(nic: _Nic, hosts: Mapping[str, HostAddress]) -> list[Finding]:
    host = hosts.get(str(nic.address))
    if host is None:
        return []
    related = (Related(host.path, "also used"),)
    if nic.explicit:
        message = f"HCCN address {nic.address} of {nic.who} is {host.what}"
    else:
        message = f"the plan gives {nic.who} the address {nic.address}, which is {host.what}"
    fix = "NPU NICs need addresses of their own: use an HCCN subnet that holds no host address"
    return [error(nic.path, message, fix, "hccn", related)]


def _duplicate(plan: HccnPlan, nic: _Nic, first: _Nic) -> Finding:
    if nic.explicit or not first.explicit:
        note = "first defined" if first.explicit else "planned from"
        return error(
            nic.path,
            f"HCCN address {nic.address} of {nic.who} is already used by {first.who}",
            _OWN,
            "hccn",
            (Related(first.path, note),),
        )
    # the later one was planned: report at the explicit address, the node the user wrote
    return error(
        first.path,
        f"HCCN address {first.address} of {first.who} is also the address the plan gives {nic.who} "
        f"(host numbers from first_host {plan.first_host})",
        f"{_OWN}: pick an explicit address outside the planned range, or change network.hccn.first_host",
        "hccn",
        (Related(nic.path, "planned from"),),
    )


def check_addresses(
    plan: HccnPlan,
    servers: list[HccnServer],
    result: dict[str, tuple[HccnDevice, ...]],
    hosts: Mapping[str, HostAddress],
) -> list[Finding]:
    findings, reserved = _gateways(plan)
    seen: dict[IPv4Address, _Nic] = {}
    for nic in _nics(plan, servers, result):
        findings += _host_part(plan, nic) + _reserved(nic, reserved) + _host_clash(nic, hosts)
        if nic.address in seen:
            findings.append(_duplicate(plan, nic, seen[nic.address]))
        else:
            seen[nic.address] = nic
    return findings
