"""Validate + render a generated site of 8-64 Atlas 800T A2 servers; report times and the ratios we track.

Run:  .venv/bin/python benchmarks/bench_validate_render.py [--runs 7] [--sizes 8,16,32,64] [--strict]

Absolute times depend on the machine; the ratios (64-server time over 8-server time, the share of each stage)
are what to compare between runs. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from orchestrator.pipeline import ValidationResult, validate_text
from orchestrator.render import render_texts
from orchestrator.render.writer import write_atomic
from orchestrator.spec.version import SPEC_VERSION

T = TypeVar("T")
RACK = 8  # servers per rack; a site has n // RACK racks
GOAL_S = 1.0  # validate + render + write of the 64-server site
MODEL = "DeepSeek-R1-W8A8"
# Per rack: (servers, tp, dp) of each DeepSeek-R1-W8A8 replica, all with expert parallelism.
# The first is the vllm-ascend two-node A2 recipe (DP4 x TP4, second node --headless).
RACK_REPLICAS = ((2, 4, 4), (2, 8, 2), (4, 4, 8))
DRIVER = (
    "Ascend-hdk-910b-npu-driver_25.5.1_linux-aarch64.run",
    "90dbac2b52c361da24e1f46f890dd08a491a9c7394cc5933fdff3f7db9188078",
)
FIRMWARE = (
    "Ascend-hdk-910b-npu-firmware_7.8.0.6.201.run",
    "e8ddcac6a1356191b50e0cec2fefb65c3c4853e079dafcbd10049950ef9b4ed9",
)


def make_site(n_servers: int = 64) -> dict[str, Any]:
    """A valid site spec (plain data) with n_servers 8-NPU 910B3 servers, a multiple of 8.

    64 servers: 8 racks x 8 servers; 8 two-node DP4 x TP4 replicas, 8 two-node DP2 x TP8 replicas and
    8 four-node DP8 x TP4 replicas of DeepSeek-R1-W8A8 (24 replicas, 3 rollout groups), one HCCN /16.
    """
    if n_servers < RACK or n_servers % RACK:
        raise ValueError(f"n_servers must be a positive multiple of {RACK}, got {n_servers}")
    servers: list[dict[str, Any]] = []
    replicas: list[dict[str, Any]] = []
    for rack in range(n_servers // RACK):
        names = [f"a2-r{rack}-{i:02d}" for i in range(RACK)]
        for i, name in enumerate(names):
            servers.append(
                {
                    "name": name,
                    "address": f"10.20.{rack}.{11 + i}",
                    "profile": "atlas-800t-a2",
                    "roles": ["npu"],
                    "labels": {"rack": f"r{rack}", "pod": f"p{rack // 4}"},
                }
            )
        at = 0
        for kind, (size, tp, dp) in enumerate(RACK_REPLICAS):
            rep: dict[str, Any] = {"name": f"r{rack}-{kind}", "servers": names[at : at + size]}
            if kind:
                rep["parallelism"] = {"tp": tp, "dp": dp, "ep": True}
                rep["group"] = f"{size}node-tp{tp}"
            replicas.append(rep)
            at += size
    servers[0]["roles"] = ["npu", "build"]
    servers[1]["roles"] = ["npu", "monitoring"]
    servers[2]["roles"] = ["npu", "gateway"]
    n_rep = len(replicas)
    return {
        "spec_version": SPEC_VERSION,
        "site": f"bench-{n_servers}",
        "ssh": {"user": "deploy", "key_file": "~/.ssh/bench_ed25519", "become": True},
        "profiles": {"atlas-800t-a2": {"chip": "910B3", "cards": 8}},
        "servers": servers,
        "os": {"distro": "ubuntu", "version": "22.04"},  # monitoring (on) needs a Debian-family OS
        "software": {
            "driver": {"version": "25.5.1", "path": f"/srv/ascend/{DRIVER[0]}", "sha256": DRIVER[1]},
            "firmware": {
                "version": "7.8.0.6.201",
                "path": f"/srv/ascend/{FIRMWARE[0]}",
                "sha256": FIRMWARE[1],
            },
            "vllm_ascend": {"version": "v0.23.0"},
        },
        "network": {
            "hccn": {
                "plan": "single_subnet",
                "subnets": [{"cidr": "10.100.0.0/16", "gateway": "10.100.0.1"}],
                "first_host": 10,
            }
        },
        "model": {"name": MODEL, "weights_path": f"/data/models/{MODEL}", "served_name": "deepseek-r1"},
        "serving": {
            "api_key": "env:VLLM_API_KEY",
            "parallelism": {"tp": RACK_REPLICAS[0][1], "dp": RACK_REPLICAS[0][2], "ep": True},
            "max_model_len": 16384,
            "max_num_seqs": 8,
            "max_num_batched_tokens": 4096,
            "gpu_memory_utilization": 0.92,
            "hccl": {"buffsize_mb": 256, "intra_pcie_enable": True, "intra_roce_enable": False},
            "replicas": replicas,
        },
        "rollout": {"canary": 1, "batch_size": "25%", "min_available": n_rep // 2},
        "gateway": {"enabled": True},
    }


def site_text(n_servers: int = 64) -> str:
    return yaml.safe_dump(make_site(n_servers), sort_keys=False)


def _timed(fn: Callable[..., T], *args: Any) -> tuple[float, T]:
    start = time.perf_counter()
    value = fn(*args)
    return time.perf_counter() - start, value


def measure(n_servers: int, runs: int) -> dict[str, list[float]]:
    """Seconds per stage over `runs` runs (after one warm-up): validate, render (texts), write (files)."""
    text = site_text(n_servers)
    times: dict[str, list[float]] = {"validate": [], "render": [], "write": [], "total": []}
    with tempfile.TemporaryDirectory(prefix="bench-render-") as tmp:
        for run in range(runs + 1):
            gc.collect()  # start every run from the same heap, so a collection lands in no particular stage
            t_val, result = _timed(validate_text, text)
            _check(result, n_servers)
            t_ren, texts = _timed(render_texts, result)
            t_wri, _ = _timed(write_atomic, Path(tmp), texts)
            if run:  # the first run warms caches (catalog files, pydantic validators)
                for key, value in zip(times, (t_val, t_ren, t_wri, t_val + t_ren + t_wri), strict=True):
                    times[key].append(value)
    return times


def _check(result: ValidationResult, n_servers: int) -> None:
    if not result.ok:
        raise SystemExit(
            f"generated {n_servers}-server site is invalid: {[f.message for f in result.errors]}"
        )


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=7, help="timed runs per size (after one warm-up)")
    parser.add_argument("--sizes", default="8,16,32,64", help="server counts, multiples of 8")
    parser.add_argument("--strict", action="store_true", help="exit 1 when the 64-server site is OVER")
    args = parser.parse_args(argv)
    sizes = sorted({int(s) for s in args.sizes.split(",")} | {8, 64})
    results = {n: measure(n, max(1, args.runs)) for n in sizes}
    med = {n: {k: statistics.median(v) for k, v in r.items()} for n, r in results.items()}

    print(f"validate + render + write, median of {max(1, args.runs)} runs (ms)")
    print("servers  replicas  validate    render     write     total  min total  ms/server")
    for n in sizes:
        m = med[n]
        reps = len(make_site(n)["serving"]["replicas"])
        print(
            f"{n:7d}  {reps:8d}  {_ms(m['validate'])}  {_ms(m['render'])}  {_ms(m['write'])}  "
            f"{_ms(m['total'])}   {_ms(min(results[n]['total']))}   {m['total'] * 1000 / n:8.2f}"
        )
    big, small = med[64], med[8]
    scaling = big["total"] / small["total"]
    print()
    print("ratios (what we track)")
    print(
        f"  total 64 / total 8 servers     {scaling:6.2f}   (8.00 = linear; below 8 = fixed costs amortised)"
    )
    best = min(results[64]["total"]) / min(results[8]["total"])
    print(f"  same, fastest runs             {best:6.2f}   (less sensitive to a busy machine)")
    for stage in ("validate", "render", "write"):
        print(f"  {stage:<8} 64 / 8 servers      {big[stage] / small[stage]:6.2f}")
    stages = sum(big[s] for s in ("validate", "render", "write"))
    for stage in ("validate", "render", "write"):
        print(f"  {stage:<8} share (64 servers)  {big[stage] / stages:6.1%}")
    print(f"  render / validate (64)         {big['render'] / big['validate']:6.2f}")
    verdict = "PASS" if big["total"] < GOAL_S else "OVER"
    print()
    print(f"{verdict}: 64 servers in {big['total']:.3f} s median (goal < {GOAL_S:.1f} s)")
    return 1 if args.strict and verdict == "OVER" else 0


if __name__ == "__main__":
    sys.exit(main())
