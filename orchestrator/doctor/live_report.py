"""The live doctor's result: findings per host, unreachable hosts, the exit code; a table, one JSON object."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table

from orchestrator.doctor.live_finding import Finding, Status

EXIT_OK = 0
EXIT_FOUND = 3  # orchestrator.cli.exits.DIAGNOSED
EXIT_UNREACHABLE = 4  # orchestrator.cli.exits.HOSTS_UNREACHABLE


@dataclass
class LiveReport:
    site: str
    findings: list[Finding]
    unreachable: dict[str, str] = field(default_factory=dict)  # host -> message

    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.status is not Status.ok]

    @property
    def exit_code(self) -> int:
        """0 all ok; 3 a finding (warn or fail); 4 a host unreachable and nothing else wrong."""
        if self.problems():
            return EXIT_FOUND
        if self.unreachable:
            return EXIT_UNREACHABLE
        return EXIT_OK

    def as_json(self) -> str:
        return json.dumps(
            {
                "site": self.site,
                "findings": [f.as_dict() for f in self.findings],
                "problems": len(self.problems()),
                "unreachable": self.unreachable,
                "exit_code": self.exit_code,
            },
            sort_keys=True,
        )


_STYLE = {Status.ok: "green", Status.warn: "yellow", Status.fail: "red"}


def print_report(out: Console, report: LiveReport, hosts: Sequence[str]) -> None:
    table = Table(title=f"doctor {report.site}: {', '.join(hosts)}", show_lines=False)
    for name in ("host", "check", "status", "seen", "fix"):
        table.add_column(name, overflow="fold")
    for f in report.findings:
        table.add_row(f.host, f.check, f.status.value, f.seen, f.fix, style=_STYLE[f.status])
    for host, msg in sorted(report.unreachable.items()):
        table.add_row(host, "reachable", "unreachable", msg, "check SSH to the host", style="red")
    out.print(table)
    n = len(report.problems())
    out.print(
        f"{n} problem(s), {len(report.unreachable)} host(s) unreachable"
        if n or report.unreachable
        else "all ok",
        markup=False,
    )
