"""Where the PD instances run: their servers exist and serve NPUs, their DP ranks fit the servers' devices,
instances sharing a server use disjoint devices, prefill and decode run on one hardware generation, and the
prefill and decode TP sizes are ones the Mooncake connector can map onto each other.

Sources: vllm-project/vllm-ascend vllm_ascend/distributed/kv_transfer/kv_p2p/mooncake_connector.py @v0.23.0
(MooncakeConnectorWorker: "prefill_tp_size ... must be greater than or equal to the decode_tp_size";
_get_prefill_decode_size: "decode pp size must be 1"), docs/source/developer_guide/Design_Documents/
disaggregated_prefill.md @v0.23.0 (only P_tp > D_tp with P_tp % D_tp == 0 for unequal TP; "Heterogeneous P
and D nodes are not supported, for example, running P nodes on A2 and D nodes on A3").
"""

from __future__ import annotations

from collections.abc import Iterator

from orchestrator.planning.resolve import ResolvedProfile, resolve_model
from orchestrator.spec.findings import Finding, Related, SpecPath, error, warning
from orchestrator.spec.site import SiteSpec
from orchestrator.validation.pd_common import (
    Pool,
    devices_per_rank,
    generation,
    instance_devices,
    instances,
    pools,
    ranks_per_server,
    server_index,
    server_profiles,
)

_DESIGN_DOC = "docs/source/developer_guide/Design_Documents/disaggregated_prefill.md @v0.23.0"


def check(spec: SiteSpec) -> Iterator[Finding]:
    """Everything but the server references (references.py asks server_references: the plan needs them)."""
    yield from _tp_ratio(spec)
    yield from _rollable(spec)
    yield from _model_fit(spec)
    profiles = server_profiles(spec)
    yield from _generation(spec, profiles)
    yield from _fit(spec, profiles)
    yield from _shared_devices(spec, profiles)


def server_references(spec: SiteSpec) -> Iterator[Finding]:
    names = server_index(spec)
    for p, i, inst in instances(spec):
        if len(set(inst.servers)) != len(inst.servers):
            yield error(
                p.field("instances", i, "servers"),
                f"a server is listed twice in {p.role} instance '{inst.name}'",
                "list each server once",
                "unique",
            )
        for s, name in enumerate(inst.servers):
            path = p.field("instances", i, "servers", s)
            if name not in names:
                yield error(
                    path,
                    f"server '{name}' is not defined",
                    f"use one of: {', '.join(sorted(names))}",
                    "reference",
                )
            elif "npu" not in spec.servers[names[name]].roles:
                yield error(
                    path,
                    f"server '{name}' has no 'npu' role",
                    f"add 'npu' to servers[{names[name]}].roles",
                    "reference",
                )


def _rollable(spec: SiteSpec) -> Iterator[Finding]:
    """The serve phase rolls a pool one instance at a time (roles/vllm_serve): with one instance, the pool has
    none routable while it restarts, and every PD request fails meanwhile."""
    for p in pools(spec):
        if len(p.pool.instances) == 1:
            yield warning(
                p.field("instances"),
                f"the {p.role} pool has one instance: a rolling update of it takes the pool out of the "
                "gateway until the new release passes its gates, and every request fails meanwhile",
                f"add a second {p.role} instance (other servers, or other devices with its own port) so "
                "that one serves while the other rolls",
                "pd-rollout",
            )


