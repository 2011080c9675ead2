"""ansible-runner events -> per-host counts, failures and the phase status.

The event streams are written by hand in the shape ansible-runner emits (event, event_data.host/task/res,
playbook_on_stats with Ansible's recap dicts); the expected numbers are counted by hand from them.
"""

from __future__ import annotations

from typing import Any

from orchestrator.runner.events import DONE_STAT, PhaseTracker
from orchestrator.runner.messages import failure_message
from orchestrator.runner.model import Failure, PhaseStatus


def ev(kind: str, **data: Any) -> dict[str, Any]:
    return {"event": kind, "event_data": data, "stdout": ""}


def stats(done: list[str], **per_key: dict[str, int]) -> dict[str, Any]:
    data: dict[str, Any] = {
        k: {} for k in ("ok", "changed", "dark", "failures", "skipped", "rescued", "ignored")
    }
    data.update(per_key)
    data["artifact_data"] = {DONE_STAT: done} if done else {}
    return ev("playbook_on_stats", **data)


def feed(tracker: PhaseTracker, events: list[dict[str, Any]]) -> PhaseTracker:
    for e in events:
        assert tracker.handle(e) is True  # every event is kept in the artifacts
    return tracker


def test_recap_counts_win_over_a_rescued_failure() -> None:
    """runner_on_failed also fires for a failure a rescue handles; the recap says rescued, not failed."""
    t = feed(
        PhaseTracker("host"),
        [
            ev("playbook_on_task_start", task="probe"),
            ev("runner_on_start", host="a", task="probe"),
            ev("runner_on_failed", host="a", task="probe", res={"msg": "boom"}),
            ev("playbook_on_task_start", task="fallback"),
            ev("runner_on_ok", host="a", task="fallback", res={"changed": True}),
            stats(["a"], ok={"a": 2}, changed={"a": 1}, rescued={"a": 1}),
        ],
    )
    r = t.result(canceled=False, rc=0, seconds=1.0)
    assert r.status is PhaseStatus.OK
    assert r.failures == []
    a = r.hosts["a"].as_dict()
    assert (a["ok"], a["changed"], a["failed"], a["rescued"]) == (2, 1, 0, 1)


def test_failed_and_unreachable_hosts_name_task_and_message() -> None:
    t = feed(
        PhaseTracker("preflight"),
        [
            ev("playbook_on_play_start", name="Preflight"),
            ev("playbook_on_task_start", task="Gathering Facts"),
            ev(
                "runner_on_unreachable", host="b", task="Gathering Facts", res={"msg": "ssh: connect refused"}
            ),
            ev("runner_on_ok", host="a", task="Gathering Facts", res={}),
            ev("runner_on_ok", host="c", task="Gathering Facts", res={}),
            ev("playbook_on_task_start", task="disk"),
            ev("runner_on_failed", host="a", task="disk", res={"msg": "only 3 GiB free", "rc": 1}),
            ev("runner_on_skipped", host="c", task="disk", res={}),
            stats(["c"], ok={"a": 1, "c": 2}, dark={"b": 1}, failures={"a": 1}, skipped={"c": 1}),
        ],
    )
    r = t.result(canceled=False, rc=2, seconds=3.0)
    assert r.status is PhaseStatus.FAILED
    assert r.failed_hosts == {"a"} and r.unreachable_hosts == {"b"}
    assert r.failures == [
        Failure("preflight", "b", "Gathering Facts", "ssh: connect refused", unreachable=True),
        Failure("preflight", "a", "disk", "only 3 GiB free\nrc 1"),
    ]
    assert r.hosts["c"].as_dict() == {
        "ok": 2,
        "changed": 0,
        "failed": 0,
        "unreachable": 0,
        "skipped": 1,
        "rescued": 0,
        "ignored": 0,
        "seconds": 0.0,
    }
    assert t.tasks_seen == 2 and t.play == "Preflight"


