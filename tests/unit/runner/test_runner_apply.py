"""The runner against real ansible-playbook runs: two inventory hosts on the local connection, tiny phase
playbooks written here, the project's own phase_done.yml and the rendered ansible.cfg text.

Expected counts are worked out by hand from the playbooks below (no gather_facts, so every task is one
result per host)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.render.ansible_cfg import ansible_cfg_text
from orchestrator.runner import job as job_module
from orchestrator.runner.apply import ApplyRequest, PhaseChoice, apply
from orchestrator.runner.cancel import Cancel, GracefulStop
from orchestrator.runner.events import PhaseTracker
from orchestrator.runner.job import JobSpec, run_job
from orchestrator.runner.model import PhaseResult, PhaseStatus, RunResult
from orchestrator.runner.project import Content
from tests.helpers import PATIENCE_S, ROOT

SECRET = "s3cr3t-token-that-must-not-be-recorded"

PREFLIGHT = """\
- name: Test preflight
  hosts: all
  gather_facts: false
  tasks:
    - name: Mark
      ansible.builtin.command: "true"
      changed_when: true
    - name: Refuse h2
      ansible.builtin.fail:
        msg: h2 has no room on /data
      when: inventory_hostname == 'h2'
- name: Done
  ansible.builtin.import_playbook: phase_done.yml
  vars:
    phase_done_hosts: all
"""

DRIVERS = """\
- name: Test drivers
  hosts: all
  gather_facts: false
  tasks:
    - name: Look
      ansible.builtin.debug:
        msg: hello
- name: Done
  ansible.builtin.import_playbook: phase_done.yml
  vars:
    phase_done_hosts: all
"""

SLEEPER = """\
- name: Test host
  hosts: h1
  gather_facts: false
  tasks:
    - name: Sleep
      ansible.builtin.shell: "echo $$ > {pidfile}; exec sleep {seconds}"
      changed_when: false
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Content, Path]:
    monkeypatch.setenv("ORCHESTRATOR_TEST_SECRET", SECRET)
    root = tmp_path / "checkout"
    (root / "playbooks").mkdir(parents=True)
    shutil.copy(ROOT / "playbooks" / "phase_done.yml", root / "playbooks" / "phase_done.yml")
    (root / "playbooks" / "preflight.yml").write_text(PREFLIGHT)
    (root / "playbooks" / "drivers.yml").write_text(DRIVERS)
    # the task outlasts the grace of test_cancel_kills_the_playbook_and_reports_interrupted
    (root / "playbooks" / "host.yml").write_text(
        SLEEPER.format(pidfile=tmp_path / "sleep.pid", seconds=int(2 * PATIENCE_S))
    )
    inv = tmp_path / "inventory"
    inv.mkdir()
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    hosts = {"all": {"children": {"npu": {"hosts": {"h1": local, "h2": local}}}}}
    (inv / "hosts.yml").write_text(yaml.safe_dump(hosts))
    (inv / "ansible.cfg").write_text(ansible_cfg_text("t", 2, "# test\n"))
    return Content(root), inv


def job(content: Content, inv: Path, phase: str, tmp: Path, limit: tuple[str, ...]) -> JobSpec:
    return JobSpec(phase, content, inv, tmp / "facts", tmp / f"job-{phase}", limit)


def test_job_counts_match_the_playbook_and_the_secret_is_not_recorded(
    project: tuple[Content, Path], tmp_path: Path
) -> None:
    content, inv = project
    seen: list[str] = []
    result = run_job(
        job(content, inv, "preflight", tmp_path, ("h1", "h2")),
        on_event=lambda t, e: seen.append(str(e.get("event"))),
        cancel=Cancel(),
    )
    assert result.status is PhaseStatus.FAILED
    h1, h2 = result.hosts["h1"].as_dict(), result.hosts["h2"].as_dict()
    # h1: Mark (changed), Refuse h2 (skipped), phase_done set_stats (ok)
    assert (h1["ok"], h1["changed"], h1["failed"], h1["skipped"]) == (2, 1, 0, 1)
    # h2: Mark (changed), Refuse h2 (failed); never reaches phase_done
    assert (h2["ok"], h2["changed"], h2["failed"], h2["skipped"]) == (1, 1, 1, 0)
    assert [(f.host, f.task, f.message) for f in result.failures] == [
        ("h2", "Refuse h2", "h2 has no room on /data")
    ]
    assert "playbook_on_stats" in seen
    private = Path(result.artifacts)
    assert (private / "artifacts" / "preflight" / "job_events").is_dir()
    for path in private.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path


def test_a_private_data_dir_is_never_reused(project: tuple[Content, Path], tmp_path: Path) -> None:
    content, inv = project
    spec = job(content, inv, "drivers", tmp_path, ("h1",))
    spec.private_dir.mkdir()
    with pytest.raises(FileExistsError):
        run_job(spec, on_event=lambda t, e: None, cancel=Cancel())