def _tp_ratio(spec: SiteSpec) -> Iterator[Finding]:
    found = pools(spec)
    if not found:
        return
    prefill, decode = found
    ptp, dtp = prefill.pool.parallelism.tp, decode.pool.parallelism.tp
    related = (Related(decode.field("parallelism", "tp"), "decode tp"),)
    if ptp < dtp:
        yield error(
            prefill.field("parallelism", "tp"),
            f"prefill tp {ptp} is below decode tp {dtp}: vllm-ascend's Mooncake connector refuses to start "
            f'(ValueError "prefill_tp_size: {ptp} must be greater than or equal to the decode_tp_size: '
            f'{dtp}", '
            "mooncake_connector.py @v0.23.0)",
            f"raise prefill tp to a multiple of {dtp} (e.g. {dtp}) or lower decode tp to a divisor of {ptp} "
            "(the reference 2P1D layout: prefill DP2 x TP8, decode DP32 x TP1)",
            "pd-parallelism",
            related,
        )
    elif ptp % dtp:
        yield error(
            prefill.field("parallelism", "tp"),
            f"prefill tp {ptp} is not a multiple of decode tp {dtp}: for unequal TP the Mooncake connector "
            f"supports only P_tp > D_tp with P_tp % D_tp == 0 ({_DESIGN_DOC})",
            f"use a decode tp that divides {ptp} (e.g. {_divisor_below(ptp, dtp)}), or a prefill tp "
            f"that is a multiple of {dtp}",
            "pd-parallelism",
            related,
        )
    if decode.pool.parallelism.pp != 1:
        yield error(
            decode.field("parallelism", "pp"),
            f'decode pp is {decode.pool.parallelism.pp}: the Mooncake connector asserts "decode pp size must '
            'be 1" (mooncake_connector.py _get_prefill_decode_size @v0.23.0)',
            "set decode pp to 1 and spread the decode instance with tp and dp",
            "pd-parallelism",
        )


def _model_fit(spec: SiteSpec) -> Iterator[Finding]:
    """What the model allows of each pool's parallelism (as plan_checks/layout.py for replicas)."""
    try:
        arch = resolve_model(spec.model)
    except KeyError:
        return  # model_rules reports it
    for p in pools(spec):
        par = p.pool.parallelism
        if arch.heads % par.tp:
            yield error(
                p.field("parallelism", "tp"),
                f"{arch.name} has {arch.heads} attention heads, which {p.role} tp={par.tp} does not divide",
                f"use a tp that divides {arch.heads}",
                "topology",
            )
        elif arch.attention == "gqa" and arch.kv_heads % par.tp and par.tp % arch.kv_heads:
            yield error(
                p.field("parallelism", "tp"),
                f"{arch.name} has {arch.kv_heads} KV heads: {p.role} tp={par.tp} must divide them, or be a "
                "multiple of them (vLLM then replicates KV heads)",
                f"use a tp that divides {arch.kv_heads} or is a multiple of it",
                "topology",
            )
        if par.pp > arch.layers:
            yield error(
                p.field("parallelism", "pp"),
                f"{p.role} pp={par.pp} exceeds the {arch.layers} layers of {arch.name}",
                "lower pp",
                "topology",
            )
        if par.ep and not arch.moe:
            yield error(
                p.field("parallelism", "ep"),
                f"{p.role}: expert parallelism needs a mixture-of-experts model; {arch.name} is dense",
                f"set {p.name('parallelism', 'ep')}: false",
                "topology",
            )


def _divisor_below(n: int, limit: int) -> int:
    return max(d for d in range(1, min(n, limit) + 1) if n % d == 0)


def _generation(spec: SiteSpec, profiles: dict[str, ResolvedProfile]) -> Iterator[Finding]:
    first: tuple[str, str, SpecPath] | None = None  # generation, server, path
    for p, i, inst in instances(spec):
        for s, name in enumerate(inst.servers):
            prof = profiles.get(name)
            if prof is None:
                continue
            gen = generation(prof.chip)
            path = p.field("instances", i, "servers", s)
            if first is None:
                first = (gen, name, path)
            elif gen != first[0]:
                yield error(
                    path,
                    f"{p.role} instance '{inst.name}' runs on '{name}' ({gen}, {prof.chip.product}) but "
                    f"'{first[1]}' is {first[0]}: vllm-ascend does not support heterogeneous prefill "
                    "and decode "
                    f'hardware ("running P nodes on A2 and D nodes on A3", {_DESIGN_DOC})',
                    f"put every prefill and decode instance on {first[0]} servers",
                    "pd-hardware",
                    (Related(first[2], f"{first[0]} server"),),
                )
                return


