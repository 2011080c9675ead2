"""What to change when a replica's tp x pp x dp does not fill the NPU devices it owns, and one finding for
the replicas that share serving.parallelism (each replica is checked on its own; the spec has one value)."""

from __future__ import annotations

import re
from dataclasses import replace

from orchestrator.spec.findings import Finding, SpecPath
from orchestrator.spec.parallelism import Parallelism

_SHARED: SpecPath = ("serving", "parallelism")
_REPLICA = re.compile(r"replica '([^']+)' owns")


def suggest_layouts(par: Parallelism, local: int, nodes: int) -> str:
    """Layouts that fill the replica's nodes x local devices, or the servers or devices that fit par."""
    tp, pp, dp = par.tp, par.pp, par.dp
    total, world = local * nodes, tp * pp * dp
    options: list[str] = []
    if total % (tp * pp) == 0:
        options.append(
            f"set dp: {total // (tp * pp)} (tp {tp} x pp {pp} x dp {total // (tp * pp)} = {total})"
        )
    if total % pp == 0 and total // pp != tp and (pp > 1 or tp > total):
        options.append(f"set tp: {total // pp}" + (" with dp: 1" if dp > 1 else ""))
    if world > total and world % local == 0 and (dp == 1 or (pp == 1 and local % tp == 0)):
        across = (
            " and multi_node_tp: true (tensor parallelism across servers runs on Ray)" if tp > local else ""
        )
        options.append(f"give each replica {world // local} servers of {local} devices{across}")
    if world < total and world % nodes == 0:
        per = world // nodes
        options.append(
            f"set devices: [{', '.join(map(str, range(per)))}] on the replica (the {per} devices it uses on "
            "each of its servers; the others can serve another replica)"
        )
    return ", or ".join(options) or f"make tp x pp x dp equal the {total} NPU devices the replica owns"


def merge_shared(findings: list[Finding]) -> list[Finding]:
    """One finding per problem of serving.parallelism, naming every replica it hits (first-seen order)."""
    merged: dict[tuple[object, ...], tuple[Finding, list[str]]] = {}
    out: list[Finding | tuple[object, ...]] = []
    for f in findings:
        if f.path[:2] != _SHARED:
            out.append(f)
            continue
        m = _REPLICA.search(f.message)
        key = (f.path, f.code, f.fix, f.severity, _REPLICA.sub("", f.message))
        if key not in merged:
            merged[key] = (f, [])
            out.append(key)
        if m is not None and m[1] not in merged[key][1]:
            merged[key][1].append(m[1])
    result: list[Finding] = []
    for item in out:
        if isinstance(item, Finding):
            result.append(item)
            continue
        first, names = merged[item]
        if len(names) > 1:
            quoted = ", ".join(f"'{n}'" for n in names)
            first = replace(first, message=_REPLICA.sub(f"replicas {quoted} each own", first.message))
        result.append(first)
    return result
