"""Run history, the site lock and status on one lean simulated cluster (one Atlas 800T A2 server, real SSH):

- while an apply runs, a second apply is refused at once (exit 75) naming the first's run id;
- SIGINT in the middle of a phase: exit 130, the run recorded as interrupted with the resume command
  (printed too), the lock released; running that command converges;
- `orchestrator history` lists both runs (not the refused one), `orchestrator show` prints one;
- `orchestrator status` reads the last run of each phase from the history and every replica's live state
  over SSH and HTTP (nothing served here: no replica is healthy, no release record, exit 3).
"""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from orchestrator.cli import exits
from tests.integration.sim.sim_helpers import BIN, ENV, Sim, module_cluster, run

pytestmark = pytest.mark.integration

PHASES = "preflight,drivers"
STATE: dict[str, Any] = {}  # what the first test learned, for the later ones


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from module_cluster(tmp_path_factory, "it-hi-", "--nodes", "1", "--no-image-base")


def history(sim: Sim) -> list[dict[str, Any]]:
    out = sim.cli("history", sim.name, "--format", "json")
    runs: list[dict[str, Any]] = json.loads(out.stdout)
    return runs


def wait_running_row(sim: Sim, timeout_s: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        running = [r for r in history(sim) if r["result"] == "running"]
        if running:
            return running[0]
        time.sleep(0.5)
    pytest.fail("no running apply in the history")


def test_concurrent_apply_refused_then_interrupted_run_recorded_and_resumed(cluster: Sim) -> None:
    first = subprocess.Popen(
        [str(BIN / "orchestrator"), "apply", cluster.name, "--phases", PHASES, "--yes"],
        cwd=cluster.root,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert first.stdout is not None
    seen: list[str] = []
    try:
        for line in first.stdout:  # plain lines (not a terminal): wait until the drivers phase runs
            seen.append(line)
            if line.startswith("drivers") and " task " in line:
                break
        running = wait_running_row(cluster)
        second = cluster.cli("apply", cluster.name, "--phases", "preflight", "--yes", check=False)
        assert second.returncode == exits.LOCKED == 75, second.stdout + second.stderr
        text = " ".join(second.stderr.split())
        assert f"locked by apply run {running['run_id']} (pid {first.pid}" in text, text
        assert "Fix: wait for it to end" in text
        assert first.poll() is None, "the first apply ended before the second was refused"
        first.send_signal(signal.SIGINT)
        rest, err = first.communicate(timeout=180)
    finally:
        if first.poll() is None:
            first.kill()
    out = "".join(seen) + rest
    assert first.returncode == exits.INTERRUPTED, out + err
    resume = f"orchestrator apply {cluster.name} --phases drivers"
    assert f"Resume with: {resume}" in out, out[-3000:]
    lock_dir = cluster.root / ".orchestrator" / "locks"
    assert not list(lock_dir.glob("*.holder.json"))  # released

    runs = history(cluster)
    assert [r["run_id"] for r in runs] == [running["run_id"]]  # the refused apply is no run
    rec = runs[0]
    assert (rec["kind"], rec["result"], rec["exit_code"], rec["resume"]) == (
        "apply",
        "interrupted",
        130,
        resume,
    )
    assert [(p["name"], p["status"]) for p in rec["phases"]] == [
        ("preflight", "ok"),
        ("drivers", "interrupted"),
    ]
    assert rec["host_stats"]["preflight"]["a2-01"]["failed"] == 0
    assert rec["artifacts"].endswith(f"/runs/{cluster.name}/{rec['run_id']}")

    again = cluster.cli(*shlex.split(resume)[1:], "--yes", "--format", "json", check=False)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert json.loads(again.stdout)["phases"][0]["status"] == "ok"
    STATE.update(interrupted=rec["run_id"], resumed=json.loads(again.stdout)["run_id"])


def test_history_lists_the_runs_and_show_prints_one(cluster: Sim) -> None:
    assert STATE, "needs the first test"
    runs = history(cluster)
    assert [(r["run_id"], r["result"]) for r in runs] == [
        (STATE["resumed"], "ok"),
        (STATE["interrupted"], "interrupted"),
    ]
    assert runs[0]["spec_sha256"] == runs[1]["spec_sha256"] and len(runs[0]["spec_sha256"]) == 64
    table = cluster.cli("history", cluster.name).stdout  # 80 columns: run ids whole, phases wrapped
    assert STATE["resumed"] in table and STATE["interrupted"] in table
    wide = run(
        [str(BIN / "orchestrator"), "history", cluster.name], cluster.root, env={**ENV, "COLUMNS": "140"}
    )
    assert "preflight ok, drivers interrupted" in wide.stdout
    show = cluster.cli("show", STATE["interrupted"][:22]).stdout
    assert f"run {STATE['interrupted']}: apply of site {cluster.name}" in show
    assert "result:   interrupted (exit 130)" in show
    assert f"Resume with: orchestrator apply {cluster.name} --phases drivers" in show
    assert "a2-01" in show


def test_status_reads_history_and_the_live_fleet(cluster: Sim) -> None:
    assert STATE, "needs the first test"
    proc = cluster.cli("status", cluster.name, "--format", "json", check=False)
    assert proc.returncode == exits.HOSTS_FAILED, proc.stdout + proc.stderr  # nothing is served here
    doc = json.loads(proc.stdout)
    phases = {p["phase"]: p for p in doc["phases"]}
    assert (phases["drivers"]["run_id"], phases["drivers"]["status"]) == (STATE["resumed"], "ok")
    assert (phases["preflight"]["run_id"], phases["preflight"]["status"]) == (STATE["interrupted"], "ok")
    assert phases["serve"]["run_id"] is None
    assert doc["replicas"] and doc["unreachable"] == {} and doc["failed"] == {}
    for rep in doc["replicas"]:
        assert rep["healthy"] is False and rep["release"] is None and rep["requests_running"] is None
        assert set(rep["releases"].values()) == {None}  # read over SSH: no record on a server never served
    table = cluster.cli("status", cluster.name, check=False).stdout
    assert "last run per phase" in table and "never run" in table