def _fit(spec: SiteSpec, profiles: dict[str, ResolvedProfile]) -> Iterator[Finding]:
    for p, i, inst in instances(spec):
        par = p.pool.parallelism
        local = ranks_per_server(p.pool, inst)
        if local is None:
            n = len(inst.servers)
            yield error(
                p.field("instances", i, "servers"),
                f"{p.role} instance '{inst.name}' spreads dp {par.dp} ranks over {n} servers: every "
                "server of "
                "an instance runs the same number of DP ranks (external DP, one `vllm serve` per rank; "
                "examples/external_online_dp/launch_online_dp.py --dp-size-local @v0.23.0)",
                f"use a dp that is a multiple of {n} in {p.name('parallelism', 'dp')}, or list "
                f"{_server_counts(par.dp)} server(s)",
                "pd-layout",
            )
            continue
        yield from _fits_servers(p, i, local, profiles)


def _server_counts(dp: int) -> str:
    return " or ".join(str(n) for n in range(1, min(dp, 8) + 1) if dp % n == 0)


def _fits_servers(p: Pool, i: int, local: int, profiles: dict[str, ResolvedProfile]) -> Iterator[Finding]:
    inst = p.pool.instances[i]
    need = local * devices_per_rank(p.pool)
    for name in dict.fromkeys(inst.servers):
        prof = profiles.get(name)
        if prof is None:
            continue
        if inst.devices is not None:
            outside = sorted({d for d in inst.devices if d >= prof.devices})
            if outside:
                yield error(
                    p.field("instances", i, "devices"),
                    f"{p.role} instance '{inst.name}': devices {outside} do not exist on '{name}' "
                    f"({prof.describe()}: devices 0-{prof.devices - 1})",
                    f"use device indices 0-{prof.devices - 1}",
                    "pd-layout",
                )
                return
            if len(set(inst.devices)) != len(inst.devices):
                yield error(
                    p.field("instances", i, "devices"),
                    f"{p.role} instance '{inst.name}' lists a device twice",
                    "list each device once",
                    "pd-layout",
                )
                return
        have = len(instance_devices(inst, prof))
        if need > have:
            par = p.pool.parallelism
            where = "its devices list" if inst.devices is not None else prof.describe()
            yield error(
                p.field("instances", i, "devices") if inst.devices is not None else p.field("parallelism"),
                f"{p.role} instance '{inst.name}' runs {local} DP rank(s) of tp {par.tp} x pp {par.pp} on "
                f"each server, {need} devices, but '{name}' offers {have} ({where})",
                f"spread the instance over more servers (dp / servers x tp x pp <= {have}), lower tp or dp, "
                "or give it more devices",
                "pd-layout",
            )
            return


def _shared_devices(spec: SiteSpec, profiles: dict[str, ResolvedProfile]) -> Iterator[Finding]:
    owner: dict[tuple[str, int], tuple[str, SpecPath]] = {}
    for p, i, inst in instances(spec):
        label = f"{p.role} instance '{inst.name}'"
        path = p.field("instances", i, "devices") if inst.devices is not None else p.field("instances", i)
        for name in dict.fromkeys(inst.servers):
            prof = profiles.get(name)
            if prof is None:
                continue
            clash = next((owner[(name, d)] for d in instance_devices(inst, prof) if (name, d) in owner), None)
            if clash is not None:
                shared = sorted(
                    d for d in instance_devices(inst, prof) if owner.get((name, d), (None,))[0] == clash[0]
                )
                yield error(
                    path,
                    f"{label} and {clash[0]} both use devices {shared} of '{name}'",
                    "give instances that share a server disjoint 'devices' lists (or separate servers)",
                    "pd-layout",
                    (Related(clash[1], clash[0]),),
                )
                break
            for d in instance_devices(inst, prof):
                owner[(name, d)] = (label, path)
