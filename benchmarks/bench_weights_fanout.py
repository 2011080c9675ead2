"""Time the weights phase copying the simulator's checkpoint (32 MiB) to N simulated servers with every
transfer rate-limited, and print the ratios it is judged by:

- one copy: the phase on one server (controller -> server), the unit;
- sequential: the controller copies to the N servers one after another (`--forks 1`, model_weights_seeds=N:
  no server-to-server copy), about N one-copy times;
- fan-out: the role's plan (the controller seeds one server, then every server holding verified weights
  seeds one more per round); goal <= log2(N) + 1 one-copy times.

Run:  .venv/bin/python benchmarks/bench_weights_fanout.py [--servers 8] [--bwlimit-mib 2] [--keep]

Each run starts from servers without weights (the directory and the verify cache removed). It runs the real
playbook (ansible-playbook playbooks/weights.yml with the checkout's roles and collection) on a cluster
made by `orchestrator sim up` in a scratch root, and takes it down at the end (--keep leaves it up). The
servers share one machine's disk and CPU, so only the rate limit keeps a copy's time a copy's time: pick a
limit well below what the machine copies at (2 MiB/s: 16 s per copy of the 32 MiB checkpoint).
Not a pytest test.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[1]
WEIGHTS = "/data/models/sim-deepseek-tiny"


def _env(root: Path, name: str) -> dict[str, str]:
    return {
        **os.environ,
        "ANSIBLE_CONFIG": str(root / "inventories" / name / "ansible.cfg"),  # the rendered forks etc.
        "ANSIBLE_ROLES_PATH": str(REPO / "roles"),
        "ANSIBLE_COLLECTIONS_PATH": str(REPO / "collections"),
        "ANSIBLE_NOCOLOR": "1",
    }


def _servers(root: Path, name: str) -> list[str]:
    state = json.loads((root / ".orchestrator" / "sim" / name / "cluster.json").read_text())
    return [s["name"] for s in state["servers"]]


def _clear(name: str, servers: list[str]) -> None:
    for s in servers:
        subprocess.run(
            [
                "docker",
                "exec",
                f"ascend-sim-{name}-{s}",
                "rm",
                "-rf",
                WEIGHTS,
                f"{WEIGHTS}.verify-cache.json",
            ],
            check=True,
        )


def _play(root: Path, name: str, *args: str) -> float:
    argv = [
        str(BIN / "ansible-playbook"),
        "-i",
        f"inventories/{name}/hosts.yml",
        str(REPO / "playbooks" / "weights.yml"),
        *args,
    ]
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=root, env=_env(root, name), capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stdout[-4000:]}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--servers", type=int, default=8)
    ap.add_argument("--bwlimit-mib", type=float, default=2.0)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    n = args.servers
    root = Path(tempfile.mkdtemp(prefix="bench-weights-"))
    name = f"bw{os.getpid() % 100000}"
    orch = str(BIN / "orchestrator")
    subprocess.run([orch, "--root", str(root), "sim", "up", "--name", name, "--nodes", str(n)], check=True)
    try:
        servers = _servers(root, name)
        bw = ["-e", f"model_weights_bwlimit_kib={int(args.bwlimit_mib * 1024)}"]
        _clear(name, servers)
        one = _play(root, name, *bw, "--limit", servers[0])
        _clear(name, servers)
        seq = _play(root, name, *bw, "--forks", "1", "-e", f"model_weights_seeds={n}")
        _clear(name, servers)
        fan = _play(root, name, *bw)
        goal = math.log2(n) + 1
        print(f"servers {n}, every transfer limited to {args.bwlimit_mib} MiB/s, 32 MiB checkpoint")
        print(f"  one copy (1 server)        {one:7.1f} s   1.00")
        print(f"  sequential from controller {seq:7.1f} s   {seq / one:5.2f} one-copy times")
        print(
            f"  fan-out                    {fan:7.1f} s   {fan / one:5.2f} one-copy times "
            f"(goal <= {goal:.2f})"
        )
        print(f"  sequential / fan-out       {seq / fan:5.2f}")
        print(("PASS" if fan / one <= goal else "OVER") + f": fan-out {fan / one:.2f} <= log2({n}) + 1")
    finally:
        if not args.keep:
            subprocess.run([orch, "--root", str(root), "sim", "down", "--name", name], check=False)


if __name__ == "__main__":
    main()
