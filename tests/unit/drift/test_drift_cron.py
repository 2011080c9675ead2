"""drift.schedule (cron fields) as systemd OnCalendar lines: the times systemd itself computes for the lines
(`systemd-analyze calendar --iterations`) are the times croniter computes for the cron expression, including
cron's either-day rule (cron(5): "30 4 1,15 * 5" runs on the 1st and 15th of each month plus every Friday)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from datetime import UTC, datetime

import pytest
from croniter import croniter

from orchestrator.drift.cron import on_calendar

BASE = datetime(2026, 12, 5, 0, 0, 30, tzinfo=UTC)  # off the minute: no firing time equals it
N = 12
_ELAPSE = re.compile(r"(?:Next elapse|Iter\. #\d+): \w{3} (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC")


def systemd_times(calendars: list[str]) -> list[datetime]:
    tool = shutil.which("systemd-analyze")
    assert tool, "systemd-analyze is missing: install the systemd package (apt-get install systemd)"
    out: set[datetime] = set()
    for expr in calendars:
        done = subprocess.run(
            [tool, "calendar", f"--iterations={N}", "--base-time=2026-12-05 00:00:30 UTC", expr],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "TZ": "UTC"},
        )
        assert done.returncode == 0, (expr, done.stderr)
        found = _ELAPSE.findall(done.stdout)
        assert len(found) == N, (expr, done.stdout)
        out |= {datetime.strptime(t, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC) for t in found}
    return sorted(out)[:N]


def cron_times(expr: str, day_or: bool) -> list[datetime]:
    it = croniter(expr, BASE, day_or=day_or)
    return [it.get_next(datetime) for _ in range(N)]


@pytest.mark.parametrize(
    ("expr", "day_or"),
    [
        ("0 */6 * * *", True),  # the spec's default
        ("*/15 * * * *", True),
        ("30 4 1,15 * 5", True),  # cron(5)'s example of the either-day rule
        ("0 3 * * 1-5", True),
        ("5 0 * 8 *", True),
        ("0 22 * * 0,7", True),  # 0 and 7 are both Sunday
        ("10 2 1-7/2 * *", True),
        ("15 10 5/10 * *", True),  # N/S: from N to the end of the range
        ("0 12 13 * 1-5", True),
        ("0 0 1-31 * 5", True),  # both restricted, day of month covers every day: every day
        ("0 0 */2 * 1", False),  # a field starting with '*' is not "restricted": both must match
    ],
)
def test_systemd_fires_when_cron_does(expr: str, day_or: bool) -> None:
    assert systemd_times(on_calendar(expr)) == cron_times(expr, day_or), on_calendar(expr)


def test_the_either_day_rule_is_two_lines() -> None:
    assert on_calendar("30 4 1,15 * 5") == ["*-*-01,15 04:30:00", "Fri *-*-* 04:30:00"]
    times = systemd_times(on_calendar("30 4 1,15 * 5"))
    assert any(t.day not in (1, 15) and t.weekday() == 4 for t in times)  # a Friday
    assert any(t.day in (1, 15) and t.weekday() != 4 for t in times)  # a 1st / 15th that is not one


def test_the_default_schedule() -> None:
    assert on_calendar("0 */6 * * *") == ["*-*-* 00,06,12,18:00:00"]
