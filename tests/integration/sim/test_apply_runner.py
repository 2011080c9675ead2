"""`orchestrator apply` on the simulated cluster (two Atlas 800T A2 servers over real SSH): the JSON summary,
an unreachable server (exit 4, left out of later phases, the printed resume command finishes it), Ctrl-C
(exit 130, the run recorded, the next apply converges), plain ansible-playbook of site.yml in check mode."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration.sim.sim_helpers import BIN, ENV, Sim

pytestmark = pytest.mark.integration

HOSTS = ["a2-01", "a2-02"]
RUNNER_PHASES = "preflight,drivers"
"""The runner's behaviour, not the roles' (test_container_runtime.py and the role tests cover those)."""


def apply_json(sim: Sim, *args: str) -> tuple[int, dict[str, Any]]:
    proc = sim.cli("apply", sim.name, "--yes", "--format", "json", *args, check=False)
    assert proc.stdout.count("\n") == 1, proc.stdout + proc.stderr  # one object, nothing else
    return proc.returncode, json.loads(proc.stdout)


def test_preflight_phase_json_summary(cluster: Sim) -> None:
    rc, out = apply_json(cluster, "--phases", "preflight")
    assert rc == 0, out
    assert out["result"] == "ok" and out["failures"] == [] and out["resume"] is None
    assert [p["name"] for p in out["phases"]] == ["preflight"]
    hosts = out["phases"][0]["hosts"]
    assert sorted(hosts) == HOSTS
    for counts in hosts.values():
        assert counts["failed"] == 0 and counts["unreachable"] == 0 and counts["ok"] >= 1
    run_dir = cluster.root / ".orchestrator" / "runs" / cluster.name / out["run_id"]
    assert json.loads((run_dir / "run.json").read_text())["run_id"] == out["run_id"]
    assert list((run_dir / "01-preflight" / "artifacts" / "preflight" / "job_events").iterdir())


def test_unreachable_server_exit_4_then_the_resume_command_finishes_it(cluster: Sim) -> None:
    cluster.sim("fault", "unreachable", "a2-02")
    try:
        rc, out = apply_json(cluster, "--phases", "preflight,drivers")
    finally:
        cluster.sim("fault", "back", "a2-02")
    assert rc == 4, out
    assert out["result"] == "unreachable"
    pre, drv = out["phases"]
    assert pre["hosts"]["a2-02"]["unreachable"] == 1 and pre["hosts"]["a2-01"]["failed"] == 0
    assert sorted(drv["hosts"]) == ["a2-01"]
    assert drv["excluded"] == {"a2-02": "unreachable in preflight"}
    assert [(f["host"], f["phase"], f["unreachable"]) for f in out["failures"]] == [
        ("a2-02", "preflight", True)
    ]
    assert "127.0.0." in out["failures"][0]["message"]
    assert out["resume"] == f"orchestrator apply {cluster.name} --phases preflight,drivers --limit a2-02"

    argv = shlex.split(out["resume"])[1:]
    again = cluster.cli(*argv, "--yes")
    assert "run " in again.stdout and ": ok (exit 0)" in again.stdout


def test_ctrl_c_exits_130_and_records_the_run(cluster: Sim) -> None:
    proc = subprocess.Popen(
        [str(BIN / "orchestrator"), "apply", cluster.name, "--phases", RUNNER_PHASES, "--yes"],
        cwd=cluster.root,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:  # plain lines (not a terminal); interrupt once the first phase runs
        seen.append(line)
        if "task 1:" in line:
            proc.send_signal(signal.SIGINT)
            break
    rest, err = proc.communicate(timeout=120)
    text = "".join(seen) + rest
    assert proc.returncode == 130, text + err
    assert "interrupted: stopping the running phase" in err
    assert f"Resume with: orchestrator apply {cluster.name} --phases {RUNNER_PHASES}" in text
    runs = sorted((cluster.root / ".orchestrator" / "runs" / cluster.name).iterdir())
    assert json.loads((runs[-1] / "run.json").read_text())["result"] == "interrupted"

    rc, out = apply_json(cluster, "--phases", RUNNER_PHASES)
    assert rc == 0, out
    assert [(p["name"], p["status"]) for p in out["phases"]] == [("preflight", "ok"), ("drivers", "ok")]


def test_plain_ansible_playbook_runs_site_yml(cluster: Sim) -> None:
    inv = Path("inventories") / cluster.name
    proc = subprocess.run(
        # the host layer's phases: this cluster ran preflight and drivers only, and the image, weights and
        # serve phases take the images, weights and facts of the earlier phases as given (their own tests
        # run them through plain ansible-playbook too)
        [
            *(str(BIN / "ansible-playbook"), "-i", str(inv / "hosts.yml"), str(_site_yml())),
            *("--check", "--diff", "--tags", "preflight,drivers,host,network"),
        ],
        cwd=cluster.root,
        env={
            **ENV,
            "ANSIBLE_CONFIG": str(inv / "ansible.cfg"),
            # the cluster's inventory lives outside the checkout: its ansible.cfg's ../../roles and
            # ../../collections do not reach the project's
            "ANSIBLE_ROLES_PATH": str(_checkout() / "roles"),
            "ANSIBLE_COLLECTIONS_PATH": str(_checkout() / "collections"),
        },
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for host in HOSTS:
        assert f"{host}" in proc.stdout and "failed=0" in proc.stdout


def _checkout() -> Path:
    return Path(__file__).resolve().parents[3]


def _site_yml() -> Path:
    return _checkout() / "playbooks" / "site.yml"
