"""Change records from REAL ansible-runner events: a tiny phase playbook run by run_job in check + diff mode
on the local connection, against temp files (a sysctl.d-like file through ansible.posix.sysctl in a loop,
copy, lineinfile in a loop, file, a role task).

Expectations come from what Ansible itself printed for the same run: its "changed: [host] => (item=...)"
lines (which results and loop items changed) and the diffs its callback rendered (runner_on_file_diff
stdout), never from our own formatting alone.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from orchestrator.render.ansible_cfg import ansible_cfg_text
from orchestrator.runner.cancel import Cancel
from orchestrator.runner.changes import ChangeKind
from orchestrator.runner.job import JobSpec, run_job
from orchestrator.runner.messages import strip_ansi
from orchestrator.runner.model import PhaseResult, PhaseStatus
from orchestrator.runner.project import Content
from tests.helpers import ROOT

PLAYBOOK = """\
- name: Test host
  hosts: all
  gather_facts: false
  tasks:
    - name: Sysctls in the file
      ansible.posix.sysctl:
        name: "{{{{ item.key }}}}"
        value: "{{{{ item.value }}}}"
        sysctl_file: {tmp}/sysctl.conf
        sysctl_set: false
        reload: false
      vars:
        wanted: {{vm.swappiness: "10", kernel.numa_balancing: "0", net.core.somaxconn: "4096"}}
      loop: "{{{{ wanted | dict2items }}}}"
      loop_control:
        label: "{{{{ item.key }}}}={{{{ item.value }}}}"
    - name: Whole file
      ansible.builtin.copy:
        content: "alpha\\nbeta\\ngamma\\n"
        dest: {tmp}/whole.conf
        mode: "0644"
    - name: Lines
      ansible.builtin.lineinfile:
        path: {tmp}/lines.conf
        line: "{{{{ item }}}}"
      loop: [present=1, added=2]
    - name: Directory already there
      ansible.builtin.file:
        path: {tmp}
        state: directory
    - name: New directory
      ansible.builtin.file:
        path: {tmp}/newdir
        state: directory
    - name: Read-only probe
      ansible.builtin.command: cat {tmp}/whole.conf
      changed_when: false
      check_mode: false
    - name: Delegated copy
      ansible.builtin.copy:
        content: "on the controller\\n"
        dest: {tmp}/delegated.conf
        mode: "0644"
      delegate_to: localhost
    - name: Secret file
      ansible.builtin.copy:
        content: "{secret}\\n"
        dest: {tmp}/secret
        mode: "0600"
      no_log: true
    - name: Stage the package
      ansible.builtin.import_role:
        name: npu_driver
- name: Done
  ansible.builtin.import_playbook: phase_done.yml
  vars:
    phase_done_hosts: all
"""

SECRET = "not-in-any-change-0x5eC"
ROLE_TASKS = """\
- name: Driver | copy the verified package
  ansible.builtin.copy:
    content: "package\\n"
    dest: {tmp}/driver.run
    mode: "0600"
"""


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[PhaseResult, Path, dict[str, str]]:
    """The phase run once (for every test of this file) in check + diff mode; the files' sha256 before it."""
    tmp_path = tmp_path_factory.mktemp("changes")
    files = tmp_path / "files"
    files.mkdir()
    (files / "sysctl.conf").write_text("vm.swappiness = 60\nkernel.numa_balancing = 0\n")
    (files / "whole.conf").write_text("alpha\nBETA\ngamma\n")
    (files / "lines.conf").write_text("present=1\n")
    root = tmp_path / "checkout"
    (root / "playbooks").mkdir(parents=True)
    shutil.copy(ROOT / "playbooks" / "phase_done.yml", root / "playbooks" / "phase_done.yml")
    (root / "playbooks" / "host.yml").write_text(PLAYBOOK.format(tmp=files, secret=SECRET))
    role = root / "roles" / "npu_driver" / "tasks"
    role.mkdir(parents=True)
    (role / "main.yml").write_text(ROLE_TASKS.format(tmp=files))
    inv = tmp_path / "inventory"
    inv.mkdir()
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    (inv / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"h1": local}}}))
    (inv / "ansible.cfg").write_text(ansible_cfg_text("t", 2, "# test\n"))
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files.iterdir()}
    spec = JobSpec("host", Content(root), inv, tmp_path / "facts", tmp_path / "job", ("h1",), check=True)
    result = run_job(spec, on_event=lambda t, e: None, cancel=Cancel())
    assert result.status is PhaseStatus.OK, result.failures
    return result, files, before


def events(result: PhaseResult) -> list[dict[str, object]]:
    paths = Path(result.artifacts).glob("artifacts/*/job_events/*.json")
    loaded = [json.loads(p.read_text()) for p in paths]
    return sorted(loaded, key=lambda e: int(str(e["counter"])))


