"""bench's spec section (defaults, rules as whole findings), where it sends its load (the committed example
inventories: gateway vs first replica), and its percentiles against the standard library's own."""

from __future__ import annotations

import statistics
from typing import Any

import pytest

from orchestrator.bench.client import LevelRun, Sample
from orchestrator.bench.slo import all_checks
from orchestrator.bench.stats import dist_ms, level_stats
from orchestrator.bench.target import TargetError, find_target, read_secret
from orchestrator.spec.bench import BenchSlo
from tests.helpers import EXAMPLES, load_example, validate_data
from tests.spec_text import Described, described


def _findings(data: dict[str, Any]) -> list[Described]:
    return [described(f) for f in validate_data(data).findings]


def test_defaults_set_no_slo() -> None:
    spec = validate_data(load_example("a2-single-distill")).spec
    assert spec is not None
    assert (spec.bench.concurrency, spec.bench.duration_s) == ([1, 4, 16], 30)
    assert spec.bench.slo == BenchSlo()  # every SLO unset: the seed's 80 ms / 450 QPS are not defaults


def test_duplicate_level_and_itl_slo_without_tokens() -> None:
    data = load_example("a2-single-distill")
    data["bench"] = {"concurrency": [1, 4, 4], "max_tokens": 1, "slo": {"itl_p99_ms": 50}}
    assert _findings(data) == [
        (
            "bench.concurrency[2]",
            "concurrency level 4 is listed twice",
            "list each level once, e.g. [1, 4, 16]",
            "bench",
            [],
        ),
        (
            "bench.slo.itl_p99_ms",
            "an inter-token latency needs at least two streamed tokens, and bench.max_tokens is 1",
            "raise bench.max_tokens (default 128) or remove bench.slo.itl_p99_ms",
            "bench",
            [],
        ),
    ]


def test_slo_must_be_positive() -> None:
    data = load_example("a2-single-distill")
    data["bench"] = {"slo": {"ttft_p99_ms": 0}}
    (finding,) = validate_data(data).errors
    assert finding.path == ("bench", "slo", "ttft_p99_ms")


def test_target_is_the_gateway_when_enabled_else_the_first_replica(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_TEST_KEY", "k1")
    gw = find_target(EXAMPLES / "a2-fleet-gateway", "m", "env:BENCH_TEST_KEY", None)
    assert (gw.base_url, gw.via, gw.api_key) == ("http://10.50.0.5:8080/v1", "gateway", "k1")
    assert "k1" not in repr(gw)
    one = find_target(EXAMPLES / "a2-single-distill", "m", None, None)
    assert (one.base_url, one.via) == ("http://10.20.0.11:8000/v1", "replica r0")
    assert (
        find_target(EXAMPLES / "a2-single-distill", "m", None, "http://h:1/v1/").base_url == "http://h:1/v1"
    )


def test_key_references(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    key = tmp_path / "key"
    key.write_text("s3cret\n")
    assert read_secret(f"file:{key}", tmp_path / "elsewhere") == "s3cret"
    assert read_secret("file:key", tmp_path) == "s3cret"  # relative: from the spec's folder
    monkeypatch.delenv("BENCH_NO_SUCH", raising=False)
    with pytest.raises(TargetError, match=r"BENCH_NO_SUCH is not set on the controller\. Fix: make it"):
        read_secret("env:BENCH_NO_SUCH", tmp_path)
    monkeypatch.setenv("BENCH_NO_SUCH", "  ")
    with pytest.raises(TargetError, match=r"BENCH_NO_SUCH is set but empty"):
        read_secret("env:BENCH_NO_SUCH", tmp_path)
    with pytest.raises(TargetError, match="cannot be read"):
        read_secret(f"file:{tmp_path / 'missing'}", tmp_path)


def test_percentiles_match_statistics_inclusive() -> None:
    values = [0.011, 0.002, 0.050, 0.031, 0.007, 0.019, 0.100, 0.003]
    d = dist_ms(values)
    assert d is not None
    cuts = statistics.quantiles([v * 1000 for v in values], n=100, method="inclusive")
    assert (d.p50, d.p90, d.p99) == pytest.approx((cuts[49], cuts[89], cuts[98]))


def test_level_stats_and_verdicts() -> None:
    ok = Sample(True, ttft_s=0.1, itl_s=[0.01, 0.02], latency_s=0.2, output_tokens=3)
    run = LevelRun(2, 2.0, [ok, ok, Sample(False, "HTTP 503"), Sample(False, "HTTP 503")])
    stats = level_stats(run)
    assert (stats.ok, stats.failed, stats.failures) == (2, 2, {"HTTP 503": 2})
    assert (stats.request_throughput_rps, stats.output_throughput_tps) == (1.0, 3.0)
    low = level_stats(LevelRun(1, 1.0, [ok]))
    slo = BenchSlo(ttft_p99_ms=50, itl_p99_ms=25, min_request_throughput_rps=0.5)
    (c1, c2) = all_checks([low, stats], slo)
    assert [c.verdict for c in c1] == ["fail", "pass", "no SLO", "no SLO", "no SLO"]  # rps: top level only
    assert [c.verdict for c in c2] == ["fail", "pass", "no SLO", "pass", "no SLO"]
