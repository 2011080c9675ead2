"""A plan tells the truth about what it could check: "no changes" only for the hosts it checked, "nothing
could be checked" when no host answered, and each unreachable host comes with the ssh command that
reproduces the attempt (user, key, port, address, known_hosts), read from the rendered inventory."""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml

from orchestrator.cli.plan_view import summary_line
from orchestrator.cli.reach import reach_lines, ssh_command
from orchestrator.runner.model import Failure, HostStats, PhaseResult, PhaseStatus, Run
from orchestrator.runner.plan_report import plan_report
from tests.unit.drift.drift_runs import clean_run, unreachable_run


def all_gone() -> Run:
    fails = [
        Failure(
            "preflight", h, "Gathering Facts", f"ssh: connect to host {h} port 22: Connection refused", True
        )
        for h in ("a2-01", "a2-02")
    ]
    hosts = {h: HostStats(unreachable=1) for h in ("a2-01", "a2-02")}
    phase = PhaseResult("preflight", PhaseStatus.FAILED, hosts=hosts, failures=fails)
    return Run("20261205T120000Z-abcdef", "a2-fleet", check=True, phases=[phase])


def test_no_host_answered_is_not_a_clean_plan() -> None:
    line = summary_line(plan_report(all_gone()), 4)
    assert line.startswith("plan: nothing could be checked: a2-01 (unreachable), a2-02 (unreachable)")
    assert "every host checked matches" not in line and "no changes" not in line


def test_some_hosts_unreachable_names_what_was_checked() -> None:
    line = summary_line(plan_report(unreachable_run()), 4)
    assert line.startswith(
        "plan: no changes on the 1 host(s) checked (a2-01); not checked: a2-02 (unreachable)"
    )


def test_every_host_checked_says_so() -> None:
    line = summary_line(plan_report(clean_run()), 0)
    assert line.startswith("plan: no changes on the 2 host(s) checked (a2-01, a2-02)")
    assert "not checked" not in line


def test_the_ssh_command_is_the_inventorys_connection(tmp_path: Path) -> None:
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "host_vars").mkdir()
    (tmp_path / "group_vars" / "all.yml").write_text(
        yaml.safe_dump(
            {
                "ansible_user": "deploy",
                "ansible_ssh_private_key_file": "~/.ssh/fleet key",
                "ansible_ssh_common_args": "-o UserKnownHostsFile=/etc/ssh/fleet_known_hosts",
            }
        )
    )
    (tmp_path / "host_vars" / "a2-02.yml").write_text(
        yaml.safe_dump({"ansible_host": "10.50.0.12", "ansible_port": 2222})
    )
    cmd = ssh_command(tmp_path, "a2-02")
    assert shlex.split(cmd) == [
        "ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-i", "~/.ssh/fleet key", "-p", "2222",
        "-o", "UserKnownHostsFile=/etc/ssh/fleet_known_hosts", "deploy@10.50.0.12", "true",
    ]  # fmt: skip
    (tmp_path / "group_vars" / "all.yml").write_text(
        yaml.safe_dump({"ansible_ssh_private_key_file": "~/.ssh/k"})
    )
    assert ssh_command(tmp_path, "a2-02") == (
        "ssh -o BatchMode=yes -o ConnectTimeout=10 -i ~/.ssh/k -p 2222 10.50.0.12 true"
    )  # ~ stays unquoted: the shell expands it
    assert reach_lines(tmp_path, ["a2-02"]) == [
        f"a2-02: unreachable; to see why, run: {ssh_command(tmp_path, 'a2-02')}"
    ]
