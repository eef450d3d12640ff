"""Five-field cron expressions (spec 10): minute, hour, day of month, month, day of week, in UTC.

Fields take numbers, `*`, lists, ranges, steps; months and days of the week also three-letter names; the day
of the week runs 0–7 (0 and 7 are Sunday). When day of month and day of week are both restricted, either
matching is due. `parse_cron` gives the sets of each field or the words that refuse the expression. Numbers are
ASCII digits (`str.isdigit` alone takes `١`, `²`).

Not `cronsim` or `croniter`: run against the page's forms (`tests/functions/workflow/test_cron.py`), cronsim
takes Quartz's `L`, `5L` and `1#2`, and croniter `L`, `1#2`, `?`, `15W` and `@daily`, where the page has none, and
croniter reads `0 0 */2 * 1` and `0 0 * * mon-1` otherwise; neither says which field is wrong within which bounds,
nor refuses an expression that is never due. Refusing what they take beyond the page would be this parser again.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name}
_DAYS = {"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 7, _DAYS),
)

NOT_FIVE_FIELDS = "A cron expression has five fields: minute, hour, day of month, month, day of week"
NEVER_DUE = "This cron expression is never due: no month has such a day"


@dataclass(frozen=True)
class Cron:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    days_restricted: bool
    weekdays_restricted: bool

    def next_due(self, after: datetime) -> datetime:
        """The first due minute strictly after `after` (UTC); a parsed expression is always due again."""
        start = after.astimezone(UTC).replace(second=0, microsecond=0) + timedelta(minutes=1)
        hours = sorted(self.hours)
        minutes = sorted(self.minutes)
        day = start.date()
        for _ in range(366 * 8):
            moment = datetime(day.year, day.month, day.day, tzinfo=UTC)
            if self.due_on(moment):
                for hour in hours:
                    for minute in minutes:
                        candidate = moment.replace(hour=hour, minute=minute)
                        if candidate >= start:
                            return candidate
            day += timedelta(days=1)
        raise ValueError("the cron expression is never due")

    def due_on(self, day: datetime) -> bool:
        """Whether the day (its month, day of month and day of week) is due."""
        if day.month not in self.months:
            return False
        in_month = day.day in self.days
        weekday = (day.isoweekday() % 7) in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return in_month or weekday
        return in_month and weekday

    def due(self, at: datetime) -> bool:
        """Whether the minute of `at` (UTC) is due."""
        return at.minute in self.minutes and at.hour in self.hours and self.due_on(at)


def _is_number(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _value(text: str, low: int, high: int, names: dict[str, int]) -> int | None:
    if text.lower() in names:
        return names[text.lower()]
    if not _is_number(text):
        return None
    number = int(text)
    return number if low <= number <= high else None


def _field(text: str, name: str, low: int, high: int, names: dict[str, int]) -> frozenset[int] | str:
    values: set[int] = set()
    bad = f"The {name} field {text!r} is not a cron field of values from {low} to {high}"
    for part in text.split(","):
        step = 1
        if "/" in part:
            part, _slash, step_text = part.partition("/")
            if not _is_number(step_text) or int(step_text) == 0:
                return bad
            step = int(step_text)
        if part == "*":
            first, last = low, high
        elif "-" in part:
            start_text, _dash, end_text = part.partition("-")
            start, end = _value(start_text, low, high, names), _value(end_text, low, high, names)
            if start is None or end is None or start > end:
                return bad
            first, last = start, end
        else:
            single = _value(part, low, high, names)
            if single is None:
                return bad
            first, last = single, (high if step > 1 else single)
        values.update(range(first, last + 1, step))
    return frozenset(values)


def parse_cron(expression: object) -> Cron | str:
    """The cron expression, or the words that refuse it (not five fields, a bad field, never due)."""
    if not isinstance(expression, str) or len(expression.split()) != 5:
        return NOT_FIVE_FIELDS
    sets: list[frozenset[int]] = []
    for text, (name, low, high, names) in zip(expression.split(), _FIELDS, strict=True):
        field = _field(text, name, low, high, names)
        if isinstance(field, str):
            return field
        sets.append(field)
    weekdays = frozenset(0 if day == 7 else day for day in sets[4])
    fields = expression.split()
    cron = Cron(
        sets[0], sets[1], sets[2], sets[3], weekdays, not fields[2].startswith("*"), not fields[4].startswith("*")
    )
    if not (cron.days_restricted and cron.weekdays_restricted) and not any(
        day <= calendar.monthrange(2024, month)[1] for month in cron.months for day in cron.days
    ):
        return NEVER_DUE
    return cron


def every_next_due(anchor_ms: int, period_ms: int, after_ms: int) -> int:
    """The first multiple of the period after the anchor (the save of the trigger's form) that is past `after`."""
    if after_ms < anchor_ms:
        return anchor_ms + period_ms
    return anchor_ms + ((after_ms - anchor_ms) // period_ms + 1) * period_ms
