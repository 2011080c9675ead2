"""The drift report: one state per host and phase, the totals, and the exit-code rule (0 in sync, 3 drift
or a failed check, drift winning over unreachable hosts, 4 unreachable only, 130 interrupted)."""

from __future__ import annotations

import pytest

from orchestrator.cli import exits
from orchestrator.drift import report as rep
from orchestrator.drift.report import CellState, build_report, cell_lines
from orchestrator.runner.model import Failure, HostStats, PhaseResult, PhaseStatus
from tests.unit.drift.drift_runs import DRIVER, FILE, SYSCTL, clean_run, drift_run, ok, unreachable_run

NETWORK = {"network": ["a2-01", "a2-02"]}


def states(report: rep.DriftReport) -> dict[tuple[str, str], str]:
    return {(c.host, c.phase): str(c.state) for c in report.cells}


def test_exit_codes_match_the_cli_codes() -> None:
    assert rep.EXIT_IN_SYNC == exits.OK
    assert rep.EXIT_INVALID_SPEC == exits.INVALID_SPEC
    assert rep.EXIT_DRIFT == exits.HOSTS_FAILED
    assert rep.EXIT_UNREACHABLE == exits.HOSTS_UNREACHABLE
    assert rep.EXIT_INTERRUPTED == exits.INTERRUPTED


def test_a_converged_fleet_is_in_sync_and_exits_0() -> None:
    report = build_report(clean_run())
    assert set(states(report).values()) == {"in_sync"}
    assert len(report.cells) == 4
    assert report.exit_code == 0
    assert report.verdict == "in_sync"
    assert report.totals == {"in_sync": 4, "drift": 0, "unreachable": 0, "failed": 0, "not_run": 0}


def test_drift_wins_over_unreachable_and_the_report_lists_both() -> None:
    report = build_report(drift_run(), hosts_by_phase=NETWORK)
    assert states(report) == {
        ("a2-01", "preflight"): "in_sync",
        ("a2-02", "preflight"): "in_sync",
        ("a2-03", "preflight"): "unreachable",
        ("a2-01", "drivers"): "drift",
        ("a2-02", "drivers"): "in_sync",
        ("a2-03", "drivers"): "not_run",
        ("a2-01", "host"): "in_sync",
        ("a2-02", "host"): "drift",
        ("a2-03", "host"): "not_run",
        ("a2-01", "network"): "not_run",
        ("a2-02", "network"): "not_run",
    }
    assert report.exit_code == 3
    assert report.drifted_hosts == ["a2-01", "a2-02"]
    assert report.unreachable_hosts == ["a2-03"]
    host = next(c for c in report.cells if c.host == "a2-02" and c.phase == "host")
    assert host.changes == (SYSCTL, FILE)
    assert host.change_count == 2
    assert cell_lines(host) == [
        "Set the kernel parameters [vm.swappiness]: vm.swappiness 60 -> 10",
        "Write the Docker daemon configuration: /etc/docker/daemon.json",
    ]
    drivers = next(c for c in report.cells if c.host == "a2-01" and c.phase == "drivers")
    assert drivers.changes == (DRIVER,)
    assert cell_lines(drivers) == [
        "Install the NPU driver: driver 24.1.0 -> 25.0.rc1 (takes effect after a reboot)"
    ]
    gone = next(c for c in report.cells if c.state is CellState.UNREACHABLE)
    assert "port 22" in gone.message
    left = next(c for c in report.cells if c.host == "a2-03" and c.phase == "host")
    assert left.message == "left out: unreachable in preflight"
    data = report.as_dict()
    assert data["exit_code"] == 3
    assert data["verdict"] == "drift"
    assert data["totals"] == {"in_sync": 4, "drift": 2, "unreachable": 1, "failed": 0, "not_run": 4}


def test_unreachable_hosts_without_drift_exit_4() -> None:
    report = build_report(unreachable_run())
    assert report.exit_code == 4
    assert report.verdict == "unreachable"
    assert report.unreachable_hosts == ["a2-02"]
    assert report.drifted_hosts == []


def test_changed_tasks_without_change_records_still_count_as_drift() -> None:
    run = clean_run()
    run.phases[1].hosts["a2-01"] = ok(changed=3)
    report = build_report(run)
    cell = next(c for c in report.cells if c.state is CellState.DRIFT)
    assert (cell.host, cell.phase, cell.change_count) == ("a2-01", "host", 3)
    assert cell_lines(cell) == ["3 task(s) would change (details in the run's artifacts)"]
    assert report.exit_code == 3


def test_a_failed_check_needs_a_person_exit_3() -> None:
    run = clean_run()
    run.phases[1] = PhaseResult(
        "host",
        PhaseStatus.FAILED,
        hosts={"a2-01": ok(), "a2-02": HostStats(ok=3, failed=1)},
        failures=[Failure("host", "a2-02", "Read the governor", "No such file")],
    )
    report = build_report(run)
    failed = [c for c in report.cells if c.state is CellState.FAILED]
    assert [(c.host, c.phase, c.message) for c in failed] == [
        ("a2-02", "host", "Read the governor: No such file")
    ]
    assert report.exit_code == 3
    assert report.verdict == "failed"


def test_a_phase_that_could_not_run_fails_its_hosts() -> None:
    run = clean_run()
    run.phases[1] = PhaseResult(
        "host", PhaseStatus.ERROR, failures=[Failure("host", "", "ansible-playbook", "syntax error")]
    )
    report = build_report(run, hosts_by_phase={"host": ["a2-01", "a2-02"]})
    assert [str(c.state) for c in report.cells if c.phase == "host"] == ["failed", "failed"]
    assert {c.message for c in report.cells if c.phase == "host"} == {"syntax error"}
    assert report.exit_code == 3


def test_a_stopped_playbook_fails_the_unfinished_hosts() -> None:
    run = clean_run()
    run.phases[1].status = PhaseStatus.STOPPED
    run.phases[1].unfinished = ("a2-02",)
    report = build_report(run)
    cell = next(c for c in report.cells if c.host == "a2-02" and c.phase == "host")
    assert cell.state is CellState.FAILED
    assert "stopped before this host finished" in cell.message


def test_an_interrupted_run_exits_130_even_with_drift() -> None:
    run = drift_run()
    run.interrupted = True
    run.phases[-1] = PhaseResult("network", PhaseStatus.INTERRUPTED, unfinished=("a2-01",))
    report = build_report(run)
    assert report.exit_code == 130
    assert next(c for c in report.cells if c.phase == "network").state is CellState.NOT_RUN


def test_only_check_mode_runs_make_a_drift_report() -> None:
    run = clean_run()
    run.check = False
    with pytest.raises(ValueError, match="check-mode run"):
        build_report(run)
