"""The ports a PD instance listens on, per server: one API port per local DP rank (its port, else the pool's,
+ i), the DP RPC port on its first server (DP instances only: a one-rank instance gets no DP argument), and
the Mooncake handshake ports.

Each DP rank r binds kv_port + r x tp x pp + device index (MooncakeConnectorScheduler.side_channel_port and
KVCacheSendingThread.run in vllm_ascend/distributed/kv_transfer/kv_p2p/mooncake_connector.py @v0.23.0), so the
k-th server of an instance with L ranks per server binds [kv_port + k L tp pp, kv_port + (k+1) L tp pp).
AscendDirectTransport takes random ports in [20000, 20000 + NPUs per server x 1000), so a kv port there fails
now and then with "zmq.error.ZMQError: Address already in use" (docs/source/tutorials/features/
pd_disaggregation_mooncake_multi_node.md @v0.23.0, "kv_port Configuration Guide": >= 28000 on 8-NPU servers,
>= 36000 on 16-NPU servers).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

from orchestrator.planning import hccl_ports
from orchestrator.planning.build import port_claims
from orchestrator.spec.findings import Finding, Related, SpecPath, error
from orchestrator.spec.site import SiteSpec
from orchestrator.validation.pd_common import (
    devices_per_rank,
    instances,
    kv_port,
    ranks_per_server,
    server_profiles,
)

RANDOM_BASE = 20000
RANDOM_PER_NPU = 1000
_GUIDE = "pd_disaggregation_mooncake_multi_node.md @v0.23.0, kv_port Configuration Guide"


@dataclass(frozen=True)
class Claim:
    lo: int
    hi: int  # exclusive
    what: str
    path: SpecPath
    pd: bool
    kv: bool = False

    def span(self) -> str:
        return str(self.lo) if self.hi == self.lo + 1 else f"{self.lo}-{self.hi - 1}"


def pd_claims(spec: SiteSpec) -> dict[str, list[Claim]]:
    """Per server, the port ranges the PD instances listen on, in spec order."""
    out: dict[str, list[Claim]] = defaultdict(list)
    for p, i, inst in instances(spec):
        local = ranks_per_server(p.pool, inst)
        if local is None:
            continue  # pd_layout_rules reports it
        label = f"{p.role} instance '{inst.name}'"
        per_server = local * devices_per_rank(p.pool)
        kv = kv_port(p.pool, i)
        kv_path = p.field("instances", i, "kv_port") if inst.kv_port is not None else p.field("kv_port")
        api = inst.port if inst.port is not None else p.pool.port
        api_path = p.field("instances", i, "port") if inst.port is not None else p.field("port")
        rpc = inst.dp_rpc_port if inst.dp_rpc_port is not None else p.pool.dp_rpc_port
        rpc_path = p.field("dp_rpc_port")
        if inst.dp_rpc_port is not None:
            rpc_path = p.field("instances", i, "dp_rpc_port")
        for k, server in enumerate(dict.fromkeys(inst.servers)):
            out[server].append(Claim(api, api + local, f"{label} API", api_path, True))
            if k == 0 and p.pool.parallelism.dp > 1:  # a one-rank instance runs no DP coordinator
                out[server].append(Claim(rpc, rpc + 1, f"{label} DP RPC", rpc_path, True))
            lo = kv + k * per_server
            out[server].append(Claim(lo, lo + per_server, f"{label} Mooncake kv ports", kv_path, True, True))
    return out


def check(spec: SiteSpec) -> Iterator[Finding]:
    claims = pd_claims(spec)
    profiles = server_profiles(spec)
    for server, mine in claims.items():
        for c in mine:
            if c.hi - 1 > 65535:
                yield error(
                    c.path,
                    f"{c.what} on '{server}' would run to port {c.hi - 1}, past 65535",
                    "lower the port so the whole range fits",
                    "ports",
                )
    placed = [
        (server, profiles[server].devices, c)
        for server, mine in claims.items()
        if server in profiles
        for c in mine
        if c.kv
    ]
    yield from in_random_range(placed)
    yield from _hccl_base_port(spec)
    base = port_claims(spec, [])  # ssh, exporters, Prometheus, the gateway: once, not per server
    for server, found in claims.items():
        others = [Claim(port, port + 1, what, path, False) for port, what, path in base.get(server, [])]
        yield from _overlaps(server, others + found)


def in_random_range(placed: list[tuple[str, int, Claim]]) -> Iterator[Finding]:
    """One finding per kv port field whose ranges reach into the random range of their server
    (placed: server, its NPU count, a kv claim on it)."""
    hits: dict[tuple[str, SpecPath], list[tuple[str, int, Claim]]] = {}
    for server, npus, c in placed:
        if c.lo < RANDOM_BASE + npus * RANDOM_PER_NPU and c.hi > RANDOM_BASE:
            hits.setdefault((c.what, c.path), []).append((server, npus, c))
    for (what, path), found in hits.items():
        npus = max(n for _, n, _ in found)
        top = RANDOM_BASE + npus * RANDOM_PER_NPU
        where = " and ".join(f"'{server}' ({c.span()})" for server, _, c in found)
        yield error(
            path,
            f"{what} on {where} fall in AscendDirectTransport's random port range [{RANDOM_BASE}, "
            f"{top}) of a {npus}-NPU server: the connector then fails now and then with "
            f'"ZMQError: Address already in use" ({_GUIDE})',
            f"set the kv_port to {top} or more (the tutorial: >= 28000 on 8-NPU, >= 36000 on 16-NPU servers)",
            "pd-kv-port",
        )


def _overlaps(server: str, claims: list[Claim]) -> Iterator[Finding]:
    """Each overlap with an earlier-starting claim, reported at the PD claim (the later one of two)."""
    order = {id(c): n for n, c in enumerate(claims)}
    reach: Claim | None = None
    for c in sorted(claims, key=lambda x: (x.lo, order[id(x)])):
        if reach is not None and c.lo < reach.hi and (c.pd or reach.pd):
            later, earlier = (
                (c, reach) if (order[id(c)] > order[id(reach)] and c.pd) or not reach.pd else (reach, c)
            )
            fix = "give one of them another port"
            if later.kv:
                fix = (
                    f"move this kv_port so its {later.hi - later.lo} ports on '{server}' clear "
                    f"{earlier.span()} (set the instance's own kv_port, or the pool's)"
                )
            yield error(
                later.path,
                f"on '{server}', {later.what} ({later.span()}) overlap {earlier.what} ({earlier.span()})",
                fix,
                "ports",
                (Related(earlier.path, earlier.what),),
            )
        if reach is None or c.hi > reach.hi:
            reach = c


def _hccl_base_port(spec: SiteSpec) -> Iterator[Finding]:
    """HCCL_IF_BASE_PORT written in serving.env or a pool's env reaches every DP rank of the pool, and each
    rank is its own `vllm serve` with its own HCCL communicators: two ranks on one server listen from the same
    base ("Failed to bind the IP port", EJ0003; vllm-ascend PR #16205 gives each job sharing a host its
    own)."""
    users: dict[str, int] = defaultdict(int)  # server -> instances on it
    for _, _, inst in instances(spec):
        for server in set(inst.servers):
            users[server] += 1
    for p, _, inst in instances(spec):
        local = ranks_per_server(p.pool, inst)
        env = {**spec.serving.env, **p.pool.env}
        if hccl_ports.ENV not in env or local is None:
            continue
        shared = local > 1 or any(users[server] > 1 for server in inst.servers)
        if not shared:
            continue
        where = (
            p.field("env", hccl_ports.ENV)
            if hccl_ports.ENV in p.pool.env
            else ("serving", "env", hccl_ports.ENV)
        )
        yield error(
            where,
            f"{hccl_ports.ENV}={env[hccl_ports.ENV]} reaches every DP rank of the {p.role} pool, and "
            f"{p.role} instance '{inst.name}' shares a server with another rank: each rank is its own "
            "`vllm serve`, so only the first can bind its HCCL ports",
            f"remove {hccl_ports.ENV} from {'.'.join(str(x) for x in where[:-1])}",
            "hccl",
        )
        return
