"""`sim up --layout pd`: the site spec's serving.disaggregation (orchestrator/spec/disaggregation.py) for the
simulated cluster, prefill and decode disaggregated with vllm-ascend's MooncakeConnectorV1 behind the
gateway.

On exactly PD_NODES NPU servers, two instances per pool so that either pool can roll one instance at a time
while the other serves: prefill instances p1 and p2 on the first server (one rank each, tp = half its NPUs:
devices 0..half-1 and half..n-1, API ports 7100 and 7101), decode instances d1 and d2 each a DP group over
the second and third servers (one rank on each, the same device halves and ports, DP RPC ports 12321 and
12322). Instances sharing a server set their own API port (and DP RPC port), as validation asks.
"""

from __future__ import annotations

from ascend_sim.state import ClusterState

PD_NODES = 3
CONNECTOR = "MooncakeConnectorV1"
API_PORT = 7100  # both pools (they share no server): instance i of a pool listens on 7100 + i
DP_RPC_PORT = 12321  # the decode instances' DP coordinators (both on the second server): 12321 + i
# AscendDirectTransport takes random ports in [20000, 20000 + 1000 x NPUs per server): the kv ports stay above
# it (validation/pd_port_rules.py; the tutorial's >= 28000 on 8-NPU, >= 36000 on 16-NPU servers).
KV_FLOOR = 30000
_RANDOM_BASE, _RANDOM_PER_NPU = 20000, 1000


def kv_port(devices: int) -> int:
    """The prefill pool's kv_port (the decode pool's is 100 above): 30000, or the top of the random range."""
    return max(KV_FLOOR, _RANDOM_BASE + devices * _RANDOM_PER_NPU)


def disaggregation(state: ClusterState, devices: int) -> list[str]:
    """serving.disaggregation's lines (indented under serving:) for a PD_NODES-server cluster of NPUs per
    server ``devices``: two instances per pool on the two halves of each server's NPUs (tp = devices // 2)."""
    npu = [s.name for s in state.servers if s.npu]
    half, kv = devices // 2, kv_port(devices)
    prefill, decode = npu[:1], npu[1:PD_NODES]
    lines = ["  disaggregation:", f"    connector: {CONNECTOR}"]
    for role, prefix, servers, first_kv in (("prefill", "p", prefill, kv), ("decode", "d", decode, kv + 200)):
        lines += [
            f"    {role}:",
            f"      parallelism: {{tp: {half}, dp: {len(servers)}}}",
            f"      port: {API_PORT}",
            f"      kv_port: {first_kv}",
            "      instances:",
        ]
        for i in range(2):
            devs = ", ".join(str(d) for d in range(i * half, (i + 1) * half))
            rpc = f", dp_rpc_port: {DP_RPC_PORT + i}" if len(servers) > 1 else ""
            lines.append(
                f"        - {{name: {prefix}{i + 1}, servers: [{', '.join(servers)}], devices: [{devs}], "
                f"port: {API_PORT + i}{rpc}}}"
            )
    return lines
