"""The one vocabulary of a drift schedule, for the spec's `drift.schedule` and `drift schedule --every` alike:

- five cron fields (`30 */4 * * *`; crontab(5): *, N, N-M, lists and /STEP, numbers only);
- hourly, daily, weekly, monthly (also written @daily ...): once per period, at a minute (and hour, and
  weekday) derived from the site name, so sites that share a schedule do not start together;
- a daily time HH:MM (`02:00`: every day at 02:00);
- a time span (`30min`, `6h`, `1d`; at least 5 minutes): every so long.

Every form but a span is five cron fields once the site is known (cron_schedule): the crontab line of
`--cron` and the systemd timer's OnCalendar lines (orchestrator/drift/cron.py) come from the same fields, so
both fire at the same times. A span makes a monotonic timer, and a cron line at a derived minute when cron
can run it evenly.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

MIN_PERIOD_S = 5 * 60
_UNITS = {
    "s": 1, "sec": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "w": 604800, "week": 604800, "weeks": 604800,
}  # fmt: skip
_SPAN_PART = re.compile(r"\s*(\d+)\s*([a-z]+)\s*")
_CLOCK = re.compile(r"^([01]?[0-9]|2[0-3]):([0-5][0-9])$")
WORDS = ("hourly", "daily", "weekly", "monthly")
_CRON_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
_CRON_CHARS = set("0123456789*/,- ")
_CRON_NAMES = ("minute", "hour", "day of month", "month", "day of week")

VOCABULARY = (
    "five cron fields (e.g. '0 */6 * * *'), hourly, daily, weekly, monthly (at a minute derived from the "
    "site name), a daily time such as 02:00, or a time span of 5 minutes or more (30min, 6h, 1d)"
)
"""What a schedule may be, for the fixes of the messages that refuse one."""


class ScheduleError(ValueError):
    """A schedule that cannot be written; the message says why and how to fix it."""


@dataclass(frozen=True)
class Every:
    text: str  # as the operator wrote it
    seconds: int | None = None  # a time span
    cron: str | None = None  # five cron fields (a daily time is turned into them)
    word: str | None = None  # hourly, daily, weekly or monthly


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


def _cron_field_ok(text: str, low: int, high: int) -> bool:
    for part in text.split(","):
        body, _, step = part.partition("/")
        if step and (not step.isdigit() or int(step) == 0):
            return False
        if body == "*":
            continue
        lo, _, hi = body.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return False
        values = [int(lo)] + ([int(hi)] if hi else [])
        if any(v < low or v > high for v in values) or (hi and int(hi) < int(lo)):
            return False
    return True


def cron_problem(expr: str) -> str | None:
    """What is wrong with a cron expression (five fields), None when nothing is."""
    fields = expr.split()
    if len(fields) != 5:
        return f"a cron expression has 5 fields (minute hour day month weekday); '{expr}' has {len(fields)}"
    for text, (low, high), name in zip(fields, _CRON_RANGES, _CRON_NAMES, strict=True):
        if not _cron_field_ok(text, low, high):
            return (
                f"cron field '{text}' ({name}) is not valid: use *, N, N-M, lists and /STEP in {low}-{high}"
            )
    return None


def parse_every(text: str) -> Every:
    """A schedule in the vocabulary above; ScheduleError (a sentence with its fix) for anything else."""
    s = " ".join(text.split())
    word = s.lower().removeprefix("@")
    if word in WORDS:
        return Every(text, word=word)
    clock = _CLOCK.match(s)
    if clock is not None:
        return Every(text, cron=f"{int(clock[2])} {int(clock[1])} * * *")
    seconds = parse_span(s)
    if seconds is not None:
        if seconds < MIN_PERIOD_S:
            raise ScheduleError(
                f"'{text}' is shorter than 5 minutes; a drift run checks every host in check mode and takes "
                "minutes. Fix: use 5min or longer (e.g. 1h)."
            )
        return Every(text, seconds=seconds)
    if len(s.split()) == 5 or (len(s.split()) > 1 and set(s) <= _CRON_CHARS):
        problem = cron_problem(s)
        if problem is not None:
            raise ScheduleError(f"{problem}. Fix: use {VOCABULARY}.")
        return Every(text, cron=s)
    raise ScheduleError(f"'{text}' is not a drift schedule. Fix: use {VOCABULARY}.")


def _offset(site: str, modulo: int) -> int:
    return int(hashlib.sha256(site.encode()).hexdigest(), 16) % modulo


def cron_schedule(site: str, every: Every) -> str:
    """The five cron fields of a schedule: as written, or at a minute (hour, weekday) derived from the site
    name; ScheduleError for a span cron cannot run evenly."""
    if every.cron is not None:
        return every.cron
    minute, hour, weekday = _offset(site, 60), _offset(site + "/h", 24), _offset(site + "/d", 7)
    if every.word is not None:
        return {
            "hourly": f"{minute} * * * *",
            "daily": f"{minute} {hour} * * *",
            "weekly": f"{minute} {hour} * * {weekday}",
            "monthly": f"{minute} {hour} 1 * *",
        }[every.word]
    assert every.seconds is not None
    s = every.seconds
    if s % 60 == 0 and 60 % (s // 60) == 0 and s < 3600:
        step = s // 60
        return f"{minute % step}-59/{step} * * * *"
    if s % 3600 == 0 and 24 % (s // 3600) == 0 and s <= 86400:
        step = s // 3600
        if step == 1:
            return f"{minute} * * * *"
        first = _offset(site + "/h", step)
        return f"{minute} {first}-23/{step} * * *" if step < 24 else f"{minute} {hour} * * *"
    if s == 7 * 86400:
        return f"{minute} {hour} * * {weekday}"
    raise ScheduleError(
        f"cron cannot run every {every.text} evenly. Fix: with --cron pick a divisor of an hour (5min, "
        "10min, 15min, 20min, 30min), of a day (1h, 2h, 3h, 4h, 6h, 8h, 12h, 1d), 1w, hourly, daily, weekly, "
        "monthly, a daily time such as 02:00, or five cron fields; or use the systemd timer (drop --cron), "
        "which takes any span."
    )
