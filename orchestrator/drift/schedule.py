"""What `orchestrator drift schedule` writes: a systemd service + timer pair (or one crontab line) that runs
`orchestrator drift SITE` on the controller, leaving a Prometheus textfile and a JUnit file behind.

- The service is Type=oneshot with SuccessExitStatus=3 4: drift (3) and unreachable hosts (4) are findings
  the textfile reports, not failures of the unit; an invalid spec (2) or a crash is a unit failure.
- --every takes a time span (30min, 1h, 1d: a monotonic timer, OnBootSec + OnUnitActiveSec) or a
  systemd calendar expression (hourly, daily, Mon *-*-* 03:00: OnCalendar, Persistent=true so a run
  missed while the controller was off happens at the next boot). RandomizedDelaySec spreads sites that share
  a schedule.
- Without --every, the spec's `drift.schedule` (five cron fields): the cron line as written, or the timer's
  OnCalendar lines from it (orchestrator/drift/cron.py), Persistent=true.
- The cron line of a time span runs at a minute (and hour) derived from the site name, for the same reason.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.drift.cron import on_calendar

DEFAULT_UNIT_DIR = Path("/etc/systemd/system")
DEFAULT_TEXTFILE_DIR = Path("/var/lib/prometheus/node-exporter")
"""Debian's and Ubuntu's prometheus-node-exporter read --collector.textfile.directory from here."""

MIN_PERIOD_S = 5 * 60
_UNITS = {
    "s": 1, "sec": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "w": 604800, "week": 604800, "weeks": 604800,
}  # fmt: skip
_SPAN_PART = re.compile(r"\s*(\d+)\s*([a-z]+)\s*")
_CRON_NAMES = {"hourly": "@hourly", "daily": "@daily", "weekly": "@weekly", "monthly": "@monthly"}


class ScheduleError(ValueError):
    """A schedule the operator asked for that cannot be written; the message says how to fix it."""


@dataclass(frozen=True)
class Every:
    text: str  # as the operator typed it
    seconds: int | None = None  # a time span
    calendar: str | None = None  # a systemd calendar expression
    cron: str | None = None  # five cron fields (the spec's drift.schedule)


def parse_span(text: str) -> int | None:
    """Seconds of a systemd-style time span ("90min", "1h 30min", "2d"), None when it is not one."""
    pos, total, s = 0, 0, text.strip().lower()
    if not s:
        return None
    while pos < len(s):
        m = _SPAN_PART.match(s, pos)
        if m is None or m.group(2) not in _UNITS:
            return None
        total += int(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return total


def parse_every(text: str) -> Every:
    seconds = parse_span(text)
    if seconds is not None:
        if seconds < MIN_PERIOD_S:
            raise ScheduleError(
                f"--every {text} is shorter than 5 minutes; a drift run checks every host in check mode "
                "and takes minutes. Fix: pass --every 5min or longer (e.g. 1h)."
            )
        return Every(text, seconds=seconds)
    expr = " ".join(text.split())
    if not expr or any(c in expr for c in '\n;`$%\\"'):
        raise ScheduleError(
            f"--every {text!r} is neither a time span (30min, 1h, 1d) nor a calendar expression "
            "(hourly, daily, Mon *-*-* 03:00). Fix: pass one of those."
        )
    return Every(text, calendar=expr)


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


def _offset(site: str, modulo: int) -> int:
    return int(hashlib.sha256(site.encode()).hexdigest(), 16) % modulo


def service_unit(site: str, command: Sequence[str], workdir: Path, user: str | None = None) -> str:
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
        calendars = on_calendar(every.cron) if every.cron is not None else [str(every.calendar)]
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


def cron_schedule(site: str, every: Every) -> str:
    """The five cron fields for --every, at a minute derived from the site name (the spec's own fields
    when it came from drift.schedule)."""
    if every.cron is not None:
        return every.cron
    minute = _offset(site, 60)
    if every.calendar is not None:
        named = _CRON_NAMES.get(every.calendar.lower())
        if named is None:
            raise ScheduleError(
                f"cron has no equivalent of the calendar expression {every.calendar!r}. Fix: pass a time "
                "span (--every 1h) or hourly / daily / weekly / monthly with --cron, or use the systemd "
                "timer (drop --cron)."
            )
        return named
    assert every.seconds is not None
    s = every.seconds
    if s % 60 == 0 and 60 % (s // 60) == 0 and s < 3600:
        step = s // 60
        return f"{minute % step}-59/{step} * * * *"
    if s % 3600 == 0 and 24 % (s // 3600) == 0 and s <= 86400:
        step = s // 3600
        hour = _offset(site + "/h", step)
        if step == 1:
            return f"{minute} * * * *"
        return f"{minute} {hour}-23/{step} * * *" if step < 24 else f"{minute} {hour} * * *"
    if s == 7 * 86400:
        return f"{minute} {_offset(site + '/h', 24)} * * {_offset(site + '/d', 7)}"
    raise ScheduleError(
        f"cron cannot run every {every.text} evenly. Fix: with --cron pick a divisor of an hour (5min, "
        "10min, 15min, 20min, 30min), of a day (1h, 2h, 3h, 4h, 6h, 8h, 12h, 1d) or 1w; or use the systemd "
        "timer (drop --cron), which takes any span."
    )


def cron_line(site: str, every: Every, command: Sequence[str], log: Path) -> str:
    """A crontab line; % is escaped (cron turns a bare % into a newline)."""
    argv = " ".join(shlex.quote(a) for a in command)
    line = f"{argv} >> {shlex.quote(str(log))} 2>&1".replace("%", "\\%")
    return f"{cron_schedule(site, every)} {line}"
