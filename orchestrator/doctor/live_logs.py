"""Live check `serving-log`: the last lines of each serving container's log (`docker logs --tail`), scanned
with the doctor's log rules (orchestrator/doctor/logscan.py) - the same diagnosis `orchestrator doctor --log`
gives for a saved log."""

from __future__ import annotations

from orchestrator.doctor.live_finding import Facts, Finding, LiveCheck, Status
from orchestrator.doctor.logscan import scan_lines

NAME = "serving-log"
FIX = "the fix of the log rule that matched (docs/troubleshooting.md)"


def check(host: str, facts: Facts) -> list[Finding]:
    out = []
    for row in facts.get("logs") or []:
        if not isinstance(row, dict):
            continue
        name = str((row.get("item") or {}).get("container_name") or "?")
        if row.get("rc") not in (0, None):
            err = (str(row.get("stderr") or "").strip().splitlines() or ["docker logs failed"])[-1]
            out.append(Finding(host, NAME, Status.warn, f"{name}: no log: {err}", "start the replica"))
            continue
        # docker logs prints the container's stdout and stderr on the same two streams
        lines = str(row.get("stdout") or "").splitlines() + str(row.get("stderr") or "").splitlines()
        scan = scan_lines(lines)
        m = scan.match
        if m is None:
            out.append(
                Finding(host, NAME, Status.ok, f"{name}: no known error in the last {len(lines)} lines")
            )
            continue
        seen = f"{name}: {m.rule.id} ({m.rule.title}) on line {m.line_no}: {m.line.strip()[:200]}"
        out.append(Finding(host, NAME, Status.fail, seen, m.rule.fix))
    return out


CHECK = LiveCheck(
    NAME, "the last 200 lines of each serving container's log, scanned with the log rules", FIX, check
)
