"""The benchmark's generated 64-server site is valid and renders one host_vars file per server (no timing)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from orchestrator.pipeline import ValidationResult, validate_text
from orchestrator.render import render, render_texts

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_validate_render.py"


def _load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_validate_render", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


bench = _load_bench()


@pytest.fixture(scope="module")
def site64() -> ValidationResult:
    return validate_text(bench.site_text(64))


def test_64_server_site_is_valid(site64: ValidationResult) -> None:
    assert [f.message for f in site64.errors] == []
    assert site64.ok and site64.spec is not None and site64.plan is not None
    assert len(site64.spec.servers) == 64
    plan = site64.plan
    assert len(plan.replicas) == 24
    two_node_dp4 = [r for r in plan.replicas if len(r.members) == 2 and (r.tp, r.dp) == (4, 4)]
    assert len(two_node_dp4) == 8
    assert all(r.mode == "dp" and r.ep for r in plan.replicas)
    assert {m.server for r in plan.replicas for m in r.members} == {s.name for s in site64.spec.servers}
    addresses = [d.address for h in plan.hosts for d in h.hccn]
    assert len(addresses) == len(set(addresses)) == 64 * 8
    assert all(a.startswith("10.100.") for a in addresses)


def test_64_server_site_renders_64_host_vars(site64: ValidationResult, tmp_path: Path) -> None:
    texts = render_texts(site64)
    host_vars = sorted(k for k in texts if k.startswith("host_vars/"))
    assert len(host_vars) == 64
    written = render(site64, tmp_path)
    assert len(list((tmp_path / "host_vars").iterdir())) == 64
    assert {str(p.relative_to(tmp_path)) for p in written} == set(texts)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".render-")]


@pytest.mark.parametrize("n", [8, 16, 32])
def test_smaller_sites_scale_the_same_layout(n: int) -> None:
    result = validate_text(bench.site_text(n))
    assert result.ok, [f.message for f in result.errors]
    assert result.plan is not None and len(result.plan.replicas) == 3 * n // 8


def test_make_site_rejects_sizes_that_are_not_whole_racks() -> None:
    with pytest.raises(ValueError, match="multiple of 8"):
        bench.make_site(12)
