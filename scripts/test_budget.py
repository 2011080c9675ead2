#!/usr/bin/env python3
"""The test bed's budget (scripts/test): where the wall seconds and the CPU go.

    scripts/test_budget.py mark NAME          # a step ends now (wall clock + /proc/stat CPU ticks)
    scripts/test_budget.py report             # the table: steps, integration modules, unit suite, CPU

Files live in $TEST_REPORTS (default build/test-reports): steps.tsv (one line per mark) and pytest's junit
XML (integration.xml, unit.xml). Standard library only: it runs before and after the virtualenv exists.
Module seconds come from the junit XML: pytest reports each test's setup + call + teardown, so a module's
sum includes its module-scoped fixtures (the cluster bring-up on its first test, `sim down` on its last).
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

REPORTS = Path(os.environ.get("TEST_REPORTS", "build/test-reports"))
STEPS = REPORTS / "steps.tsv"
GOAL_S = 1800  # the time goal for the whole .ci/run on the 2-core machine
LIMIT_S = 2700  # above this the test bed is over budget


def cpu_ticks() -> tuple[int, int]:
    """(busy, all) jiffies of every CPU since boot, from the first line of /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # user nice system idle iowait irq softirq steal (guest is inside user)
    return total - idle, total


def mark(name: str) -> None:
    REPORTS.mkdir(parents=True, exist_ok=True)
    busy, total = cpu_ticks()
    with STEPS.open("a", encoding="utf-8") as f:
        f.write(f"{name}\t{time.time():.3f}\t{busy}\t{total}\n")


def modules(xml: Path) -> dict[str, tuple[float, int, int]]:
    """junit XML -> {module: (seconds, tests, failed or errored)}."""
    out: dict[str, list[float]] = defaultdict(lambda: [0.0, 0, 0])
    if not xml.is_file():
        return {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        module = (case.get("classname") or "?").rsplit(".", 1)[-1]  # tests.integration.sim.test_x -> test_x
        row = out[module]
        row[0] += float(case.get("time") or 0)
        row[1] += 1
        row[2] += int(case.find("failure") is not None or case.find("error") is not None)
    return {k: (v[0], int(v[1]), int(v[2])) for k, v in out.items()}


def report() -> int:
    if not STEPS.is_file():
        print(f"no {STEPS}: nothing measured", file=sys.stderr)
        return 1
    rows = [line.split("\t") for line in STEPS.read_text(encoding="utf-8").splitlines() if line.strip()]
    hz = os.sysconf("SC_CLK_TCK")
    cores = os.cpu_count() or 1
    print("== test budget")
    print(f"{'step':<44}{'wall s':>9}{'CPU s':>9}")
    for (_, t0, b0, _), (name, t1, b1, _) in itertools.pairwise(rows):
        print(f"{name:<44}{float(t1) - float(t0):>9.0f}{(int(b1) - int(b0)) / hz:>9.0f}")
    wall = float(rows[-1][1]) - float(rows[0][1])
    busy = (int(rows[-1][2]) - int(rows[0][2])) / hz
    verdict = "within the goal" if wall <= GOAL_S else "over the goal" if wall <= LIMIT_S else "OVER BUDGET"
    print(f"{'total':<44}{wall:>9.0f}{busy:>9.0f}")
    share = 100 * busy / max(wall * cores, 1)
    print(
        f"CPU: {busy:.0f} s used of {wall * cores:.0f} s on {cores} cores ({share:.0f} %);"
        f" wall {wall:.0f} s of the {GOAL_S} s goal ({verdict}; over budget above {LIMIT_S} s)"
    )
    for suite in ("integration", "unit"):
        found = modules(REPORTS / f"{suite}.xml")
        if not found:
            continue
        tests = sum(n for _, n, _ in found.values())
        seconds = sum(s for s, _, _ in found.values())
        print(f"== {suite}: {tests} tests in {len(found)} modules, {seconds:.0f} s of test time (junit)")
        shown = sorted(found.items(), key=lambda kv: -kv[1][0])
        for name, (s, n, bad) in shown if suite == "integration" else shown[:10]:
            print(f"  {name:<42}{s:>8.0f} s {n:>4} tests" + (f"  {bad} failed" if bad else ""))
    goldens(REPORTS / "goldens.jsonl")
    return 0


def goldens(path: Path) -> None:
    """What the goldens (tests/integration/sim/goldens.py) cost: each step's count and seconds."""
    if not path.is_file():
        return
    steps: dict[tuple[str, str], list[float]] = defaultdict(list)
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        steps[(rec["golden"], rec["step"])].append(float(rec["seconds"]))
    print("== goldens: converged once, restored per module (wall s)")
    for (key, step), seconds in sorted(steps.items()):
        mean, total = sum(seconds) / len(seconds), sum(seconds)
        print(f"  {key:<6}{step:<12}{len(seconds):>3} x {mean:>6.0f} s = {total:>6.0f} s")


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "mark":
        mark(argv[1])
        return 0
    if argv == ["report"]:
        return report()
    print(__doc__, file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
