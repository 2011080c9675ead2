"""Time the registry-less image ship of the image phase to 1 and to N servers of one simulated cluster and
print the ratio it is judged by: ship to N / ship to 1 (goal <= 1.5: the servers receive at once).

Run:  .venv/bin/python benchmarks/bench_image_ship.py [--servers 8] [--runs 2] [--keep]

One cluster of --servers NPU servers (`sim up --nodes N`; the first is also the build host). After the host
layer (Docker engine + SDK) and a first image apply (build + ship), each measurement removes the image from
K servers other than the build host and empties the controller's archive cache, then times
`orchestrator apply SITE --phases image --yes`: export once (docker save | zstd, fetch) + copy + load on the
K servers + verification. K = 1 and K = N-1 (the build host already has its image, so N-1 servers receive
it). The fake vLLM image is the simulator's base tree (~490 MB, ~170 MB compressed).

Not a pytest test and not timed by CI: absolute times move with the machine and its load (every simulated
server shares the controller's CPUs and disk, so "parallel" copies compete for them); the ratio is what to
compare. Needs a Docker engine (`python -m ascend_sim.engine ensure`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
GOAL_RATIO = 1.5


def _run(argv: list[str], cwd: Path) -> tuple[float, str]:
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=cwd, env=dict(os.environ), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = f"{proc.stdout[-4000:]}\n{proc.stderr}"
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{tail}")
    return time.monotonic() - started, proc.stdout


def _apply(root: Path, site: str, phases: str) -> float:
    seconds, out = _run(
        [str(BIN / "orchestrator"), "apply", site, "--phases", phases, "--yes", "--format", "json"], root
    )
    if json.loads(out)["result"] != "ok":
        raise SystemExit(f"apply {phases} did not finish ok:\n{out[-4000:]}")
    return seconds


def _docker(site: str, server: str, script: str) -> str:
    proc = subprocess.run(
        ["docker", "exec", f"ascend-sim-{site}-{server}", "sh", "-c", script],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout


def _ship(root: Path, site: str, ref: str, targets: list[str]) -> float:
    for server in targets:
        _docker(site, server, f"docker rmi -f {ref} >/dev/null")
    shutil.rmtree(root / ".orchestrator" / "image-cache", ignore_errors=True)
    seconds = _apply(root, site, "image")
    for server in targets:
        if ref not in _docker(site, server, "cat /etc/ansible/facts.d/vllm_image.fact"):
            raise SystemExit(f"{server} did not get {ref}")
        if not _docker(site, server, f"docker image inspect --format '{{{{.Id}}}}' {ref}").strip():
            raise SystemExit(f"{server} has no {ref} after the apply")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=8)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="leave the cluster up")
    args = parser.parse_args()
    if args.servers < 3:
        raise SystemExit("--servers must be at least 3 (the build host and >= 2 receivers)")
    root = Path(tempfile.mkdtemp(prefix="bench-image-ship-"))
    site = f"bimg{os.getpid() % 100000}"
    orch = str(BIN / "orchestrator")
    try:
        up_s, _ = _run([orch, "sim", "up", "--nodes", str(args.servers), "--name", site], root)
        print(f"sim up --nodes {args.servers}: {up_s:.0f} s", flush=True)
        print(f"preflight + host: {_apply(root, site, 'preflight,host'):.0f} s", flush=True)
        print(f"first image apply (build + ship): {_apply(root, site, 'image'):.0f} s", flush=True)
        ref = json.loads(_docker(site, "a2-01", "cat /etc/ansible/facts.d/vllm_image.fact"))["ref"]
        receivers = [f"a2-{i:02d}" for i in range(2, args.servers + 1)]
        noop = _apply(root, site, "image")
        one: list[float] = []
        many: list[float] = []
        for _ in range(args.runs):  # alternate, so a load change hits both
            one.append(_ship(root, site, ref, receivers[:1]))
            many.append(_ship(root, site, ref, receivers))
            print(f"ship to 1: {one[-1]:.1f} s, to {len(receivers)}: {many[-1]:.1f} s", flush=True)
        t1, tn = statistics.median(one), statistics.median(many)
        ratio = tn / t1
        print(f"image {ref}; no-op image apply {noop:.1f} s")
        print(f"ship to 1 server: {t1:.1f} s (median of {args.runs})")
        print(f"ship to {len(receivers)} servers: {tn:.1f} s (median of {args.runs})")
        print(f"ratio {len(receivers)}/1: {ratio:.2f} (goal <= {GOAL_RATIO})")
        return 0 if ratio <= GOAL_RATIO else 1
    finally:
        if not args.keep:
            subprocess.run([orch, "sim", "down", "--name", site], cwd=root, capture_output=True, check=False)


if __name__ == "__main__":
    sys.exit(main())
