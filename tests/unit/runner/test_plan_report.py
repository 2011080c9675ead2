"""`orchestrator plan`'s engine against real ansible-playbook check runs: three tiny phase playbooks on two
local-connection hosts, run by runner.apply with check=True (--check --diff), then plan_report.

The playbooks make, by hand: preflight would change a file on h1 only; drivers fails in check mode on both
hosts (h1: after preflight reported changes on it, so "unknown until preflight is applied"; h2: nothing
earlier would change it, a real failure); host leaves both out. A phase with changes does not stop the run.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from orchestrator.cli import exits
from orchestrator.cli.plan_cmd import exit_code
from orchestrator.cli.plan_view import print_plan_report
from orchestrator.render.ansible_cfg import ansible_cfg_text
from orchestrator.runner.apply import ApplyRequest, PhaseChoice, apply
from orchestrator.runner.cancel import Cancel
from orchestrator.runner.plan_report import PlanReport, plan_report
from orchestrator.runner.project import Content
from tests.helpers import ROOT
from tests.unit.runner.test_runner_apply import Recorder

PREFLIGHT = """\
- name: Test preflight
  hosts: all
  gather_facts: false
  tasks:
    - name: Config file
      ansible.builtin.copy:
        content: "wanted\\n"
        dest: "{{{{ '{files}/' ~ inventory_hostname ~ '.conf' }}}}"
        mode: "0644"
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
    - name: Read what the earlier phase installs
      ansible.builtin.command: cat {files}/driver-installed
      changed_when: false
      check_mode: false
- name: Done
  ansible.builtin.import_playbook: phase_done.yml
  vars:
    phase_done_hosts: all
"""

HOST = """\
- name: Test host
  hosts: all
  gather_facts: false
  tasks:
    - name: Nothing
      ansible.builtin.debug:
        msg: hi
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[PlanReport, Path]:
    tmp = tmp_path_factory.mktemp("plan")
    files = tmp / "files"
    files.mkdir()
    (files / "h1.conf").write_text("by hand\n")
    (files / "h2.conf").write_text("wanted\n")
    root = tmp / "checkout"
    (root / "playbooks").mkdir(parents=True)
    shutil.copy(ROOT / "playbooks" / "phase_done.yml", root / "playbooks" / "phase_done.yml")
    for name, text in (("preflight", PREFLIGHT), ("drivers", DRIVERS), ("host", HOST)):
        (root / "playbooks" / f"{name}.yml").write_text(text.format(files=files))
    inv = tmp / "inventory"
    inv.mkdir()
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    (inv / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"h1": local, "h2": local}}}))
    (inv / "ansible.cfg").write_text(ansible_cfg_text("t", 2, "# test\n"))
    content = Content(root)
    req = ApplyRequest(
        site="t",
        site_arg="t",
        project_root=tmp,
        inventory_dir=inv,
        content=content,
        phases=[PhaseChoice(n, ("h1", "h2"), True, True) for n in ("preflight", "drivers", "host")],
        hosts=None,
        limit_arg=None,
        check=True,
        explicit_phases=False,
    )
    run = apply(req, Recorder(), Cancel(), "plan1")
    assert (files / "h1.conf").read_text() == "by hand\n"  # check mode changed nothing
    return plan_report(run), files


def test_changes_per_phase_and_host_with_the_diff(report: tuple[PlanReport, Path]) -> None:
    rep, _ = report
    data = rep.as_dict()
    json.dumps(data)
    (change,) = data["changes"]
    assert (change["phase"], change["host"], change["task"], change["kind"]) == (
        "preflight",
        "h1",
        "Config file",
        "file",
    )
    assert "-by hand" in change["diff"] and "+wanted" in change["diff"]
    assert data["phases"][0]["hosts"] == {
        "h1": {"state": "changes", "note": "", "changes": 1},
        "h2": {"state": "unchanged", "note": "", "changes": 0},
    }
    assert data["summary"]["hosts_with_changes"] == ["h1"]


def test_a_failure_after_earlier_changes_is_unknown_not_failed(report: tuple[PlanReport, Path]) -> None:
    rep, _ = report
    drivers = rep.as_dict()["phases"][1]["hosts"]
    assert drivers["h1"]["state"] == "unknown"
    assert drivers["h1"]["note"].startswith("unknown until preflight is applied")
    assert drivers["h2"]["state"] == "failed" and "driver-installed" in drivers["h2"]["note"]
    host = rep.as_dict()["phases"][2]
    assert host["hosts"]["h1"]["state"] == "unknown"  # left out for a failure that was an unknown
    assert host["hosts"]["h2"] == {"state": "left_out", "note": "failed in drivers", "changes": 0}
    assert rep.result == "failed" and exit_code(rep) == exits.HOSTS_FAILED


def test_the_table_names_the_change_the_unknown_and_the_diff(report: tuple[PlanReport, Path]) -> None:
    rep, files = report
    out = Console(record=True, width=200, force_terminal=False)
    print_plan_report(out, rep, exit_code(rep))
    text = out.export_text()
    assert "preflight" in text and str(files / "h1.conf") in text
    assert "drivers on h1: unknown: unknown until preflight is applied" in text
    assert "drivers on h2: failed:" in text
    assert "+wanted" in text
    assert "plan: 1 change(s) on 1 host(s) (h1) in preflight" in text
