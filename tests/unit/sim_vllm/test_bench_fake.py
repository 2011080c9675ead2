"""`orchestrator bench` against the fake vLLM server run as a local process (no Docker): the stream's timing
matches the delays the fake is told to use (FAKE_VLLM_SLOW_MS before the first token, FAKE_VLLM_TOKEN_MS
between tokens: external facts, not bench's own numbers), the API key is sent and never printed, failures
and an unreachable endpoint give their exit codes, and --plot writes a PNG matplotlib can read back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import PATIENCE_S

from .conftest import Proc, Sandbox, free_port

ROOT = Path(__file__).resolve().parents[3]
KEY = "bench-secret-4f7c"
SITE = ROOT / "inventories" / "a2-single-distill" / "site.yaml"
NAME = "deepseek-r1-distill-32b"  # the plan's served name for that site (what bench asks for)
SLOW_MS = 150
TOKEN_MS = 20


def _serve(box: Sandbox, ckpt: Path, **env: str) -> Proc:
    args = ["serve", str(ckpt), "--served-model-name", NAME, "--max-model-len", "4096"]
    return box.start(args, mask="0", VLLM_API_KEY=KEY, **env)


@pytest.fixture(scope="module")
def slow_server(module_sandbox: Sandbox, checkpoints: dict[str, Path]) -> Iterator[Proc]:
    proc = _serve(
        module_sandbox, checkpoints["a"], FAKE_VLLM_SLOW_MS=str(SLOW_MS), FAKE_VLLM_TOKEN_MS=str(TOKEN_MS)
    )
    proc.wait_healthy()
    yield proc
    proc.terminate()


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """The example spec alone in a folder: bench must not need a rendered inventory with --endpoint."""
    target = tmp_path / "site" / "site.yaml"
    target.parent.mkdir()
    shutil.copy(SITE, target)
    return target


def bench(site: Path, *args: str, key: str | None = KEY) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "VLLM_API_KEY"}
    if key is not None:
        env["VLLM_API_KEY"] = key  # the example specs say serving.api_key: env:VLLM_API_KEY
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "bench", str(site), *args],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
    )


def _json(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def cpu_wait_ms() -> float | None:
    """Wall time (ms) in which tasks waited for a CPU so far (Linux PSI, /proc/pressure/cpu "some"), times
    the number of CPUs (PSI averages its per-CPU figures); None without PSI."""
    try:
        some = Path("/proc/pressure/cpu").read_text(encoding="ascii").splitlines()[0]
    except (OSError, IndexError):
        return None
    return int(some.rsplit("total=", 1)[1]) / 1000 * (os.cpu_count() or 1)


def test_two_levels_measure_the_fakes_delays(slow_server: Proc, site: Path, tmp_path: Path) -> None:
    """The stream's timing against the fake's delays. The lower bounds hold however the machine schedules
    (the fake sleeps at least that long). The upper bounds hold when bench and the fake get a CPU when they
    need one; on a shared machine (CI runs the unit tests at nice 19 beside the integration tests) they
    allow for the time tasks waited for a CPU during the run (`stalled`: no interval can have been
    stretched, or two token arrivals squeezed together, by more than that), so on an idle machine they are
    as tight as ever."""
    png = tmp_path / "bench.png"
    url = f"http://127.0.0.1:{slow_server.port}"
    waited_before = cpu_wait_ms()
    proc = bench(
        site,
        "--endpoint",
        url,
        "--concurrency",
        "1,3",
        "--duration-s",
        "2.5",
        "--max-tokens",
        "12",
        "--prompt-tokens",
        "32",
        "--format",
        "json",
        "--plot",
        str(png),
    )
    waited_after = cpu_wait_ms()
    stalled = 0.0 if waited_before is None or waited_after is None else waited_after - waited_before
    assert proc.returncode == 0, proc.stderr
    doc = _json(proc)
    assert (doc["endpoint"], doc["via"], doc["model"], doc["exit_code"]) == (
        url + "/v1",
        "--endpoint",
        NAME,
        0,
    )
    assert [lv["concurrency"] for lv in doc["levels"]] == [1, 3]
    for lv in doc["levels"]:
        assert lv["ok"] > 0 and lv["failed"] == 0 and lv["failures"] == {}
        assert lv["request_throughput_rps"] > 0 and lv["output_throughput_tps"] > 0
        for metric in ("ttft_ms", "itl_ms", "latency_ms"):
            d = lv[metric]
            assert d["p50"] <= d["p90"] <= d["p99"], (metric, d)
        # TTFT: the fake sleeps SLOW_MS (+ 5 ms + 2e-5 s per prompt token) before the first token
        assert SLOW_MS <= lv["ttft_ms"]["p50"] < SLOW_MS + 100 + stalled, stalled
        # ITL: the fake sleeps TOKEN_MS before every later token
        assert TOKEN_MS * 0.9 - stalled <= lv["itl_ms"]["p50"] < TOKEN_MS + 15 + stalled, stalled
        # a request is the first token plus the later ones
        assert lv["latency_ms"]["p50"] >= lv["ttft_ms"]["p50"]
        assert [c["verdict"] for c in lv["slo"]] == ["no SLO"] * 5  # the example sets none
    # Three workers back to back keep more than 1.5 requests in flight on average, one worker at most one
    # (Little's law: requests per second x mean latency = the mean number in flight). Counted this way, not
    # as "more requests per second than one worker": CPU starvation lowers the fake's throughput, not the
    # overlap of bench's requests (at any moment at least two of the three are waiting for an answer).
    in_flight = [lv["request_throughput_rps"] * lv["latency_ms"]["mean"] / 1000 for lv in doc["levels"]]
    assert in_flight[0] <= 1 + 1e-9 and in_flight[1] > 1.5, in_flight
    assert KEY not in proc.stdout + proc.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image

    assert matplotlib.image.imread(str(png)).shape[:2] == (500, 800)  # figsize 8x5 at 100 dpi


def test_table_says_no_slo_set_and_an_slo_is_judged(slow_server: Proc, site: Path) -> None:
    url = f"http://127.0.0.1:{slow_server.port}"
    proc = bench(site, "--endpoint", url, "--concurrency", "2", "--requests", "4", "--max-tokens", "4")
    assert proc.returncode == 0, proc.stderr
    assert "no SLO set" in proc.stdout and "concurrency 2" in proc.stdout
    assert KEY not in proc.stdout + proc.stderr
    # a TTFT SLO below the fake's fixed delay is missed: exit 3
    text = site.read_text(encoding="utf-8") + f"bench:\n  slo:\n    ttft_p99_ms: {SLOW_MS / 2}\n"
    site.write_text(text, encoding="utf-8")
    missed = bench(site, "--endpoint", url, "--concurrency", "1", "--requests", "3", "--format", "json")
    assert missed.returncode == 3, missed.stderr
    (check,) = [c for c in _json(missed)["levels"][0]["slo"] if c["metric"] == "ttft_p99_ms"]
    assert (check["verdict"], check["limit"]) == ("fail", SLOW_MS / 2)


def test_wrong_key_fails_every_request(slow_server: Proc, site: Path) -> None:
    proc = bench(
        site,
        "--endpoint",
        f"http://127.0.0.1:{slow_server.port}",
        "--concurrency",
        "1",
        "--requests",
        "2",
        "--format",
        "json",
        key="not-the-key",
    )
    assert proc.returncode == 3, proc.stderr
    (level,) = _json(proc)["levels"]
    assert (level["ok"], level["failed"], level["failures"]) == (0, 2, {"HTTP 401": 2})
    assert "not-the-key" not in proc.stdout + proc.stderr


def test_never_healthy_server_fails_requests(
    sandbox: Sandbox, checkpoints: dict[str, Path], site: Path
) -> None:
    proc = _serve(sandbox, checkpoints["b"], FAKE_VLLM_NEVER_HEALTHY="1")
    proc.wait_port()
    out = bench(
        site,
        "--endpoint",
        f"http://127.0.0.1:{proc.port}",
        "--concurrency",
        "2",
        "--requests",
        "4",
        "--format",
        "json",
    )
    assert out.returncode == 3, out.stderr
    (level,) = _json(out)["levels"]
    assert level["ok"] == 0 and level["failed"] == 4
    assert set(level["failures"]) == {"HTTP 503"}


def test_unreachable_endpoint_exits_4(site: Path) -> None:
    out = bench(site, "--endpoint", f"http://127.0.0.1:{free_port()}", "--requests", "1")
    assert out.returncode == 4
    assert "cannot reach the endpoint" in out.stderr


def test_usage_and_missing_key(site: Path) -> None:
    both = bench(site, "--duration-s", "1", "--requests", "1")
    assert both.returncode == 64
    bad = bench(site, "--concurrency", "1,x", "--requests", "1")
    assert bad.returncode == 64
    noplace = bench(site, "--requests", "1", "--plot", str(site.parent / "no" / "such" / "b.png"))
    assert noplace.returncode == 64
    assert "does not exist" in noplace.stderr
    nokey = bench(site, "--endpoint", "http://127.0.0.1:9", "--requests", "1", key=None)
    assert nokey.returncode == 2
    assert "VLLM_API_KEY is not set" in nokey.stderr


def test_without_endpoint_the_first_replica_of_the_inventory(slow_server: Proc, site: Path) -> None:
    """No gateway: the first replica of the rendered inventory (group_vars/all.yml, as status reads it)."""
    (site.parent / "group_vars").mkdir()
    (site.parent / "group_vars" / "all.yml").write_text(
        "orchestrator_site: a2-single-distill\ngateway_enabled: false\nrollout_replicas:\n"
        f"- {{name: r0, head: s1, worker_url: 'http://127.0.0.1:{slow_server.port}'}}\n"
        "- {name: r1, head: s2, worker_url: 'http://127.0.0.1:9'}\n",
        encoding="utf-8",
    )
    proc = bench(site, "--concurrency", "1", "--requests", "2", "--max-tokens", "3", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = _json(proc)
    assert (doc["via"], doc["endpoint"]) == ("replica r0", f"http://127.0.0.1:{slow_server.port}/v1")
    assert doc["levels"][0]["ok"] == 2


def test_no_inventory_and_no_endpoint_exits_66(site: Path) -> None:
    out = bench(site, "--requests", "1")
    assert out.returncode == 66
    assert "orchestrator render" in out.stderr