class Recorder:
    def __init__(self) -> None:
        self.started: list[tuple[str, tuple[str, ...]]] = []
        self.finished: list[PhaseResult] = []

    def phase_started(self, phase: str, hosts: Sequence[str]) -> None:
        self.started.append((phase, tuple(hosts)))

    def progress(self, tracker: PhaseTracker, event: Mapping[str, Any]) -> None:
        pass

    def phase_finished(self, result: PhaseResult) -> None:
        self.finished.append(result)


def request(content: Content, inv: Path, root: Path, names: Sequence[str], **kw: Any) -> ApplyRequest:
    choices = [PhaseChoice(n, ("h1", "h2"), True, content.implemented(n)) for n in names]
    return ApplyRequest(
        site="t",
        site_arg="lab",
        project_root=root,
        inventory_dir=inv,
        content=content,
        phases=choices,
        hosts=kw.get("hosts"),
        limit_arg=kw.get("limit_arg"),
        check=False,
        explicit_phases=False,
    )


def test_a_host_that_failed_is_left_out_of_later_phases(
    project: tuple[Content, Path], tmp_path: Path
) -> None:
    content, inv = project
    rec = Recorder()
    run = apply(request(content, inv, tmp_path, ["preflight", "drivers", "image"]), rec, Cancel(), "run1")
    assert rec.started == [("preflight", ("h1", "h2")), ("drivers", ("h1",))]
    _, drv, img = run.phases
    assert drv.status is PhaseStatus.OK and set(drv.hosts) == {"h1"}
    assert drv.excluded == {"h2": "failed in preflight"}
    assert img.status is PhaseStatus.NOT_IMPLEMENTED and "no playbooks/image.yml" in img.note
    assert run.result is RunResult.FAILED
    assert run.resume == "orchestrator apply lab --from-phase preflight --limit h2"
    record = (tmp_path / ".orchestrator" / "runs" / "t" / "run1" / "run.json").read_text()
    assert '"result": "failed"' in record and '"h2": "failed in preflight"' in record


class WatchedStop(GracefulStop):
    """GracefulStop that remembers whether its grace ran out (ansible-runner was told to kill)."""

    made: list[WatchedStop] = []

    def __init__(self, cancel: Cancel, grace_s: float) -> None:
        super().__init__(cancel, grace_s)
        self.ran_out = False
        WatchedStop.made.append(self)

    def __call__(self) -> bool:
        kill = super().__call__()
        self.ran_out = self.ran_out or kill
        return kill


def test_cancel_kills_the_playbook_and_reports_interrupted(
    project: tuple[Content, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGINT alone stops the playbook: the grace after which ansible-runner would kill it never runs out
    (the task sleeps longer than the grace: a playbook that ignored SIGINT would still be running). Checked
    as such rather than as "within 12 s" of a 15 s grace: on a busy machine (CI runs the unit tests at nice
    19 beside the integration tests) stopping may take longer than that, so the grace is long here."""
    content, inv = project
    cancel = Cancel()
    pidfile = tmp_path / "sleep.pid"
    WatchedStop.made.clear()
    monkeypatch.setattr(job_module, "GracefulStop", lambda c, _grace_s: WatchedStop(c, PATIENCE_S))

    def cancel_once_sleeping() -> None:
        deadline = time.monotonic() + PATIENCE_S
        while time.monotonic() < deadline:
            if pidfile.exists() and pidfile.read_text().strip():
                break
            time.sleep(0.1)
        cancel.request()

    threading.Thread(target=cancel_once_sleeping, daemon=True).start()
    run = apply(request(content, inv, tmp_path, ["host", "drivers"]), Recorder(), cancel, "run2")
    # the local connection runs the task in a session of its own (on a real host it is remote): end it
    with contextlib.suppress(ProcessLookupError, OSError, ValueError):
        os.kill(int(pidfile.read_text()), signal.SIGKILL)
    (stop,) = WatchedStop.made  # the host phase's job; the drivers phase did not run
    assert stop.deadline is not None and not stop.ran_out  # SIGINT was sent, and no kill was needed
    host, drivers = run.phases
    assert host.status is PhaseStatus.INTERRUPTED and drivers.status is PhaseStatus.NOT_RUN
    assert run.result is RunResult.INTERRUPTED
    assert run.resume == "orchestrator apply lab --from-phase host"
    # ansible-playbook and its workers are gone (their command lines name this test's checkout)
    assert playbook_processes(tmp_path) == []


def playbook_processes(under: Path) -> list[str]:
    out = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "ansible-playbook" in text and str(under) in text:
            out.append(text)
    return out
