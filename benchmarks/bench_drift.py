"""Time `orchestrator drift` against a no-op `orchestrator apply` of the same phases on a simulated cluster
and print the ratio it is judged by: drift wall time / no-op apply wall time (goal <= 1.0: a drift check
costs no more than an apply that finds nothing to do; both run every task, drift in check + diff mode).

Run:  .venv/bin/python benchmarks/bench_drift.py [--servers 8] [--runs 2] [--phases P,...] [--keep]

It brings up `--servers` simulated Atlas 800T A2 servers in a scratch root (`orchestrator sim up`), converges
them with one apply, then alternates `runs` times: a no-op apply (must change nothing) and a drift run (must
exit 0), and reports medians. The cluster is taken down at the end (--keep leaves it up). Not a pytest test
and not timed by CI: absolute times move with the machine and its load; the ratio is what to compare.
Needs a Docker engine (`python -m ascend_sim.engine ensure`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
ORCH = str(BIN / "orchestrator")
GOAL = 1.0
HOST_LAYER = "preflight,drivers,host,network"


def _run(argv: list[str], cwd: Path, ok: tuple[int, ...] = (0,)) -> tuple[float, str]:
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - started
    if proc.returncode not in ok:
        raise SystemExit(
            f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        )
    return elapsed, proc.stdout


def _apply(root: Path, site: str, phases: str) -> tuple[float, int]:
    seconds, out = _run([ORCH, "apply", site, "--yes", "--format", "json", "--phases", phases], root)
    summary: dict[str, Any] = json.loads(out)
    changed = sum(c["changed"] for p in summary["phases"] for c in p["hosts"].values())
    return seconds, changed


def _drift(root: Path, site: str, phases: str) -> tuple[float, dict[str, Any]]:
    seconds, out = _run([ORCH, "drift", site, "--format", "json", "--phases", phases], root, ok=(0, 3, 4))
    report: dict[str, Any] = json.loads(out)
    if report["exit_code"] != 0:
        raise SystemExit(f"drift after converge found {report['totals']}: check mode is not truthful")
    return seconds, report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--servers", type=int, default=8)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--phases", default=HOST_LAYER)
    ap.add_argument("--keep", action="store_true", help="leave the simulated cluster up")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-drift-"))
    name = f"it-dr-b{args.servers}-{os.getpid() % 100000}"
    try:
        up_s, _ = _run([ORCH, "sim", "up", "--nodes", str(args.servers), "--name", name], root)
        print(f"sim up --nodes {args.servers}: {up_s:.0f} s", flush=True)
        first_s, first_changed = _apply(root, name, args.phases)
        print(f"first apply ({args.phases}): {first_s:.1f} s, {first_changed} changed", flush=True)
        noops: list[float] = []
        drifts: list[float] = []
        for i in range(args.runs):
            s, changed = _apply(root, name, args.phases)
            if changed:
                raise SystemExit(f"the re-apply changed {changed} tasks: not idempotent")
            noops.append(s)
            d, report = _drift(root, name, args.phases)
            drifts.append(d)
            print(
                f"run {i + 1}: no-op apply {s:.1f} s; drift {d:.1f} s "
                f"({report['totals']['in_sync']} host x phase cells in sync)",
                flush=True,
            )
        noop, drift = statistics.median(noops), statistics.median(drifts)
        ratio = drift / noop
        print(f"median no-op apply: {noop:.1f} s; median drift: {drift:.1f} s ({args.servers} servers)")
        print(f"ratio drift / no-op apply: {ratio:.2f} (goal <= {GOAL:.1f})")
        print("PASS" if ratio <= GOAL else "OVER")
    finally:
        if not args.keep:
            subprocess.run([ORCH, "sim", "down", "--name", name], cwd=root, capture_output=True, check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