def test_one_change_per_changed_result_and_loop_item_as_ansible_printed_them(
    checked: tuple[PhaseResult, Path, dict[str, str]],
) -> None:
    result, _, _ = checked
    printed = set()  # Ansible's own "changed: [h1]" / "changed: [h1] => (item=...)" lines, with the task
    delegated: dict[str, str] = {}
    for e in events(result):
        for line in strip_ansi(str(e.get("stdout") or "")).splitlines():
            if line.startswith("changed: [h1"):
                data = e["event_data"]
                assert isinstance(data, dict)
                item = line.partition("(item=")[2].rstrip(")") if "(item=" in line else ""
                printed.add((str(data["task"]), item))
                if " -> " in line.partition("]")[0]:  # "changed: [h1 -> localhost]": delegated
                    delegated[str(data["task"])] = line.partition(" -> ")[2].partition("]")[0]
    got = {(c.task, c.item) for c in result.changes}
    assert got == printed
    assert len(result.changes) == len(printed)  # the looped tasks' summaries were not counted again
    # what the playbook makes true: two of three sysctls differ, one of two lines is missing, the
    # existing directory and the read-only probe changed nothing
    assert {c.item for c in result.changes if c.task == "Sysctls in the file"} == {
        "vm.swappiness=10",
        "net.core.somaxconn=4096",
    }
    assert {c.item for c in result.changes if c.task == "Lines"} == {"added=2"}
    assert not {"Directory already there", "Read-only probe"} & {c.task for c in result.changes}
    # a delegated change counts on the play's host and says where it runs, as Ansible printed it
    assert delegated == {"Delegated copy": "localhost"}
    (moved,) = [c for c in result.changes if c.task == "Delegated copy"]
    assert moved.host == "h1" and moved.detail.endswith("(delegated to localhost)"), moved
    # the recap agrees: one changed count per task that changed anything
    recap = next(e for e in events(result) if e["event"] == "playbook_on_stats")["event_data"]
    assert isinstance(recap, dict)
    assert recap["changed"]["h1"] == len({c.task for c in result.changes})


def test_diffs_are_the_ones_ansible_printed(checked: tuple[PhaseResult, Path, dict[str, str]]) -> None:
    result, _, _ = checked
    printed: dict[tuple[str, str], str] = {}
    for e in events(result):
        data = e.get("event_data")
        if data is None:  # a line Ansible printed outside any callback event (a warning): ansible-runner's
            assert e["event"] == "verbose", e  # "verbose" events carry stdout only (OutputEventFilter)
            continue
        assert isinstance(data, dict)
        if e["event"] == "runner_on_file_diff" and str(e.get("stdout") or "").strip():
            text = strip_ansi(str(e["stdout"])).replace("\r\n", "\n").rstrip("\n")
            printed[(str(data["task"]), str(data["host"]))] = text
    with_diff = {(c.task, c.host): c.diff for c in result.changes if c.diff}
    assert set(with_diff) == set(printed) and printed
    for key, text in printed.items():
        ours = [line.rstrip() for line in with_diff[key].splitlines()]
        assert ours == [line.rstrip() for line in text.splitlines()], key
    whole = with_diff[("Whole file", "h1")]
    assert "-BETA" in whole and "+beta" in whole


def test_kinds_details_and_nothing_written(checked: tuple[PhaseResult, Path, dict[str, str]]) -> None:
    result, files, before = checked
    by_task = {(c.task, c.item): c for c in result.changes}
    swappiness = by_task[("Sysctls in the file", "vm.swappiness=10")]
    assert swappiness.kind is ChangeKind.SYSCTL and swappiness.action == "ansible.posix.sysctl"
    assert swappiness.detail.startswith("vm.swappiness -> 10")
    assert by_task[("Whole file", "")].kind is ChangeKind.FILE
    assert str(files / "whole.conf") in by_task[("Whole file", "")].detail
    assert by_task[("New directory", "")].kind is ChangeKind.FILE
    assert by_task[("Driver | copy the verified package", "")].kind is ChangeKind.DRIVER
    assert all(c.phase == "host" and c.host == "h1" for c in result.changes)
    json.dumps([c.as_dict() for c in result.changes])  # JSON-ready
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files.iterdir()}
    assert after == before  # check mode wrote nothing


def test_a_no_log_result_keeps_no_detail_and_no_diff(
    checked: tuple[PhaseResult, Path, dict[str, str]],
) -> None:
    result, _, _ = checked
    (secret,) = [c for c in result.changes if c.task == "Secret file"]
    assert secret.diff == "" and "no_log" in secret.detail
    assert SECRET not in json.dumps([c.as_dict() for c in result.changes])


def test_weights_detail_names_the_files_that_do_not_match() -> None:
    """weights_verify's return values (its RETURN doc: lists of paths relative to the weights directory)."""
    from orchestrator.runner.change_events import detail_of

    res = {
        "path": "/data/models/m",
        "mismatched": ["model-00001-of-00002.safetensors"],
        "partial": [],
        "missing": ["config.json", "tokenizer.json"],
        "moved": [{"from": "/data/models/m/model-00001-of-00002.safetensors", "to": "x"}],
        "changed": True,
    }
    got = detail_of(ChangeKind.WEIGHTS, "ascend.npu.weights_verify", res)
    assert got == (
        "/data/models/m: mismatched: model-00001-of-00002.safetensors; missing: config.json, tokenizer.json"
    )
    assert detail_of(ChangeKind.WEIGHTS, "ascend.npu.weights_verify", {"path": "/w"}) == "/w"
