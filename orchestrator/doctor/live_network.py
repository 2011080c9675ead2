"""Live check `npu-nic`: each NPU NIC's link (`hccn_tool -i N -link -g`: "link status: UP", ascend-samples.md
5b) and a ping to the same-index NIC of each peer server of the plan (`hccn_tool -i N -ping -g address X`,
5d: at least one packet back), as ascend.npu.hccn_ping reports them."""

from __future__ import annotations

from orchestrator.doctor.live_finding import Facts, Finding, LiveCheck, Status, driver_loaded

NAME = "npu-nic"
FIX = (
    "check the NIC's cable, optical module and switch port (`hccn_tool -i N -link -g` must say UP), then "
    "the addresses (`hccn_tool -i N -ip -g`) and routes; `orchestrator apply SITE --phases network` "
    "re-applies the plan's addresses"
)


def check(host: str, facts: Facts) -> list[Finding]:
    hccn = facts.get("hccn")
    if not isinstance(hccn, dict) or not driver_loaded(facts):
        return []  # no NPU NICs in the plan, or npu-pci reports the driver
    failures = [str(f) for f in hccn.get("failures") or []]
    if not failures and hccn.get("failed"):
        failures = [str(hccn.get("msg") or "hccn_tool failed")]
    if failures:
        return [Finding(host, NAME, Status.fail, f, FIX) for f in failures]
    links = hccn.get("links") or {}
    pings = hccn.get("pairs") or []
    return [Finding(host, NAME, Status.ok, f"{len(links)} NIC links UP, {len(pings)} peer pings answered")]


CHECK = LiveCheck(NAME, "NPU-NIC links UP and a ping to the same-index NIC of each peer", FIX, check)