def test_ignored_errors_are_not_failures_live() -> None:
    t = feed(
        PhaseTracker("host"),
        [ev("runner_on_failed", host="a", task="optional", ignore_errors=True, res={"msg": "no"})],
    )
    live = t.hosts["a"]
    assert (live.counts.failed, live.counts.ignored, live.counts.ok, live.state) == (0, 1, 1, "ok")


def test_a_host_the_playbook_stopped_early_is_unfinished() -> None:
    """any_errors_fatal: b failed, a was never failed but did not reach phase_done."""
    t = feed(
        PhaseTracker("network"),
        [
            ev("runner_on_ok", host="a", task="t1", res={}),
            ev("runner_on_failed", host="b", task="t1", res={"msg": "link down"}),
            stats([], ok={"a": 1}, failures={"b": 1}),
        ],
    )
    r = t.result(canceled=False, rc=2, seconds=1.0)
    assert r.status is PhaseStatus.STOPPED
    assert r.unfinished == ("a",)


def test_no_recap_means_the_playbook_could_not_run() -> None:
    t = PhaseTracker("drivers")
    t.handle(
        {"event": "verbose", "event_data": {}, "stdout": "ERROR! the playbook: x.yml could not be found"}
    )
    r = t.result(canceled=False, rc=1, seconds=0.1)
    assert r.status is PhaseStatus.ERROR
    assert r.failures == [
        Failure("drivers", "", "ansible-playbook", "ERROR! the playbook: x.yml could not be found")
    ]


def test_canceled_job_is_interrupted_and_every_host_unfinished() -> None:
    t = feed(PhaseTracker("host"), [ev("runner_on_ok", host="a", task="t", res={})])
    r = t.result(canceled=True, rc=-15, seconds=0.5)
    assert r.status is PhaseStatus.INTERRUPTED
    assert r.unfinished == ("a",)


def test_warnings_a_role_hands_over_reach_the_phase_result() -> None:
    """A role that skips a setting (host_tuning on a server without cpufreq) says so with set_stats
    orchestrator_warnings; the phase result carries the lines, in the order the hosts gave them."""
    end = stats(["a2-01", "a2-02"], ok={"a2-01": 3, "a2-02": 3})
    end["event_data"]["artifact_data"]["orchestrator_warnings"] = ["a2-02: no cpufreq", "a2-01: no cpufreq"]
    t = feed(PhaseTracker("host"), [ev("runner_on_ok", host="a2-01", task="t", res={}), end])
    r = t.result(canceled=False, rc=0, seconds=0.1)
    assert r.status is PhaseStatus.OK
    assert r.warnings == ["a2-02: no cpufreq", "a2-01: no cpufreq"]
    assert r.as_dict()["warnings"] == ["a2-02: no cpufreq", "a2-01: no cpufreq"]


def test_seconds_per_host_span_its_first_and_last_result() -> None:
    t = feed(
        PhaseTracker("host"),
        [
            ev(
                "runner_on_ok",
                host="a",
                task="t1",
                res={},
                start="2026-01-01T00:00:00.000000",
                end="2026-01-01T00:00:01.500000",
            ),
            ev(
                "runner_on_ok",
                host="a",
                task="t2",
                res={},
                start="2026-01-01T00:00:02.000000",
                end="2026-01-01T00:00:04.250000",
            ),
            stats(["a"], ok={"a": 2}),
        ],
    )
    assert t.result(canceled=False, rc=0, seconds=5).hosts["a"].seconds == 4.25


def test_failure_message_keeps_msg_stderr_tail_and_failed_items() -> None:
    res = {
        "msg": "non-zero return code",
        "rc": 3,
        "stderr": "\n".join(f"line {i}" for i in range(10)),
        "results": [{"item": "x", "failed": False}, {"item": "y", "failed": True, "msg": "bad y"}],
    }
    assert failure_message(res) == (
        "non-zero return code\nstderr: line 5\nline 6\nline 7\nline 8\nline 9\nitem y: bad y"
    )
    assert failure_message(None) == "no result (the task failed before it returned one)"
    assert len(failure_message({"msg": "x" * 5000})) == 2000
