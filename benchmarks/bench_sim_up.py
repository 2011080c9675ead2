"""Time the simulated cluster's lifecycle: warm `sim up --nodes N` (base image cached), `sim up` again (no
change), `sim down`; optionally the cold base image build. Goal: warm `sim up --nodes 4` under 60 s.

Run:  .venv/bin/python benchmarks/bench_sim_up.py [--nodes 4] [--runs 1] [--cold] [--strict]

It runs the real CLI (`orchestrator sim ...`) in a scratch root, so nothing is written into the checkout.
--cold removes the cached base image first and times its debootstrap build (minutes; needs the Debian mirror).
Needs a Docker engine (`python -m ascend_sim.engine ensure` installs and starts one).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ascend_sim import images
from ascend_sim.engine import SimError, ensure_engine

GOAL_S = 60.0
BIN = Path(sys.executable).parent


def _timed(argv: list[str], cwd: Path) -> tuple[float, str]:
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return elapsed, proc.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--runs", type=int, default=1, help="up/down cycles (the median is reported)")
    ap.add_argument("--cold", action="store_true", help="also time the base image build (removes the cache)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when the warm up is OVER the goal")
    args = ap.parse_args()
    try:
        cli = ensure_engine()
        if args.cold:
            images.remove_base_images(cli)
        started = time.monotonic()
        tag = images.build_base(cli)
        base_s = time.monotonic() - started
    except SimError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"base image {tag}: {'built' if args.cold else 'cached'} in {base_s:.1f} s")
    orch = str(BIN / "orchestrator")
    name = f"bench{os.getpid() % 100000}"
    ups, agains, downs = [], [], []
    with tempfile.TemporaryDirectory(prefix="bench-sim-") as tmp:
        root = Path(tmp)
        for _ in range(args.runs):
            up_s, out = _timed([orch, "sim", "up", "--nodes", str(args.nodes), "--name", name], root)
            again_s, again = _timed([orch, "sim", "up", "--nodes", str(args.nodes), "--name", name], root)
            assert "nothing changed" in again, again
            down_s, _ = _timed([orch, "sim", "down", "--name", name], root)
            ups.append(up_s)
            agains.append(again_s)
            downs.append(down_s)
            print(out.strip().splitlines()[-1])
    load = os.getloadavg()[0]
    print(f"\n{'step':<32}{'median s':>10}{'min s':>8}")
    for label, values in (
        (f"sim up --nodes {args.nodes} (warm)", ups),
        ("sim up again (no change)", agains),
        ("sim down", downs),
    ):
        print(f"{label:<32}{statistics.median(values):>10.1f}{min(values):>8.1f}")
    if args.cold:
        print(f"{'base image build (cold)':<32}{base_s:>10.1f}")
    warm = statistics.median(ups)
    verdict = "PASS" if warm < GOAL_S else "OVER"
    print(
        f"{verdict}: warm sim up --nodes {args.nodes} in {warm:.1f} s "
        f"(goal < {GOAL_S:.0f} s; load average {load:.1f})"
    )
    return 1 if args.strict and verdict == "OVER" else 0


if __name__ == "__main__":
    sys.exit(main())
