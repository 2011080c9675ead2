"""What apply prints: the live table on a terminal, plain progress lines otherwise, and the final summary
(per-phase table, failures with host/task/message, the resume command)."""

from __future__ import annotations

import io

from rich.console import Console

from orchestrator.cli.apply_view import LiveProgress, PlainProgress, print_outcome
from orchestrator.runner.events import PhaseTracker
from orchestrator.runner.model import Failure, HostStats, PhaseResult, PhaseStatus, Run


def console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=120, color_system=None, force_terminal=False), buf


def test_plain_progress_prints_tasks_and_host_results_that_matter() -> None:
    con, buf = console()
    view = PlainProgress(con)
    tracker = PhaseTracker("host")
    events = [
        {"event": "playbook_on_task_start", "event_data": {"task": "daemon.json"}},
        {
            "event": "runner_on_ok",
            "event_data": {"host": "a", "task": "daemon.json", "res": {"changed": True}},
        },
        {
            "event": "runner_on_ok",
            "event_data": {"host": "b", "task": "daemon.json", "res": {"changed": False}},
        },
        {
            "event": "runner_on_failed",
            "event_data": {"host": "c", "task": "daemon.json", "res": {"msg": "disk\nfull"}},
        },
        {
            "event": "runner_on_unreachable",
            "event_data": {"host": "d", "task": "daemon.json", "res": {"msg": "ssh"}},
        },
    ]
    view.phase_started("host", ["a", "b", "c", "d"])
    for e in events:
        tracker.handle(e)
        view.progress(tracker, e)
    assert buf.getvalue().splitlines() == [
        "== host: 4 host(s): a, b, c, d",
        "host       task 1: daemon.json",
        "host       a: changed daemon.json",
        "host       c: failed daemon.json: disk",
        "host       d: UNREACHABLE at daemon.json: ssh",
    ]


def test_a_starting_replica_prints_its_phase_on_each_retry_of_its_gate() -> None:
    """ansible-runner's runner_retry event of a vllm_gate call that returned pending (progress_s); a retry of
    any other task prints nothing."""
    con, buf = console()
    view = PlainProgress(con)
    tracker = PhaseTracker("serve")
    pending = {
        "pending": True,
        "label": "new replica r0",
        "container": "vllm-r0",
        "waited_s": 30.2,
        "progress": "capturing ACL graphs (mixed prefill-decode, PIECEWISE): 4/11",
        "attempts": 1,
    }
    for res in (pending, {"attempts": 1, "msg": "not yet"}):
        event = {"event": "runner_retry", "event_data": {"host": "a2-01", "task": "Gates", "res": res}}
        tracker.handle(event)
        view.progress(tracker, event)
    assert buf.getvalue().splitlines() == [
        "serve      new replica r0: vllm-r0 starting for 30 s: capturing ACL graphs (mixed prefill-decode, "
        "PIECEWISE): 4/11"
    ]


def test_live_table_shows_tasks_done_current_task_and_host_states() -> None:
    tracker = PhaseTracker("host")
    for e in (
        {"event": "playbook_on_task_start", "event_data": {"task": "packages"}},
        {"event": "runner_on_ok", "event_data": {"host": "a", "task": "packages", "res": {"changed": True}}},
        {"event": "playbook_on_task_start", "event_data": {"task": "daemon.json"}},
        {"event": "runner_on_start", "event_data": {"host": "a", "task": "daemon.json"}},
    ):
        tracker.handle(e)
    con, buf = console()
    con.print(LiveProgress.render(tracker))
    lines = [ln.rstrip() for ln in buf.getvalue().splitlines()]
    assert lines[0] == "host: 1 task(s) done, 2 seen so far; now: daemon.json"
    assert lines[2].split() == ["a", "running", "daemon.json", "1", "1", "0", "0", "0"]


def test_summary_has_the_numbers_the_failure_and_the_resume_command() -> None:
    phase = PhaseResult(
        "preflight",
        PhaseStatus.FAILED,
        {"a2-01": HostStats(ok=7, changed=1, skipped=2, seconds=3.25), "a2-02": HostStats(ok=3, failed=1)},
        [Failure("preflight", "a2-02", "disk", "only 3 GiB free on /data")],
        seconds=4.0,
    )
    run = Run(
        "r1", "lab", False, [phase], resume="orchestrator apply lab --from-phase preflight --limit a2-02"
    )
    con, buf = console()
    print_outcome(con, run, 3)
    text = buf.getvalue()
    rows = [ln.replace("│", " ").split() for ln in text.splitlines()]
    assert ["a2-01", "7", "1", "0", "0", "2", "3.2"] in rows
    assert ["a2-02", "3", "0", "1", "0", "0", "0.0"] in rows
    assert 'FAILED: a2-02 in preflight, task "disk":\n    only 3 GiB free on /data' in text
    assert "Resume with: orchestrator apply lab --from-phase preflight --limit a2-02" in text
    assert "run r1: failed (exit 3)" in text


def test_summary_shows_what_a_role_skipped_with_a_warning() -> None:
    phase = PhaseResult("host", PhaseStatus.OK, {"a2-01": HostStats(ok=9)}, seconds=2.0)
    phase.warnings = ["a2-01: no /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor, so the governor"]
    con, buf = console()
    print_outcome(con, Run("r2", "lab", False, [phase]), 0)
    text = " ".join(buf.getvalue().split())
    assert "WARNING: host: a2-01: no /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor" in text
