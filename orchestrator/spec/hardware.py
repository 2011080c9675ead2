"""Hardware profiles and servers."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from orchestrator.spec.common import IPv4, KernelInt, Name, SpecModel

Chip = Literal["910B1", "910B2", "910B3", "910B4", "910_93", "310P3"]
ServerRole = Literal["npu", "build", "gateway", "monitoring"]


class HardwareProfile(SpecModel):
    """What one kind of server looks like. Facts not given here come from the chip catalog."""

    chip: Chip = Field(description="NPU chip: 910B1-910B4 (Atlas A2), 910_93 (Atlas A3), 310P3 (Atlas 300I).")
    cards: int = Field(8, ge=1, le=8, description="NPU cards per server (npu-smi 'NPU' rows).")
    devices_per_card: int | None = Field(
        None,
        ge=1,
        le=2,
        description="Logical devices (dies/chips) per card. Default from the chip: A3 has 2 dies per "
        "card, 300I Duo has 2 chips per card, 910B has 1.",
    )
    hbm_gb: int | None = Field(
        None, ge=1, le=256, description="HBM per logical device in GB. Default from the chip."
    )
    cpu: Literal["kunpeng-920", "generic"] = Field("kunpeng-920", description="Host CPU.")
    arch: Literal["aarch64", "x86_64"] = Field("aarch64", description="Host architecture.")
    cpu_cores: int = Field(192, ge=1, le=4096, description="Host CPU cores (for CPU binding checks).")
    memory_gb: int = Field(1024, ge=1, le=65536, description="Host memory in GB.")


class ServerOverrides(SpecModel):
    """Per-server exceptions to the site-wide settings."""

    hccn_addresses: list[IPv4] | None = Field(
        None, description="Explicit NPU-NIC address per device index (replaces the plan for this server)."
    )
    cpu_governor: Literal["performance", "ondemand", "powersave", "schedutil", "conservative"] | None = None
    sysctls: dict[str, str | KernelInt] = Field(default_factory=dict, description="Extra or changed sysctls.")
    hccl_if_ip: IPv4 | None = Field(None, description="HCCL_IF_IP for this server (default: address).")
    socket_ifname: str | None = Field(None, description="Host NIC name for HCCL/GLOO/TP sockets.")


class Server(SpecModel):
    """One physical server."""

    name: Name = Field(description="Inventory host name.")
    address: IPv4 = Field(description="Management address the controller reaches over SSH.")
    profile: str | None = Field(
        None, description="Hardware profile name (required for 'npu' servers, optional otherwise)."
    )
    roles: list[ServerRole] = Field(
        default_factory=lambda: list[ServerRole](["npu"]),
        min_length=1,
        description="What the server does: npu (serves), build (builds the image), gateway, monitoring.",
    )
    ssh_port: int = Field(22, ge=1, le=65535)
    labels: dict[str, str] = Field(default_factory=dict, description="Free-form labels (rack, pod, ...).")
    overrides: ServerOverrides = Field(default_factory=ServerOverrides)
