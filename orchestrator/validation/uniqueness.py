"""Values that must be unique across the site: server and replica names, management addresses, HCCL_IF_IP.

A clash is reported at the later definition; the message names the earlier one, and the finding carries
its position (printed as "first defined at site.yaml:L:C"). NPU-NIC addresses are checked with the HCCN
plan (validation/plan_checks/hccn_addresses.py), because most of them are derived, not written.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from ipaddress import IPv4Address

from orchestrator.spec.findings import Finding, Related, SpecPath, error, format_path
from orchestrator.spec.hardware import Server
from orchestrator.spec.site import SiteSpec

_SERVING_ROLE = "an NPU server's address is also its serving address (vLLM --host; unless "
_SERVING_ROLE += "overrides.hccl_if_ip is set, HCCL_IF_IP and the data-parallel address)"


def check(spec: SiteSpec) -> Iterator[Finding]:
    yield from _names(spec)
    yield from _management_addresses(spec)
    yield from _hccl_if_ips(spec)


def _names(spec: SiteSpec) -> Iterator[Finding]:
    servers: dict[str, int] = {}
    for i, srv in enumerate(spec.servers):
        if srv.name in servers:
            j = servers[srv.name]
            yield error(
                ("servers", i, "name"),
                f"server name '{srv.name}' is used twice (also servers[{j}])",
                "give every server a unique name: it is the inventory host name",
                "unique",
                (Related(("servers", j, "name")),),
            )
        servers.setdefault(srv.name, i)
    replicas: dict[str, int] = {}
    for r, rep in enumerate(spec.serving.replicas):
        if rep.name in replicas:
            j = replicas[rep.name]
            yield error(
                ("serving", "replicas", r, "name"),
                f"replica name '{rep.name}' is used twice (also serving.replicas[{j}])",
                "give every replica a unique name: it names the container and the inventory group",
                "unique",
                (Related(("serving", "replicas", j, "name")),),
            )
        replicas.setdefault(rep.name, r)
    yield from _instance_names(spec)


def _instance_names(spec: SiteSpec) -> Iterator[Finding]:
    """PD instance names, across both pools: each names its containers, gateway workers and engine id."""
    d = spec.serving.disaggregation
    if d is None:
        return
    first: dict[str, SpecPath] = {}
    for role in ("prefill", "decode"):
        for i, inst in enumerate(getattr(d, role).instances):
            path: SpecPath = ("serving", "disaggregation", role, "instances", i, "name")
            if inst.name in first:
                yield error(
                    path,
                    f"instance name '{inst.name}' is used twice (also {format_path(first[inst.name])})",
                    "give every prefill and decode instance a unique name: it names the instance's "
                    "containers, "
                    "its gateway workers and its Mooncake engine id",
                    "unique",
                    (Related(first[inst.name]),),
                )
            first.setdefault(inst.name, path)


def _management_addresses(spec: SiteSpec) -> Iterator[Finding]:
    """Two entries with the same address and SSH port are one machine listed twice.

    The same address with different SSH ports is port forwarding (a NAT gateway or bastion in front of
    several machines): accepted for build, gateway and monitoring servers, refused when either is an NPU
    server, whose address other servers connect to directly.
    """
    first: dict[IPv4Address, int] = {}
    for i, srv in enumerate(spec.servers):
        j = first.setdefault(srv.address, i)
        if j == i:
            continue
        other = spec.servers[j]
        used = f"address {srv.address} is already used by servers[{j}] ({other.name})"
        related = (Related(("servers", j, "address")),)
        if other.ssh_port == srv.ssh_port:
            yield error(
                ("servers", i, "address"),
                f"{used} with the same SSH port {srv.ssh_port}: both entries reach the same machine",
                "give every server its own management address; list a machine once, with all its roles "
                "(e.g. roles: [npu, build])",
                "unique",
                related,
            )
        elif "npu" in srv.roles or "npu" in other.roles:
            yield error(
                ("servers", i, "address"),
                f"{used} (SSH ports {other.ssh_port} and {srv.ssh_port}); {_SERVING_ROLE}",
                "give every NPU server its own address, reachable from the other servers",
                "unique",
                related,
            )


@dataclass(frozen=True)
class _Claim:
    server: int
    path: SpecPath
    what: str  # "management address", "HCCL_IF_IP"


def _claims(i: int, srv: Server) -> list[tuple[IPv4Address, _Claim]]:
    out = [(srv.address, _Claim(i, ("servers", i, "address"), "management address"))]
    ip = srv.overrides.hccl_if_ip
    if ip is not None and ip != srv.address:
        out.append((ip, _Claim(i, ("servers", i, "overrides", "hccl_if_ip"), "HCCL_IF_IP")))
    return out


def _hccl_if_ips(spec: SiteSpec) -> Iterator[Finding]:
    """HCCL_IF_IP (overrides.hccl_if_ip, default: the address) is an address of the server itself.

    An explicit HCCL_IF_IP must not be another server's management address or HCCL_IF_IP (a copy-pasted
    override). Address against address is _management_addresses' rule.
    """
    claimed: dict[IPv4Address, list[_Claim]] = {}
    for i, srv in enumerate(spec.servers):
        for ip, claim in _claims(i, srv):
            earlier = [
                c
                for c in claimed.get(ip, [])
                if c.server != i and not (c.what == claim.what == "management address")
            ]
            claimed.setdefault(ip, []).append(claim)
            if not earlier:
                continue
            prev = earlier[0]
            name = spec.servers[prev.server].name
            # the override to change is the later one, unless the later one is a management address
            k, owner = (i, srv.name) if claim.what == "HCCL_IF_IP" else (prev.server, name)
            yield error(
                claim.path,
                f"{claim.what} {ip} of server '{srv.name}' is also the {prev.what} of server '{name}' "
                f"(servers[{prev.server}])",
                "HCCL_IF_IP is an address of the server itself (its host NIC for HCCL): set "
                f"servers[{k}].overrides.hccl_if_ip to an address of '{owner}', or leave it out to use "
                "its management address",
                "unique",
                (Related(prev.path),),
            )
