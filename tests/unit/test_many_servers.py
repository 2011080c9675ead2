"""Large sites: output capped with a count of the rest, findings in file order, validate + render linear."""

from __future__ import annotations

import math
import re
import time
from pathlib import Path

from orchestrator.pipeline import validate_text
from orchestrator.spec.findings import Position, error, sort_findings
from tests.hostile import cli

# ------------------------------------------------------------------------------- many servers


MISSING_SECTIONS = 5  # profiles, os, software, model, serving


def _many_bad_servers(n: int) -> str:
    lines = ["spec_version: 1", "site: lab", "servers:"]
    lines += [f"  - {{name: s{i}, address: 10.0.{i // 250}.{i % 250 + 1}, ssh_port: 0}}" for i in range(n)]
    return "\n".join(lines) + "\n"


def test_output_is_capped_with_a_count_of_the_rest(tmp_path: Path) -> None:
    spec = tmp_path / "site.yaml"
    spec.write_text(_many_bad_servers(2000), encoding="utf-8")
    total = 2000 + MISSING_SECTIONS
    run = cli("validate", str(spec))
    assert run.code == 2 and "Traceback" not in run.stderr
    errors = re.findall(rf"^{re.escape(str(spec))}:(\d+):\d+: error: (\S+):", run.stderr, re.M)
    assert len(errors) == 50
    assert [int(line) for line, _ in errors] == sorted(int(line) for line, _ in errors)
    assert [p for _, p in errors[MISSING_SECTIONS:]] == [f"servers[{i}].ssh_port" for i in range(45)]
    rest = total - 50
    assert (
        f"... and {rest} more ({rest} error(s), 0 warning(s)); --max-findings 0 prints them all" in run.stderr
    )
    assert f"INVALID: {total} error(s), 0 warning(s)" in run.stderr
    everything = cli("validate", str(spec), "--max-findings", "0")
    assert len(re.findall(r": error: ", everything.stderr)) == total
    assert "more (" not in everything.stderr


def test_findings_sort_numerically_by_path_where_positions_tie() -> None:
    unplaced = [error(("servers", i, "ssh_port"), "bad") for i in (10, 9, 2, 100)]
    assert [f.path[1] for f in sort_findings(unplaced)] == [2, 9, 10, 100]
    same_line = [error(("servers", i), "bad").at(Position(3, 1)) for i in (10, 9)]
    assert [f.path[1] for f in sort_findings(same_line)] == [9, 10]


def test_validate_and_render_grow_linearly() -> None:
    """768 servers cost about 8x 96 servers (quadratic code would cost 64x); best of two runs each.

    The cost is the CPU time of this process, not the wall time: the machine is shared (CI runs the unit
    tests at nice 19 beside the integration tests), and time spent waiting for a CPU is not the code's cost
    but would stretch one size's wall time and not the other's."""
    from benchmarks.bench_scale import large_site_text
    from orchestrator.render import render_texts

    def cost(n: int) -> float:
        text = large_site_text(n)
        best = math.inf
        for _ in range(2):
            start = time.process_time()
            result = validate_text(text)
            assert result.ok, result.errors[:3]
            render_texts(result)
            best = min(best, time.process_time() - start)
        return best

    small, large = cost(96), cost(768)
    assert large / small < 20, f"96 servers {small:.2f} s, 768 servers {large:.2f} s of CPU"
