"""HCCN plan: addresses of the NPU-integrated RoCE NICs (configured with hccn_tool)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from orchestrator.spec.common import IPv4, IPv4Net, SpecModel


class HccnSubnet(SpecModel):
    cidr: IPv4Net = Field(description="Subnet of the NPU NICs, e.g. 192.168.100.0/24 (sets the netmask).")
    gateway: IPv4 | None = Field(None, description="Gateway for the NPU NICs (hccn_tool -gateway).")
    netdetect: IPv4 | None = Field(
        None, description="Address probed by the NIC link detection (hccn_tool -netdetect); default: gateway."
    )


class HccnPlan(SpecModel):
    """How NPU-NIC addresses are laid out across servers.

    single_subnet: all NICs of all servers in one subnet (Atlas 800T A2, Atlas 900 A2 PoD).
    per_index: device d uses subnets[d % len(subnets)] (older Atlas 800 9000: NPU0&4, 1&5, 2&6, 3&7;
    A3 SuperPoD: the two dies of a card in different subnets).
    explicit: every NPU server lists its addresses in overrides.hccn_addresses.
    """

    plan: Literal["single_subnet", "per_index", "explicit"] = "single_subnet"
    subnets: list[HccnSubnet] = Field(default_factory=list, description="Subnets, in device-index order.")
    first_host: int = Field(
        10,
        ge=1,
        le=16777214,
        description="Host number of the first address in each subnet (skip gateways etc.).",
    )
    tls: bool = Field(False, description="hccn_tool -tls; Huawei recommends the same setting everywhere (0).")
    mtu: int | None = Field(None, ge=1280, le=9000, description="NPU NIC MTU (hccn_tool -mtu), if set.")


class Network(SpecModel):
    hccn: HccnPlan | None = Field(
        None, description="NPU-NIC plan; required when any replica spans servers with RoCE-capable NPUs."
    )
