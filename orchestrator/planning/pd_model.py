"""The plan of a prefill/decode disaggregated site (spec serving.disaggregation): both pools, each instance's
DP ranks with their API port, kv port, engine id, argv and environment, and the PD gateway's worker lists.

Every DP rank is its own `vllm serve` (external DP, vllm-project/vllm-ascend
examples/external_online_dp/launch_online_dp.py @v0.23.0) and its own gateway worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from orchestrator.planning.model import Capacity

PdRole = Literal["prefill", "decode"]


@dataclass(frozen=True)
class PdRankPlan:
    """One DP rank: a `vllm serve` process in its own container on one server."""

    server: str
    address: str
    dp_rank: int
    local_index: int  # i-th rank on this server: API port = pool port + i
    port: int
    devices: tuple[int, ...]
    kv_handshake_port: int
    container_name: str
    args: tuple[str, ...]  # the whole argv after `vllm serve`
    env: tuple[tuple[str, str], ...]

    @property
    def url(self) -> str:
        """The rank's URL in the PD gateway's worker lists (no /v1)."""
        return f"http://{self.address}:{self.port}"

    @property
    def visible_devices(self) -> str:
        """The host's device indices given to the rank's container (inside it they are 0..n-1)."""
        return ",".join(str(d) for d in self.devices)

    @property
    def kv_handshake_ports(self) -> tuple[int, ...]:
        """Every Mooncake handshake port the rank binds: one per device (worker) from kv_handshake_port."""
        return tuple(range(self.kv_handshake_port, self.kv_handshake_port + len(self.devices)))


@dataclass(frozen=True)
class PdInstancePlan:
    """One DP group of a pool: its servers, ranks and connector settings."""

    name: str
    role: PdRole
    engine_id: str
    kv_port: int
    tp: int
    dp: int
    ep: bool
    dp_address: str
    dp_rpc_port: int
    servers: tuple[str, ...]
    ranks: tuple[PdRankPlan, ...]
    capacity: Capacity
    startup_timeout_s: int
    profile: str = ""
    chip: str = ""
    pp: int = 1
    dp_size_local: int = 1  # DP ranks per server

    @property
    def world_size(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def ep_size(self) -> int:
        return self.tp * self.dp if self.ep else 1


@dataclass(frozen=True)
class PdPlan:
    connector: str
    prefill: tuple[PdInstancePlan, ...]
    decode: tuple[PdInstancePlan, ...]

    @property
    def instances(self) -> tuple[PdInstancePlan, ...]:
        return self.prefill + self.decode

    def worker_urls(self, role: PdRole) -> tuple[str, ...]:
        """The gateway's --prefill (role "prefill") or --decode (role "decode") worker URLs, in plan order."""
        pool = self.prefill if role == "prefill" else self.decode
        return tuple(r.url for inst in pool for r in inst.ranks)
