"""What a rolling update costs besides the model's own start: rollout wall time / sum of the replicas' ready
times, with the fake vLLM's engine start-up set to several lengths, on one simulated cluster.

Run:  .venv/bin/python benchmarks/bench_rollout_cost.py [--init-s 2,30,90] [--keep]

Brings up the mixed layout (3 Atlas 800T A2 servers: one replica on two of them, two replicas on the third; a
gateway host; serial [1, 1]), converges it with one `orchestrator apply`, then for each --init-s value rolls a
new release of every replica (`apply --phases serve`, rollout.warmup off, the spec's default soak on the first
batch) whose containers start FAKE_VLLM_INIT_S seconds slower, and prints, from each apply's rollout summary:
the ratio (goal <= 1.5), the soak and the rest of the wall time per replica ("ours": drains, container
replacement, gates after /health 200, the gateway, records). Ours is a fixed cost per replica, so the ratio
tends to 1 as a start gets longer: the simulator's default start (2 s) is far shorter than a DeepSeek
replica's on hardware (minutes).

It runs the real CLI in a scratch root and takes the cluster down at the end (--keep leaves it up). Not a
pytest test and not timed by CI; one roll per value. Needs a Docker engine (`python -m ascend_sim.engine
ensure`).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

BIN = Path(sys.executable).parent
GOAL = 1.5


def _cli(root: Path, *args: str) -> str:
    proc = subprocess.run(
        [str(BIN / "orchestrator"), *args], cwd=root, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"orchestrator {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-4000:]}")
    return proc.stdout


def _release(site: Path, mark: str, init_s: float) -> None:
    """A new release: another container env (its mark) whose engine starts in init_s; warm-up off."""
    yaml = YAML()
    data: Any = yaml.load(site.read_text(encoding="utf-8"))
    data["serving"]["env"] = {"ROLLOUT_MARK": mark, "FAKE_VLLM_INIT_S": f"{init_s:g}"}
    rollout = data.setdefault("rollout", {})
    rollout["warmup"] = {"enabled": False}
    out = io.StringIO()
    yaml.dump(data, out)
    site.write_text(out.getvalue(), encoding="utf-8")


def roll(root: Path, name: str, mark: str, init_s: float) -> dict[str, Any]:
    _release(root / "inventories" / name / "site.yaml", mark, init_s)
    started = time.monotonic()
    out = json.loads(_cli(root, "apply", name, "--phases", "serve", "--yes", "--format", "json"))
    ro = out.get("rollout") or {}
    if ro.get("result") != "ok":
        raise SystemExit(f"the roll of {mark} did not pass: {json.dumps(ro)[:3000]}")
    replicas = len(ro["ready_to_passed_s"])
    soak = sum(ro["soak_s"].values())
    warm = sum((ro.get("warmup_s") or {}).values())
    ours = (ro["wall_s"] - ro["ready_sum_s"] - soak - warm) / replicas
    return {
        "init_s": init_s,
        "apply_s": time.monotonic() - started,
        "wall_s": ro["wall_s"],
        "ready_sum_s": ro["ready_sum_s"],
        "ratio": ro["wall_s"] / ro["ready_sum_s"],
        "soak_s": soak,
        "ours_s": ours,
        "replicas": replicas,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--init-s", default="2,30,90", help="engine start-up lengths, seconds (comma-separated)")
    ap.add_argument("--keep", action="store_true", help="leave the cluster up")
    args = ap.parse_args()
    lengths = [float(x) for x in args.init_s.split(",") if x.strip()]
    name = f"brc{os.getpid() % 100000}"
    with tempfile.TemporaryDirectory(prefix="bench-rollout-cost-") as tmp:
        root = Path(tmp)
        try:
            started = time.monotonic()
            _cli(root, "sim", "up", "--nodes", "3", "--layout", "mixed", "--gateway", "--name", name)
            _cli(root, "apply", name, "--yes", "--format", "json")
            print(f"sim up and converge: {time.monotonic() - started:.0f} s", flush=True)
            rows = [roll(root, name, f"cost-{i}", s) for i, s in enumerate(lengths)]
        finally:
            if not args.keep:
                subprocess.run(
                    [str(BIN / "orchestrator"), "sim", "down", "--name", name],
                    cwd=root,
                    capture_output=True,
                    check=False,
                )
    head = ("FAKE_VLLM_INIT_S", "wall s", "ready sum s", "ratio", "soak s", "ours/replica s")
    print("\n{:>16} {:>8} {:>12} {:>6} {:>7} {:>15}".format(*head))
    for r in rows:
        print(
            f"{r['init_s']:>16g} {r['wall_s']:>8.1f} {r['ready_sum_s']:>12.1f} {r['ratio']:>6.2f}"
            f" {r['soak_s']:>7.1f} {r['ours_s']:>15.1f}"
        )
    print(f"goal: ratio <= {GOAL} (warm-up off); {rows[0]['replicas']} replicas, one batch after another")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
