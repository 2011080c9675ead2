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
        return ",".join(str(d) for d in self.devices)


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
