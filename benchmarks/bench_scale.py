"""Validate + render a generated site of 1,000-20,000 servers, each in a fresh process: time and peak RSS.

Run:  .venv/bin/python benchmarks/bench_scale.py [--sizes 1000,5000,20000]

Each size runs in its own subprocess (`--one N`), so the peak RSS is that size's alone. The site is
bench_validate_render.make_site(n) with management addresses spread over 10.20.0.0/14 and one HCCN /11,
so it stays valid at 20,000 servers (160,000 NPU-NIC addresses). What to read: time per server should
stay flat from 1k to 20k (linear); RSS grows with the site (the parsed spec, the plan and the rendered
texts are all in memory at once). Goal: validate + render of 1,024 servers in under 1 s (best of three runs:
the shared machine is noisy). See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_validate_render", HERE / "bench_validate_render.py")
    if spec is None or spec.loader is None:
        raise ImportError("benchmarks/bench_validate_render.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


def make_large_site(n_servers: int) -> dict[str, Any]:
    """A valid site of n_servers (a multiple of 8) 8-NPU 910B3 servers; any size up to 64,000."""
    site = _bench().make_site(n_servers)
    for i, srv in enumerate(site["servers"]):
        srv["address"] = f"10.{20 + i // 64000}.{(i // 250) % 256}.{1 + i % 250}"
    site["network"]["hccn"]["subnets"] = [{"cidr": "10.128.0.0/11", "gateway": "10.128.0.1"}]
    return site


def large_site_text(n_servers: int) -> str:
    return yaml.safe_dump(make_large_site(n_servers), sort_keys=False)


def _one(n: int) -> None:
    from orchestrator.pipeline import validate_file
    from orchestrator.render import render_texts
    from orchestrator.render.writer import write_atomic

    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "site.yaml"
        spec.write_text(large_site_text(n), encoding="utf-8")
        size = spec.stat().st_size
        t0 = time.perf_counter()
        result = validate_file(spec)
        t1 = time.perf_counter()
        if not result.ok:
            raise SystemExit(f"generated {n}-server site is invalid: {result.errors[:3]}")
        texts = render_texts(result)
        t2 = time.perf_counter()
        write_atomic(Path(tmp) / "out", texts)
        t3 = time.perf_counter()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    total = t3 - t0
    print(
        f"{n:>8} {size / 2**20:>8.1f} {t1 - t0:>9.2f} {t2 - t1:>8.2f} {t3 - t2:>7.2f} {total:>7.2f}"
        f" {1000 * total / n:>10.2f} {rss:>7.0f}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,5000,20000")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        _one(args.one)
        return
    print(" servers  spec MB  validate   render   write   total  ms/server  RSS MB")
    for n in (int(s) for s in args.sizes.split(",")):
        subprocess.run([sys.executable, __file__, "--one", str(n)], check=True)


if __name__ == "__main__":
    main()
