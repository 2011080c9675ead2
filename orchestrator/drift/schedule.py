"""What `orchestrator drift schedule` writes: a systemd service + timer pair (or one crontab line) that runs
`orchestrator drift SITE` on the controller, leaving a Prometheus textfile and a JUnit file behind.

- The service is Type=oneshot with SuccessExitStatus=3 4: drift (3) and unreachable hosts (4) are findings
  the textfile reports, not failures of the unit; an invalid spec (2) or a crash is a unit failure.
- The schedule (`--every`, else the spec's `drift.schedule`) is in one vocabulary
  (orchestrator/spec/drift_schedule.py): a time span makes a monotonic timer (OnBootSec +
  OnUnitActiveSec); five cron fields, hourly/daily/weekly/monthly and a daily HH:MM become five cron
  fields, written as they are with --cron and as the timer's OnCalendar lines otherwise
  (orchestrator/drift/cron.py), with Persistent=true so a run missed while the controller was off
  happens at the next boot. RandomizedDelaySec spreads sites that share a schedule.
- The words and the cron line of a time span run at a minute (and hour) derived from the site name, for
  the same reason.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path

from orchestrator.drift.cron import on_calendar
from orchestrator.spec.drift_schedule import Every, cron_schedule

DEFAULT_UNIT_DIR = Path("/etc/systemd/system")
DEFAULT_TEXTFILE_DIR = Path("/var/lib/prometheus/node-exporter")
"""Debian's and Ubuntu's prometheus-node-exporter read --collector.textfile.directory from here."""


def span_text(seconds: int) -> str:
    """systemd's own spelling: 1h, 90min, 1d, 45s."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def unit_name(site: str) -> str:
    return f"orchestrator-drift-{site}"


def textfile_name(site: str) -> str:
    return f"orchestrator_drift_{site}.prom"


def _systemd_arg(arg: str) -> str:
    """One ExecStart argument: specifiers (%) and variables ($) escaped, quoted when it has blanks."""
    arg = arg.replace("%", "%%").replace("$", "$$")
    if re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]+", arg):
        return arg
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'


def service_unit(
    site: str, command: Sequence[str], workdir: Path, user: str | None = None, env_file: Path | None = None
) -> str:
    exec_start = " ".join(_systemd_arg(a) for a in command)
    lines = [
        f"# Written by `orchestrator drift schedule {site}`; "
        f"`orchestrator drift schedule {site} --remove` removes it.",
        "[Unit]",
        f"Description=orchestrator drift check of site {site}",
        "Wants=network-online.target",
        "After=network-online.target",
        "",
        "[Service]",
        "Type=oneshot",
        *([f"User={user}"] if user else []),
        f"WorkingDirectory={str(workdir).replace('%', '%%')}",  # the rest of the line: no quotes
        f"ExecStart={exec_start}",
        "# 3: drift found, 4: hosts unreachable: findings (the textfile says which), not unit failures",
        "SuccessExitStatus=3 4",
        "Environment=PYTHONUNBUFFERED=1",
        *(
            [
                "# the env: secrets the spec references (NAME=VALUE lines, mode 0600)",
                f"EnvironmentFile={str(env_file).replace('%', '%%')}",
            ]
            if env_file is not None
            else []
        ),
        "Nice=10",
        "IOSchedulingClass=idle",
    ]
    return "\n".join(lines) + "\n"


def timer_unit(site: str, every: Every) -> str:
    if every.seconds is not None:
        when = [
            f"OnBootSec={span_text(min(every.seconds, 15 * 60))}",
            f"OnUnitActiveSec={span_text(every.seconds)}",
            f"RandomizedDelaySec={span_text(max(60, min(every.seconds // 10, 300)))}",
        ]
    else:
        calendars = on_calendar(cron_schedule(site, every))
        when = [*(f"OnCalendar={c}" for c in calendars), "Persistent=true", "RandomizedDelaySec=5min"]
    lines = [
        f"# Written by `orchestrator drift schedule {site}`; "
        f"`orchestrator drift schedule {site} --remove` removes it.",
        "[Unit]",
        f"Description=orchestrator drift check of site {site} ({every.text})",
        "",
        "[Timer]",
        *when,
        "",
        "[Install]",
        "WantedBy=timers.target",
    ]
    return "\n".join(lines) + "\n"


def cron_line(site: str, every: Every, command: Sequence[str], log: Path) -> str:
    """A crontab line; % is escaped (cron turns a bare % into a newline)."""
    argv = " ".join(shlex.quote(a) for a in command)
    line = f"{argv} >> {shlex.quote(str(log))} 2>&1".replace("%", "\\%")
    return f"{cron_schedule(site, every)} {line}"
