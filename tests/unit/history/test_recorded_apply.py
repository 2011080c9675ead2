"""run_and_report (apply, rollback) against a real ansible-playbook on the local connection: the run holds
the site's lock while it runs, SIGINT in the middle of a phase ends it with exit 130, the run is recorded
as interrupted with the resume command (also printed), the lock is released; a finished run is recorded
with its phases and per-host counts."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
import typer
import yaml

from orchestrator.cli.apply_cmd import run_and_report
from orchestrator.cli.common import Format
from orchestrator.cli.output import console
from orchestrator.history import db
from orchestrator.history.guard import LockHeld, take
from orchestrator.history.lock import holder_path, lock_path
from orchestrator.render.ansible_cfg import ansible_cfg_text
from orchestrator.runner.apply import ApplyRequest, PhaseChoice
from orchestrator.runner.project import Content
from tests.helpers import PATIENCE_S, ROOT

SLEEPER = """\
- name: Test host
  hosts: all
  gather_facts: false
  tasks:
    - name: Sleep
      ansible.builtin.shell: "echo $$ > {pidfile}; exec sleep 60"
      changed_when: false
- name: Done
  ansible.builtin.import_playbook: phase_done.yml
"""
QUICK = """\
- name: Test preflight
  hosts: all
  gather_facts: false
  tasks:
    - name: Mark
      ansible.builtin.command: "true"
      changed_when: true
- name: Done
  ansible.builtin.import_playbook: phase_done.yml
"""


def request(tmp_path: Path, phases: list[str]) -> ApplyRequest:
    checkout = tmp_path / "checkout"
    (checkout / "playbooks").mkdir(parents=True)
    shutil.copy(ROOT / "playbooks" / "phase_done.yml", checkout / "playbooks" / "phase_done.yml")
    (checkout / "playbooks" / "preflight.yml").write_text(QUICK)
    (checkout / "playbooks" / "host.yml").write_text(SLEEPER.format(pidfile=tmp_path / "sleep.pid"))
    inv = tmp_path / "inventory"
    inv.mkdir()
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    (inv / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"h1": local}}}))
    (inv / "ansible.cfg").write_text(ansible_cfg_text("t", 1, "# test\n"))
    return ApplyRequest(
        site="t",
        site_arg="lab",
        project_root=tmp_path,
        inventory_dir=inv,
        content=Content(checkout),
        phases=[PhaseChoice(n, ("h1",), True, True) for n in phases],
        hosts=None,
        limit_arg=None,
        check=False,
        explicit_phases=False,
    )


def test_sigint_mid_phase_is_recorded_with_the_resume_command_and_frees_the_lock(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    req = request(tmp_path, ["preflight", "host"])
    pidfile = tmp_path / "sleep.pid"
    seen: dict[str, object] = {}

    def interrupt_once_sleeping() -> None:
        deadline = time.monotonic() + PATIENCE_S
        while time.monotonic() < deadline:
            if pidfile.exists() and pidfile.read_text().strip():
                break
            time.sleep(0.1)
        with db.connect(tmp_path) as conn:
            seen["row"] = db.runs(conn, "t")[0]
        try:
            take(tmp_path, "t", "other", "apply", print).release()
        except LockHeld as exc:
            seen["held"] = exc.holder
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_sleeping, daemon=True).start()
    with pytest.raises(typer.Exit) as ended:
        run_and_report(req, Format.table, console(stderr=True))
    assert ended.value.exit_code == 130
    out = capsys.readouterr()
    assert "Resume with: orchestrator apply lab --from-phase host" in out.out
    assert "interrupted: stopping the running phase" in out.err
    row = seen["row"]
    assert isinstance(row, db.RunRecord) and row.result == "running"  # recorded while it ran
    assert [p["name"] for p in row.phases] == ["preflight"]  # each phase as it ended
    holder = seen["held"]
    assert holder is not None and getattr(holder, "run_id", None) == row.run_id
    assert not holder_path(lock_path(tmp_path, "t")).exists()
    with db.connect(tmp_path) as conn:
        rec = db.find(conn, row.run_id)
    assert (rec.kind, rec.result, rec.exit_code) == ("apply", "interrupted", 130)
    assert rec.resume == "orchestrator apply lab --from-phase host"
    assert [(p["name"], p["status"]) for p in rec.phases] == [("preflight", "ok"), ("host", "interrupted")]
    assert rec.artifacts == str(tmp_path / ".orchestrator" / "runs" / "t" / rec.run_id)
    take(tmp_path, "t", "after", "apply", print).release()  # free again


def test_a_finished_rollback_is_recorded_without_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    req = request(tmp_path, ["preflight"])
    with pytest.raises(typer.Exit) as ended:
        run_and_report(req, Format.json, console(stderr=True), resume=False, kind="rollback")
    assert ended.value.exit_code == 0
    with db.connect(tmp_path) as conn:
        (rec,) = db.runs(conn, "t")
    assert (rec.kind, rec.result, rec.exit_code, rec.resume) == ("rollback", "ok", 0, None)
    h1 = rec.host_stats["preflight"]["h1"]
    assert list(rec.host_stats) == ["preflight"] and list(rec.host_stats["preflight"]) == ["h1"]
    assert (h1["ok"], h1["changed"], h1["failed"]) == (2, 1, 0)  # Mark (changed) + phase_done's set_stats
    assert rec.pid == os.getpid() and rec.ended is not None
    assert capsys.readouterr().out.count("\n") == 1  # JSON: one object, nothing else
