"""Time `orchestrator apply` of the host-layer phases on simulated clusters and print the ratios it is
judged by: no-op re-apply / first apply on one server (goal <= 0.2), no-op apply of N servers / of one server
(goal <= 1.5: forks >= hosts, so N servers cost about what one does), and a no-op apply of the N servers with
stock Ansible settings / with the rendered ansible.cfg (goal >= 2), the two alternating on the same cluster.

Run:  .venv/bin/python benchmarks/bench_apply.py [--servers 8] [--runs 2] [--keep]

Stock settings = Ansible's defaults for everything the rendered ansible.cfg tunes, given as environment
variables (they win over the file): forks 5, no pipelining, Ansible's default ssh_args (ControlPersist 60 s,
its own control socket folder, so no master connection of a tuned run is reused), gathering implicit without
a fact cache (every play gathers facts again). The plays' `gather_subset: [min]` is a play keyword that
ansible-core 2.19 offers no setting for, so the stock runs keep it: they gather less than a truly stock
playbook would, and the measured ratio is a lower bound.

It runs the real CLI (`orchestrator sim up`, `orchestrator apply SITE --yes --format json`) in a scratch root,
so nothing is written into the checkout, and takes the clusters down at the end (--keep leaves them up).
Not a pytest test and not timed by CI: absolute times move with the machine and its load; the ratios are
what to compare. Needs a Docker engine (`python -m ascend_sim.engine ensure`).
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
GOAL_NOOP_FIRST = 0.2
GOAL_SCALE = 1.5
GOAL_STOCK = 2.0


def stock_env(scratch: Path) -> dict[str, str]:
    return {
        "ANSIBLE_FORKS": "5",
        "ANSIBLE_PIPELINING": "False",
        "ANSIBLE_SSH_ARGS": "-C -o ControlMaster=auto -o ControlPersist=60s",
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(scratch / "stock-cp"),
        "ANSIBLE_GATHERING": "implicit",
        "ANSIBLE_CACHE_PLUGIN": "memory",
    }


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, str]:
    started = time.monotonic()
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(argv, cwd=cwd, env=full_env, capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return elapsed, proc.stdout


def _apply(root: Path, site: str, env: dict[str, str] | None = None) -> tuple[float, int, dict[str, float]]:
    """Wall seconds, total changed tasks over hosts and phases, seconds per phase."""
    argv = [str(BIN / "orchestrator"), "apply", site, "--yes", "--format", "json"]
    seconds, out = _run(argv, root, env)
    summary: dict[str, Any] = json.loads(out)
    ran = [p for p in summary["phases"] if p["status"] == "ok"]
    changed = sum(c["changed"] for p in ran for c in p["hosts"].values())
    return seconds, changed, {p["name"]: float(p["seconds"]) for p in ran}


class Cluster:
    def __init__(self, root: Path, nodes: int) -> None:
        self.root, self.nodes = root, nodes
        self.name = f"ba{nodes}x{os.getpid() % 100000}"

    def up(self) -> float:
        orch = str(BIN / "orchestrator")
        seconds, _ = _run([orch, "sim", "up", "--nodes", str(self.nodes), "--name", self.name], self.root)
        return seconds

    def down(self) -> None:
        subprocess.run(
            [str(BIN / "orchestrator"), "sim", "down", "--name", self.name],
            cwd=self.root,
            capture_output=True,
            check=False,
        )


def _noop(cluster: Cluster, label: str, env: dict[str, str] | None = None) -> float:
    s, n, phases = _apply(cluster.root, cluster.name, env)
    if n:
        raise SystemExit(f"the re-apply on {cluster.nodes} server(s) changed {n} tasks: not idempotent")
    print(f"  {label}: {s:.1f} s, 0 changed  {_fmt(phases)}", flush=True)
    return s


def _measure(cluster: Cluster, runs: int, stock: dict[str, str] | None = None) -> dict[str, Any]:
    """First apply, then `runs` no-op applies; with `stock`, each followed by one with stock settings."""
    up_s = cluster.up()
    print(f"sim up --nodes {cluster.nodes}: {up_s:.0f} s", flush=True)
    first_s, first_changed, first_phases = _apply(cluster.root, cluster.name)
    print(f"  first apply: {first_s:.1f} s, {first_changed} changed  {_fmt(first_phases)}", flush=True)
    noops: list[float] = []
    stocks: list[float] = []
    for _ in range(runs):
        noops.append(_noop(cluster, "no-op apply"))
        if stock is not None:
            stocks.append(_noop(cluster, "no-op apply, stock Ansible settings", stock))
    out = {"first": first_s, "noop": statistics.median(noops), "noop_min": min(noops)}
    if stocks:
        out["stock"] = statistics.median(stocks)
    return out


def _fmt(phases: dict[str, float]) -> str:
    return "(" + ", ".join(f"{k} {v:.0f}" for k, v in phases.items()) + ")"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--servers", type=int, default=8, help="the larger cluster (compared with one server)")
    ap.add_argument("--runs", type=int, default=2, help="no-op applies per cluster (the median is reported)")
    ap.add_argument("--keep", action="store_true", help="leave the clusters up")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-apply-") as tmp:
        clusters = [Cluster(Path(tmp), 1), Cluster(Path(tmp), args.servers)]
        try:
            one = _measure(clusters[0], args.runs)
            many = _measure(clusters[1], args.runs, stock_env(Path(tmp)))
        finally:
            if not args.keep:
                for c in clusters:
                    c.down()
    n = args.servers
    noop_first = one["noop"] / one["first"]
    scale = many["noop"] / one["noop"]
    print(f"\n{'host-layer apply (s)':<28}{'1 server':>10}{f'{n} servers':>12}")
    for label, key in (
        ("first apply", "first"),
        ("no-op apply (median)", "noop"),
        ("no-op (fastest)", "noop_min"),
    ):
        print(f"{label:<28}{one[key]:>10.1f}{many[key]:>12.1f}")
    print("ratios (what we track)")
    print(f"  no-op / first apply, 1 server  {noop_first:6.2f}   goal <= {GOAL_NOOP_FIRST}")
    print(f"  no-op / first apply, {n} servers {many['noop'] / many['first']:6.2f}")
    print(f"  no-op {n} servers / 1 server    {scale:6.2f}   goal <= {GOAL_SCALE}")
    print(f"  no-op {n} servers, stock / tuned {many['stock'] / many['noop']:6.2f}   goal >= {GOAL_STOCK}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
