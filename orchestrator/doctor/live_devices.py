"""Live check `npu-held`: NPU device nodes (/dev/davinciN) given to a running container that is not one of
the plan's replicas on this host. A replica whose devices another process holds fails to open them: dcmi
-8005 in its log (rule `dcmi-8005`), and the driver installer refuses to run ("The davinci nodes are
occupied")."""

from __future__ import annotations

from orchestrator.doctor.live_finding import Facts, Finding, LiveCheck, Status, expect, npu

NAME = "npu-held"
FIX = (
    "stop the container that holds the NPUs (`docker stop NAME`) or move it to NPUs no replica uses, then "
    "restart the replica (`orchestrator apply SITE --phases serve`)"
)


def check(host: str, facts: Facts) -> list[Finding]:
    containers = npu(facts).get("containers") or {}
    if not containers.get("checked"):
        why = containers.get("reason") or "not listed"
        return [Finding(host, NAME, Status.warn, f"containers not checked: {why}", "install or start docker")]
    ours = {str(c) for c in expect(facts).get("containers") or []}
    foreign = [c for c in containers.get("items") or [] if str(c.get("name")) not in ours]
    out = []
    for c in foreign:
        nodes = [
            d for d in c.get("devices") or [] if str(d).startswith("/dev/davinci") and str(d)[12:].isdigit()
        ]
        if nodes:
            seen = (
                f"container {c.get('name')} ({c.get('image')}) holds {', '.join(nodes)}; not a replica here"
            )
            out.append(Finding(host, NAME, Status.fail, seen, FIX))
    if out:
        return out
    return [
        Finding(host, NAME, Status.ok, f"no other container holds an NPU ({len(ours)} replica containers)")
    ]


CHECK = LiveCheck(NAME, "NPU device nodes held by a container that is not a replica (dcmi -8005)", FIX, check)
