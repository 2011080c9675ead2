"""Recording runs (recorded_run) and reading them back through `orchestrator history` and `orchestrator
show`: phases as they end, the runner's result, a KeyboardInterrupt or a crash, no secret in the
database; table and JSON output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.cli import exits
from orchestrator.history import db
from orchestrator.history.record import recorded_run
from orchestrator.runner.model import Failure, HostStats, PhaseResult, PhaseStatus, Run
from tests.helpers import ROOT, run_cli

SECRET = "sk-this-key-must-not-be-recorded"


class Seen:
    def __init__(self) -> None:
        self.phases: list[str] = []

    def phase_started(self, phase: str, hosts: object) -> None:
        pass

    def progress(self, tracker: object, event: object) -> None:
        pass

    def phase_finished(self, result: PhaseResult) -> None:
        self.phases.append(result.name)


def a_run(run_id: str) -> Run:
    pre = PhaseResult("preflight", PhaseStatus.OK, {"a2-01": HostStats(ok=5), "a2-02": HostStats(ok=5)})
    pre.seconds = 4.04
    drv = PhaseResult(
        "drivers",
        PhaseStatus.INTERRUPTED,
        {"a2-01": HostStats(ok=2, changed=1), "a2-02": HostStats(ok=1, unreachable=1)},
        [Failure("drivers", "a2-02", "Gathering Facts", "ssh: connect to host", unreachable=True)],
        seconds=2.5,
    )
    run = Run(run_id, "lab", False, [pre, drv], interrupted=True, artifacts=f"/x/runs/lab/{run_id}")
    run.resume = "orchestrator apply lab --from-phase drivers"
    return run


def record_runs(root: Path) -> None:
    seen = Seen()
    with recorded_run(
        "apply", "lab", root, run_id="20261204T210000Z-aaaaaa", argv=["orchestrator", "apply", "lab"]
    ) as rec:
        observer = rec.observer(seen)
        run = a_run(rec.run_id)
        for p in run.phases:
            observer.phase_finished(p)
        with db.connect(root) as conn:  # recorded as each phase ends, before the run's end
            mid = db.find(conn, rec.run_id)
        assert (mid.result, [p["name"] for p in mid.phases]) == ("running", ["preflight", "drivers"])
        rec.finish_run(run, exits.INTERRUPTED)
    assert seen.phases == ["preflight", "drivers"]  # the display still sees every phase
    drift = recorded_run("drift", "lab", root, run_id="20261204T220000Z-bbbbbb", check=True, argv=[])
    with pytest.raises(KeyboardInterrupt), drift:
        raise KeyboardInterrupt
    with (
        pytest.raises(RuntimeError),
        recorded_run(
            "plan", "lab", root, run_id="20261204T230000Z-cccccc", argv=["orchestrator", "--api-key", SECRET]
        ),
    ):
        raise RuntimeError(f"boom {SECRET}")


def test_recorded_runs_read_back_as_json(tmp_path: Path) -> None:
    record_runs(tmp_path)
    out = run_cli("--root", str(tmp_path), "history", "lab", "--format", "json")
    assert out.returncode == 0, out.stderr
    runs = json.loads(out.stdout)
    assert [(r["run_id"], r["kind"], r["result"], r["exit_code"]) for r in runs] == [
        ("20261204T230000Z-cccccc", "plan", "error", 70),
        ("20261204T220000Z-bbbbbb", "drift", "interrupted", 130),
        ("20261204T210000Z-aaaaaa", "apply", "interrupted", 130),
    ]
    apply = runs[2]
    assert apply["phases"] == [
        {"name": "preflight", "status": "ok", "seconds": 4.0},
        {"name": "drivers", "status": "interrupted", "seconds": 2.5},
    ]
    assert apply["host_stats"]["drivers"]["a2-02"]["unreachable"] == 1
    assert apply["failures"][0]["task"] == "Gathering Facts"
    assert apply["resume"] == "orchestrator apply lab --from-phase drivers"
    assert apply["argv"] == ["orchestrator", "apply", "lab"] and apply["pid"] > 0 and apply["ended"]
    assert runs[0]["note"] == "ended by RuntimeError"
    assert runs[0]["argv"] == ["orchestrator", "--api-key", "<redacted>"]
    assert SECRET.encode() not in b"".join(p.read_bytes() for p in (tmp_path / ".orchestrator").iterdir())
    last = json.loads(
        run_cli("--root", str(tmp_path), "history", "lab", "--last", "1", "--format", "json").stdout
    )
    assert [r["run_id"] for r in last] == ["20261204T230000Z-cccccc"]


def test_history_table_and_show(tmp_path: Path) -> None:
    record_runs(tmp_path)
    table = run_cli("--root", str(tmp_path), "history", "lab", env={"COLUMNS": "120"})  # phases on one line
    assert table.returncode == 0, table.stderr
    for text in ("20261204T210000Z-aaaaaa", "apply", "interrupted", "preflight ok, drivers interrupted"):
        assert text in table.stdout
    show = run_cli("--root", str(tmp_path), "show", "20261204T21")
    assert show.returncode == 0, show.stderr
    lines = show.stdout
    assert "run 20261204T210000Z-aaaaaa: apply of site lab" in lines
    assert "result:   interrupted (exit 130)" in lines
    assert 'UNREACHABLE: a2-02 in drivers, task "Gathering Facts":' in lines
    assert "Resume with: orchestrator apply lab --from-phase drivers" in lines
    assert "artifacts: /x/runs/lab/20261204T210000Z-aaaaaa" in lines
    assert "drivers: per host" in lines
    as_json = json.loads(run_cli("--root", str(tmp_path), "show", "20261204T22", "--format", "json").stdout)
    assert (as_json["kind"], as_json["check_mode"]) == ("drift", True)


def test_show_unknown_or_ambiguous_runs_exit_66(tmp_path: Path) -> None:
    out = run_cli("--root", str(tmp_path), "show", "nope")
    assert out.returncode == exits.NO_SITE and "nothing is recorded" in out.stderr
    assert not db.db_path(tmp_path).exists()  # reading never creates the database
    record_runs(tmp_path)
    out = run_cli("--root", str(tmp_path), "show", "2026")
    assert out.returncode == exits.NO_SITE
    assert "matches several runs" in out.stderr and "Fix: give more of the run id" in out.stderr


def test_history_of_a_spec_path_uses_its_site_name(tmp_path: Path) -> None:
    spec = ROOT / "inventories" / "a2-pair-r1-w8a8" / "site.yaml"
    with recorded_run("plan", "a2-pair-r1-w8a8", tmp_path, run_id="r1", argv=[]) as rec:
        rec.finish(result="ok", exit_code=0)
    out = run_cli("--root", str(tmp_path), "history", str(spec), "--format", "json")
    assert [r["run_id"] for r in json.loads(out.stdout)] == ["r1"]
