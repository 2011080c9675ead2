"""Live check `npu-nic`: each NPU NIC's link (`hccn_tool -i N -link -g`: "link status: UP") and a
ping to the same-index NIC of each peer server of the plan (`hccn_tool -i N -ping -g address X`:
at least one packet back), as ascend.npu.hccn_ping reports them."""

from __future__ import annotations

from typing import Any

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
    status, seen = _seen(hccn, facts)
    return [Finding(host, NAME, status, seen, FIX if status is not Status.ok else "")]


def _seen(hccn: dict[str, Any], facts: Facts) -> tuple[Status, str]:
    """What was checked: the links (and net health where a netdetect address is set), then the pings to the
    peers the plan lists, or why there were none to ping."""
    links = hccn.get("links") or {}
    health = hccn.get("health") or {}
    pings = [p for p in hccn.get("pairs") or [] if isinstance(p, dict)]
    said = f"{len(links)} NIC links UP"
    if health:
        said += f", net health Success on {len(health)} (those with a netdetect address)"
    if pings:
        servers = sorted({str(p.get("peer_server")) for p in pings if p.get("peer_server")})
        where = f" on {', '.join(servers)}" if servers else ""
        return (
            Status.ok,
            f"{said}; {len(pings)} pings to the same-index NIC of each peer server{where} answered",
        )
    expect = facts.get("expect")
    planned = expect.get("peers") if isinstance(expect, dict) else None
    if not planned:
        return Status.ok, (
            f"{said}; no peer pinged: this server serves no replica spread over several servers, so the plan "
            "gives it no peer NPU NICs"
        )
    return Status.warn, f"{said}; no peer pinged although the plan lists {len(planned)} peer NICs"


CHECK = LiveCheck(NAME, "NPU-NIC links UP and a ping to the same-index NIC of each peer", FIX, check)
