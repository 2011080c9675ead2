"""Can the HCCN plan be laid out: subnets given and disjoint, explicit address lists complete and inside a
subnet, subnets large enough for every server's NPU NICs; then the addresses the plan derived
(hccn_addresses.py)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from ipaddress import IPv4Network

from orchestrator.planning.model import HccnDevice
from orchestrator.planning.network import HccnServer, host_address, slots_per_server, subnet_of
from orchestrator.spec.findings import Finding, SpecPath, error
from orchestrator.spec.network import HccnPlan
from orchestrator.validation.plan_checks.hccn_addresses import HostAddress, check_addresses, check_subnets

__all__ = ["check_hccn"]

_BASE: SpecPath = ("network", "hccn")


def _last_host(cidr: IPv4Network) -> str:
    if cidr.prefixlen > 30:  # a /31 or /32 has no address besides the network and broadcast ones
        return f"a /{cidr.prefixlen} has no host addresses"
    last = cidr.num_addresses - 2
    return f"the last host number of a /{cidr.prefixlen} is {last} ({cidr.network_address + last})"


def _explicit(plan: HccnPlan, srv: HccnServer) -> list[Finding]:
    where: SpecPath = ("servers", srv.spec_index, "overrides", "hccn_addresses")
    addrs = srv.explicit or ()
    if len(addrs) != srv.devices:
        return [
            error(
                where,
                f"server '{srv.name}' has {srv.devices} NPU devices but {len(addrs)} HCCN addresses",
                f"list exactly {srv.devices} addresses, one per device index",
                "hccn",
            )
        ]
    return [
        error(
            (*where, d),
            f"address {given} is in none of the HCCN subnets "
            f"({', '.join(str(s.cidr) for s in plan.subnets)})",
            "pick an address inside one of network.hccn.subnets",
            "hccn",
        )
        for d, given in enumerate(addrs)
        if subnet_of(plan, given) is None
    ]


def _too_small(plan: HccnPlan, servers: list[HccnServer], order: int, before: int) -> Finding | None:
    """The finding for the first subnet that has no address left for this server's NPU NICs."""
    k = len(plan.subnets)
    slots = slots_per_server(plan, servers)
    for d in range(servers[order].devices):
        subnet = plan.subnets[d % k]
        if host_address(subnet.cidr, plan.first_host + before + d // k) is not None:
            continue
        needed = plan.first_host + sum(slots) - 1
        return error(
            (*_BASE, "subnets", plan.subnets.index(subnet), "cidr"),
            f"subnet {subnet.cidr} is too small: the plan needs host numbers up "
            f"to {needed} ({len(servers)} servers, {sum(slots)} addresses "
            f"per subnet from first_host {plan.first_host}), {_last_host(subnet.cidr)}",
            "use a larger subnet (e.g. a /24) or lower first_host",
            "hccn",
        )
    return None


def check_hccn(
    plan: HccnPlan,
    servers: list[HccnServer],
    derived: Mapping[str, tuple[HccnDevice, ...]],
    hosts: Mapping[str, HostAddress],
) -> list[Finding]:
    """Findings for a plan that cannot be laid out, else for the addresses it derived (derived: the NPU-NIC
    addresses per server from the site plan; hosts: the site's host addresses no NPU NIC may take)."""
    if not plan.subnets:
        return [
            error(
                (*_BASE, "subnets"),
                "the HCCN plan has no subnets",
                "add at least one subnet, e.g. subnets: [{cidr: 192.168.100.0/24}]",
                "hccn",
            )
        ]
    if plan.plan == "single_subnet" and len(plan.subnets) != 1:
        return [
            error(
                (*_BASE, "subnets"),
                f"plan 'single_subnet' takes exactly one subnet, {len(plan.subnets)} given",
                "use plan: per_index for several subnets",
                "hccn",
            )
        ]
    overlaps = check_subnets(plan)
    if overlaps:  # every address below would be ambiguous
        return overlaps
    findings: list[Finding] = []
    slots_before = list(itertools.accumulate(slots_per_server(plan, servers), initial=0))
    for order, srv in enumerate(servers):
        if srv.explicit is not None or plan.plan == "explicit":
            findings += _explicit(plan, srv)
            continue
        small = _too_small(plan, servers, order, slots_before[order])
        if small is not None:
            return [*findings, small]
    return findings + check_addresses(plan, servers, dict(derived), hosts)
