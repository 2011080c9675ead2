"""What `orchestrator plan` prints for people: one table of the changes an apply would make (phase, host,
kind, what, reboot), the hosts whose answer is unknown, failed or left out, the diffs, one summary line."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from orchestrator.cli.output import say
from orchestrator.runner.changes import Change
from orchestrator.runner.plan_report import CHANGES, UNCHANGED, PlanReport

_STATE_STYLE = {"unknown": "yellow", "failed": "red", "unreachable": "magenta", "left_out": "dim"}


def what(c: Change) -> str:
    """'vm.swappiness -> 0 (/etc/sysctl.d/...)' or, without a detail, the task (and its loop item)."""
    if c.detail:
        return c.detail
    return f"{c.task} [{c.item}]" if c.item else c.task


def changes_table(report: PlanReport) -> Table:
    table = Table(title="What apply would change", title_justify="left", title_style="bold")
    for col in ("phase", "host", "kind", "change", "reboot"):
        table.add_column(col, overflow="fold")
    for p in report.phases:
        for c in sorted(p.changes, key=lambda c: c.host):
            table.add_row(p.name, c.host, str(c.kind), Text(what(c)), "yes" if c.reboot else "")
    return table


def state_lines(report: PlanReport) -> list[tuple[str, str]]:
    """(line, style) per phase and host neither changed nor unchanged, and per phase that did not run."""
    out = []
    for p in report.phases:
        if not p.hosts and p.status != "ok":
            out.append((f"{p.name}: {p.status.replace('_', ' ')}: {p.note}", "dim"))
        for f in report.run.failures:
            if f.phase == p.name and not f.host:  # the playbook could not run at all
                out.append((f"{p.name}: could not run: {f.message}", "red"))
        for h, hp in sorted(p.hosts.items()):
            if hp.state not in (CHANGES, UNCHANGED):
                label = hp.state.replace("_", " ")
                out.append((f"{p.name} on {h}: {label}: {hp.note}", _STATE_STYLE.get(hp.state, "")))
    return out


def diff_text(c: Change) -> Text:
    head = f"--- {c.phase} on {c.host}: {c.task}" + (f" [{c.item}]" if c.item else "")
    text = Text(head + "\n", style="bold")
    for line in c.diff.splitlines():
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else ""
        style = "cyan" if line.startswith("@@") else style
        text.append("    " + line + "\n", style=style)
    return text


def _no_change_head(report: PlanReport) -> str:
    """No change found: say on which hosts that is known, and which could not be checked (a plan where no
    host answered must not read like a clean one)."""
    checked = {h for p in report.phases for h, hp in p.hosts.items() if hp.state == UNCHANGED}
    missed: dict[str, str] = {}
    for p in report.phases:
        for h, hp in sorted(p.hosts.items()):
            if hp.state not in (CHANGES, UNCHANGED):
                missed.setdefault(h, hp.state.replace("_", " "))
    not_checked = {h: s for h, s in missed.items() if h not in checked}
    if not checked:
        what = ", ".join(f"{h} ({s})" for h, s in sorted(missed.items())) or "no host was selected"
        return f"plan: nothing could be checked: {what}; the plan does not know whether anything would change"
    head = f"plan: no changes on the {len(checked)} host(s) checked ({', '.join(sorted(checked))})"
    if not_checked:
        head += "; not checked: " + ", ".join(f"{h} ({s})" for h, s in sorted(not_checked.items()))
    partial = sorted(h for h in checked if h in missed)
    if partial:
        head += "; some phases not checked on " + ", ".join(partial)
    return head


def summary_line(report: PlanReport, exit_code: int) -> str:
    changes = report.changes
    if changes:
        hosts = sorted({c.host for c in changes})
        phases = list(dict.fromkeys(c.phase for c in changes))
        head = (
            f"plan: {len(changes)} change(s) on {len(hosts)} host(s) ({', '.join(hosts)}) "
            f"in {', '.join(phases)}"
        )
    else:
        head = _no_change_head(report)
    reboot = sorted({c.host for c in changes if c.reboot})
    if reboot:
        head += f"; a reboot is needed on {', '.join(reboot)}"
    run = report.run
    return f"{head}. run {run.run_id}: {report.result} (exit {exit_code}); artifacts in {run.artifacts}"


def print_plan_report(out: Console, report: PlanReport, exit_code: int) -> None:
    if report.changes:
        out.print(changes_table(report))
    for line, style in state_lines(report):
        say(out, line, style=style or None)
    for c in report.changes:
        if c.diff:
            out.print(diff_text(c), highlight=False)
    say(out, summary_line(report, exit_code), style="bold")
