"""Plan serving.disaggregation: each instance's DP ranks (server, devices, API port, kv handshake port), argv,
environment, capacity and startup timeout.

Layout as examples/external_online_dp/launch_online_dp.py @v0.23.0 (vllm-project/vllm-ascend): an instance's
DP ranks are spread evenly over its servers (dp_size_local = dp / servers, dp_rank_start = server index x
dp_size_local), rank i of a server takes the i-th slice of tp x pp devices and API port = port + i (the
instance's port, else the pool's);
--data-parallel-address is the instance's first server.

Mooncake's handshake port (vllm_ascend/distributed/kv_transfer/kv_p2p/mooncake_connector.py @v0.23.0):
side_channel_port = kv_port + data_parallel_rank x tp x pp x pcp (the GLOBAL --data-parallel-rank: vLLM's
parallel_config.data_parallel_rank), and each worker listens on side_channel_port + device_index,
device_index = (pp_rank x pcp + pcp_rank) x tp + tp_rank: a rank binds kv_handshake_port .. + tp x pp - 1.

Engine ids: the instance's name. The connector needs them unique per instance ("Conflict engine id",
mooncake_connector.py @v0.23.0; upstream CI gives each prefill DP group its own id and the decode group one,
tests/e2e/weekly/multi_node/external_dp/config/DeepSeek_V3.1T_MTP1_PD.yaml): instance names are unique, and
a name does not change when an instance is added before it (an index would, restarting that instance).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from orchestrator.catalog import ModelArch
from orchestrator.planning import capacity as cap
from orchestrator.planning import serve_args
from orchestrator.planning.gates import startup_timeout_s
from orchestrator.planning.load import site_load
from orchestrator.planning.pd_args import (
    kv_transfer_config,
    pool_json_args,
    pool_serving,
    rank_dp_args,
    rank_env,
)
from orchestrator.planning.pd_model import PdInstancePlan, PdPlan, PdRankPlan, PdRole
from orchestrator.planning.resolve import (
    ResolvedProfile,
    effective_dtype,
    effective_quantization,
    served_name,
)
from orchestrator.planning.speculative import MTP_METHODS
from orchestrator.spec.disaggregation import KV_PORT_STEP, Disaggregation, PdInstance, PdPool
from orchestrator.spec.hardware import Server
from orchestrator.spec.site import SiteSpec


def container_name(instance: str, dp_rank: int) -> str:
    return f"vllm-{instance}-dp{dp_rank}"


def instance_kv_port(pool: PdPool, index: int) -> int:
    """The instance's own kv_port, else the pool's + KV_PORT_STEP x its index in the pool."""
    inst = pool.instances[index]
    return inst.kv_port if inst.kv_port is not None else pool.kv_port + KV_PORT_STEP * index


def control_ip(server: Server) -> str:
    """HCCL_IF_IP and --data-parallel-address: overrides.hccl_if_ip, else the address (as topology.py)."""
    return str(server.overrides.hccl_if_ip or server.address)


def _mtp(pool: PdPool, arch: ModelArch) -> bool:
    method = str((pool.speculative_config or {}).get("method", "")).lower()
    return method in MTP_METHODS and arch.mtp_layers > 0


class _Ctx:
    """What every instance of the site shares."""

    def __init__(
        self,
        spec: SiteSpec,
        pd: Disaggregation,
        servers: Mapping[str, Server],
        profiles: Mapping[str, ResolvedProfile],
        arch: ModelArch,
    ) -> None:
        self.spec, self.pd, self.servers, self.profiles, self.arch = spec, pd, servers, profiles, arch
        self.quant = effective_quantization(spec.model, arch)
        self.served = served_name(spec.model)
        self.load = site_load(spec, arch).args()


def _instance(ctx: _Ctx, role: PdRole, pool: PdPool, index: int) -> PdInstancePlan:
    spec, inst = ctx.spec, pool.instances[index]
    members = [ctx.servers[s] for s in inst.servers]
    prof = ctx.profiles[str(members[0].profile)]
    par = pool.parallelism
    serving = pool_serving(spec.serving, pool)
    kv_port = instance_kv_port(pool, index)
    engine_id = inst.name
    dp_address = control_ip(members[0])
    rpc_port = inst.dp_rpc_port if inst.dp_rpc_port is not None else pool.dp_rpc_port
    devices = tuple(inst.devices) if inst.devices is not None else tuple(range(prof.devices))
    per_rank = par.tp * par.pp
    local = max(1, par.dp // len(members))
    engine = serve_args.engine_args(
        weights_path=spec.model.weights_path,
        serving=serving,
        tp=par.tp,
        pp=par.pp,
        dp=par.dp,
        ep=par.ep,
        quantization=ctx.quant,
        dtype=effective_dtype(spec.model, ctx.arch, prof.chip),
        trust_remote_code=spec.model.trust_remote_code,
        backend=None,
        load=ctx.load,
    )
    kv_json = kv_transfer_config(ctx.pd, role, kv_port, engine_id)
    tail = [*pool_json_args(pool), "--kv-transfer-config", json.dumps(kv_json, separators=(",", ":"))]
    tail += [*spec.serving.extra_args, *pool.extra_args]
    ranks: list[PdRankPlan] = []
    for s, member in enumerate(members):
        for i in range(local):
            dp_rank = s * local + i
            mine = devices[i * per_rank : (i + 1) * per_rank]
            port = (inst.port if inst.port is not None else pool.port) + i
            args = [
                *engine,
                *serve_args.api_args(str(member.address), port, ctx.served),
                *rank_dp_args(dp=par.dp, dp_rank=dp_rank, dp_address=dp_address, rpc_port=rpc_port),
                *tail,
            ]
            env = rank_env(
                role=role,
                pd=ctx.pd,
                pool=pool,
                serving=spec.serving,
                devices=mine,
                world_size=par.tp * par.pp * par.dp,
                chip=prof.chip,
                if_ip=control_ip(member),
                socket_ifname=member.overrides.socket_ifname,
                servers=len(members),
            )
            ranks.append(
                PdRankPlan(
                    server=member.name,
                    address=str(member.address),
                    dp_rank=dp_rank,
                    local_index=i,
                    port=port,
                    devices=mine,
                    kv_handshake_port=kv_port + dp_rank * per_rank,
                    container_name=container_name(inst.name, dp_rank),
                    args=tuple(args),
                    env=tuple(env),
                )
            )
    capacity = cap.plan_capacity(
        ctx.arch,
        ctx.quant,
        1 if serving.kv_cache_dtype == "int8" else 2,
        cap.Layout(par.tp, par.pp, par.dp, par.ep, _mtp(pool, ctx.arch)),
        prof.usable_gib,
        serving.gpu_memory_utilization,
        serving.max_model_len,
        serving.max_num_seqs,
        serving.hccl.buffsize_mb,
    )
    gates = spec.rollout.gates
    timeout = gates.startup_timeout_s or startup_timeout_s(
        capacity.weights_gib * local * per_rank, gates.weights_read_mb_s, serving.enforce_eager
    )
    return PdInstancePlan(
        name=inst.name,
        role=role,
        engine_id=engine_id,
        kv_port=kv_port,
        tp=par.tp,
        dp=par.dp,
        ep=par.ep,
        dp_address=dp_address,
        dp_rpc_port=rpc_port,
        servers=tuple(inst.servers),
        ranks=tuple(ranks),
        capacity=capacity,
        startup_timeout_s=timeout,
        profile=prof.name,
        chip=prof.chip.name,
        pp=par.pp,
        dp_size_local=local,
    )


def plan_pd(
    spec: SiteSpec,
    servers: Mapping[str, Server],
    profiles: Mapping[str, ResolvedProfile],
    arch: ModelArch,
) -> PdPlan | None:
    """The PD plan of a site with serving.disaggregation (None without); instances whose servers are unknown
    or have no profile are left out (validation reports them)."""
    pd = spec.serving.disaggregation
    if pd is None:
        return None
    ctx = _Ctx(spec, pd, servers, profiles, arch)

    def pool_plan(role: PdRole, pool: PdPool) -> tuple[PdInstancePlan, ...]:
        return tuple(
            _instance(ctx, role, pool, i)
            for i, inst in enumerate(pool.instances)
            if _placeable(inst, servers, profiles)
        )

    prefill, decode = pool_plan("prefill", pd.prefill), pool_plan("decode", pd.decode)
    return PdPlan(connector=pd.connector, prefill=prefill, decode=decode)


def _placeable(
    inst: PdInstance, servers: Mapping[str, Server], profiles: Mapping[str, ResolvedProfile]
) -> bool:
    return all(s in servers and str(servers[s].profile) in profiles for s in inst.servers)
