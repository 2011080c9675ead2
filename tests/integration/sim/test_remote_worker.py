"""`orchestrator apply --worker`: phases run on an ansible-runner worker inside a simulated server
(`orchestrator sim worker`), streamed `transmit | ssh worker ansible-runner worker | process`
(orchestrator/runner/remote.py), on a copy of the one-server golden (every phase applied):

- a hand-edited sysctl file is repaired by the host phase run on the worker (its fact cache is the worker's);
- a second run on the worker and a local run of the same phases report the same per-host counts, both are
  in the history, and the remote run's artifacts hold the job's events and no environment of the caller;
- a worker that cannot be reached fails the phase with ssh's own words and apply's exit code, no traceback.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.cli import exits
from tests.integration.sim import goldens
from tests.integration.sim.serving_helpers import sh
from tests.integration.sim.sim_helpers import Sim

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group(goldens.group("s1"))]

SERVER = "a2-01"
PHASES = "host"
SYSCTL_FILE = "/etc/sysctl.d/90-ascend-orchestrator.conf"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from goldens.module_golden(tmp_path_factory, "s1")


@pytest.fixture(scope="module")
def worker(cluster: Sim) -> str:
    """The server made a worker; its address as --worker takes it."""
    out = cluster.sim("worker", SERVER).stdout
    found = re.search(r"--worker (root@127\.0\.0\.\d+)", out)
    assert found and "ansible-runner 2." in out, out
    return found[1]


def apply(cluster: Sim, *args: str) -> tuple[int, dict[str, Any]]:
    proc = cluster.cli(
        "apply", cluster.name, "--yes", "--phases", PHASES, "--format", "json", *args, check=False
    )
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout)


def counts(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per phase and host: ok, changed, failed, unreachable, skipped (not the seconds)."""
    keep = ("ok", "changed", "failed", "unreachable", "skipped")
    return {p["name"]: {h: {k: c[k] for k in keep} for h, c in p["hosts"].items()} for p in run["phases"]}


def test_the_worker_repairs_a_host_and_reports_what_a_local_run_reports(cluster: Sim, worker: str) -> None:
    _rc, want = sh(cluster, SERVER, f"sha256sum {SYSCTL_FILE}")
    sh(cluster, SERVER, f"sed -i 's/^vm.swappiness.*/vm.swappiness = 33/' {SYSCTL_FILE}")
    rc, repaired = apply(cluster, "--worker", worker)
    assert rc == exits.OK and repaired["result"] == "ok", json.dumps(repaired)[-3000:]
    assert counts(repaired)["host"][SERVER]["changed"] > 0
    assert sh(cluster, SERVER, f"sha256sum {SYSCTL_FILE}")[1] == want
    # the job ran there: its fact cache is the worker's, its private data dir is gone (worker --delete)
    code, facts = sh(cluster, SERVER, f"ls /root/.cache/ascend-orchestrator/facts/{cluster.name}")
    assert code == 0 and facts.strip(), facts

    rc, remote = apply(cluster, "--worker", worker)
    rc_local, local = apply(cluster)
    assert rc == rc_local == exits.OK
    assert counts(remote) == counts(local), (counts(remote), counts(local))
    assert all(c["changed"] == 0 for p in counts(remote).values() for c in p.values()), counts(remote)

    history = json.loads(cluster.cli("history", cluster.name, "--format", "json").stdout)
    runs = {r["run_id"]: r for r in history}
    for run in (repaired, remote, local):
        assert runs[run["run_id"]]["result"] == "ok", runs.get(run["run_id"])
    assert runs[remote["run_id"]]["argv"][-2:] == ["--worker", worker]
    job = Path(remote["artifacts"]) / "01-host" / "artifacts" / "host"
    assert len(list((job / "job_events").glob("*.json"))) > 10 and (job / "rc").read_text().strip() == "0"
    command = json.loads((job / "command").read_text())
    assert "PATH" not in command["env"] and command["env"]["ANSIBLE_CONFIG"] == "../inventory/ansible.cfg"


def test_an_unreachable_worker_fails_the_phase_with_sshs_words(cluster: Sim, worker: str) -> None:
    rc, run = apply(cluster, "--worker", "root@127.0.0.1:9")
    assert rc == exits.HOSTS_FAILED and run["result"] == "failed", run
    (failure,) = run["failures"]
    assert failure["phase"] == "host" and "worker root@127.0.0.1:9" in failure["message"]
    assert "Connection refused" in failure["message"], failure
    assert [p["status"] for p in run["phases"]] == ["error"]
    assert "--worker root@127.0.0.1:9" in run["resume"]
