"""Rollout numbers of one `orchestrator apply --format json` (or its run.json) that rolled replicas.

    .venv/bin/python benchmarks/bench_rollout.py .orchestrator/runs/<site>/<run_id>/run.json

Prints, from the run's `rollout` summary (orchestrator/runner/rollout.py):
- rollout wall time / sum of the replicas' ready times (start to /health 200), goal <= 1.10, and the same
  without the warm-ups (rollout.warmup: the model's compile time, not ours);
- per replica, /health 200 to the gates passed (models, completion, accuracy, gateway; the soak apart),
  goal <= one poll interval (rollout.gates.health_interval_s, `--poll-s`, default 2);
- requests failed during the rollout: not measured here (the under-load test drives a load generator
  through the gateway).
Exit 1 with --strict when a goal is missed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_json", type=Path)
    ap.add_argument("--poll-s", type=float, default=2.0)
    ap.add_argument("--strict", action="store_true")
    args = ap.parse_args(argv)
    run = json.loads(args.run_json.read_text(encoding="utf-8"))
    ro = run.get("rollout")
    if not ro or "wall_s" not in ro:
        print("this run rolled no replica (rollout is null)")
        return 1
    ratio = ro["wall_s"] / ro["ready_sum_s"] if ro["ready_sum_s"] else float("inf")
    worst = max(ro["ready_to_passed_s"].values())
    print(f"batches: {ro['batches']}  result: {ro['result']}")
    print(
        f"rollout wall time {ro['wall_s']:.1f} s / sum of ready times {ro['ready_sum_s']:.1f} s = {ratio:.2f}"
    )
    print("  (goal <= 1.10; the wall time includes drains, container replacement and the soaks)")
    warm = ro.get("warmup_s") or {}
    if any(warm.values()):
        bare = (ro["wall_s"] - sum(warm.values())) / ro["ready_sum_s"] if ro["ready_sum_s"] else float("inf")
        total = sum(warm.values())
        print(f"  without the warm-ups ({total:.1f} s in all, batches one after another): {bare:.2f}")
    for name, secs in ro["ready_to_passed_s"].items():
        extra = f"soak {ro['soak_s'][name]:.1f} s, warm-up {warm.get(name, 0.0):.1f} s"
        print(f"  {name}: ready -> gates passed {secs:.2f} s (+ {extra})")
    print(f"ready -> gates passed, worst {worst:.2f} s (goal <= one poll interval, {args.poll_s:g} s)")
    missed = ratio > 1.10 or worst > args.poll_s
    print("FAIL" if missed else "PASS")
    return 1 if missed and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
