"""Which NPU NICs a PD server's network gate pings: those of the other servers of its instance (HCCL inside a
DP group spanning servers) and those of every server of the other pool (Mooncake moves the KV cache from
prefill NPUs to decode NPUs over the NPU NICs: AscendDirectTransport, vllm-project/vllm-ascend
docs/source/tutorials/features/pd_disaggregation_mooncake_multi_node.md @v0.23.0, "Verify Multi-Node
Communication Environment"). No HCCL rank table: the Mooncake path needs none."""

from __future__ import annotations

from orchestrator.planning.pd_model import PdInstancePlan, PdPlan

Link = tuple[str, str, tuple[int, ...]]
"""(server, peer server, the peer's devices the server must reach)."""


def _used(inst: PdInstancePlan) -> dict[str, tuple[int, ...]]:
    out: dict[str, list[int]] = {}
    for r in inst.ranks:
        out.setdefault(r.server, []).extend(r.devices)
    return {s: tuple(sorted(set(d))) for s, d in out.items()}


def pd_links(pd: PdPlan) -> tuple[Link, ...]:
    used = {inst.name: _used(inst) for inst in pd.instances}
    links: list[Link] = []
    for inst in pd.instances:
        mine = used[inst.name]
        links += [(a, b, devs) for a in mine for b, devs in mine.items() if a != b]
    for p in pd.prefill:
        for d in pd.decode:
            ps, ds = used[p.name], used[d.name]
            links += [(a, b, devs) for a in ps for b, devs in ds.items() if a != b]
            links += [(b, a, devs) for b in ds for a, devs in ps.items() if a != b]
    return tuple(links)
