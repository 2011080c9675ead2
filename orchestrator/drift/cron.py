"""Five cron fields (a drift schedule, orchestrator/spec/drift_schedule.py, checked by its cron_problem: *,
N, N-M, lists and /STEP, numbers only) as systemd OnCalendar expressions, for `orchestrator drift schedule`.

Each restricted field becomes the explicit list of its values (systemd's ranges take no step). Cron's day
rule (Vixie cron, cron(5)): when both day of month and day of week are restricted (neither starts with
'*'), a day matches when EITHER does; systemd ANDs the fields of one expression, so that case becomes two
OnCalendar lines (a timer fires on the union of its OnCalendar= lines). Day of week 7 is Sunday, as 0.
"""

from __future__ import annotations

_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
_WEEKDAYS = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat")


def _values(field: str, low: int, high: int) -> list[int] | None:
    """The values a field matches, None for every value."""
    out: set[int] = set()
    for part in field.split(","):
        base, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if base == "*":
            first, last = low, high
        elif "-" in base:
            a, b = base.split("-", 1)
            first, last = int(a), int(b)
        else:
            first = int(base)
            last = high if step_text else first  # "N/S": from N to the end, every S (Vixie cron)
        out.update(range(first, last + 1, step))
    return None if out == set(range(low, high + 1)) else sorted(out)


def _list(values: list[int] | None) -> str:
    return "*" if values is None else ",".join(f"{v:02d}" for v in values)


def on_calendar(expr: str) -> list[str]:
    """systemd OnCalendar expressions (one, or two for cron's either-day rule) for a valid cron expression."""
    fields = expr.split()
    if len(fields) != 5:
        raise ValueError(f"a cron expression has 5 fields, not {len(fields)}: {expr!r}")
    minute, hour, dom, month, dow = (
        _values(f, low, high) for f, (low, high) in zip(fields, _RANGES, strict=True)
    )
    if dow is not None:
        days = sorted({d % 7 for d in dow})
        dow = None if len(days) == 7 else days
    clock = f"{_list(hour)}:{_list(minute)}:00"

    def line(day_of_month: list[int] | None, weekdays: list[int] | None) -> str:
        prefix = "" if weekdays is None else ",".join(_WEEKDAYS[d] for d in weekdays) + " "
        return f"{prefix}*-{_list(month)}-{_list(day_of_month)} {clock}"

    if not fields[2].startswith("*") and not fields[4].startswith("*"):  # cron's either-day rule
        if dom is None or dow is None:  # one of them matches every day
            return [line(None, None)]
        return [line(dom, None), line(None, dow)]
    return [line(dom, dow)]
