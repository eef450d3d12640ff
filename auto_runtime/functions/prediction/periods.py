"""Periods of a dataset (prediction-format §4.4): their six forms, and each period as an integer ordinal so that
"the period right after" is the ordinal plus one.

Ordinals: hours since 0001-01-01T00, days since 0001-01-01 (`date.toordinal`), ISO weeks as (the ordinal of
their Monday − 1) divided by 7 (0001-01-01 is a Monday), months as year·12 + month − 1, quarters as
year·4 + quarter − 1, years as the year.
"""

from __future__ import annotations

import datetime
import re
from typing import Final, Literal

Frequency = Literal["hour", "day", "week", "month", "quarter", "year"]
FREQUENCIES: Final[tuple[Frequency, ...]] = ("hour", "day", "week", "month", "quarter", "year")
DEFAULT_SEASON: Final[dict[Frequency, int]] = {"hour": 24, "day": 7, "week": 52, "month": 12, "quarter": 4, "year": 1}
FORM_EXAMPLES: Final[dict[Frequency, str]] = {
    "hour": "2026-07-01T13:00:00Z",
    "day": "2026-07-01",
    "week": "2026-W27",
    "month": "2026-07",
    "quarter": "2026-Q3",
    "year": "2026",
}
_FORMS: Final[dict[Frequency, re.Pattern[str]]] = {
    "hour": re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):00:00Z"),
    "day": re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})"),
    "week": re.compile(r"([0-9]{4})-W([0-9]{2})"),
    "month": re.compile(r"([0-9]{4})-([0-9]{2})"),
    "quarter": re.compile(r"([0-9]{4})-Q([1-4])"),
    "year": re.compile(r"([0-9]{4})"),
}


def form_of(text: str) -> Frequency | None:
    """The frequency whose form `text` has (whether or not it names a real period), or None."""
    for frequency, pattern in _FORMS.items():
        if pattern.fullmatch(text):
            return frequency
    return None


def ordinal_of(frequency: Frequency, text: str) -> int | None:
    """The ordinal of `text` read in the form of `frequency`, or None when it is not a real period of it."""
    match = _FORMS[frequency].fullmatch(text)
    if match is None:
        return None
    numbers = [int(group) for group in match.groups()]
    year = numbers[0]
    try:
        if frequency == "hour":
            if numbers[3] > 23:
                return None
            return datetime.date(year, numbers[1], numbers[2]).toordinal() * 24 + numbers[3]
        if frequency == "day":
            return datetime.date(year, numbers[1], numbers[2]).toordinal()
        if frequency == "week":
            return (datetime.date.fromisocalendar(year, numbers[1], 1).toordinal() - 1) // 7
    except ValueError:
        return None
    if year < 1:
        return None
    if frequency == "month":
        return year * 12 + numbers[1] - 1 if 1 <= numbers[1] <= 12 else None
    if frequency == "quarter":
        return year * 4 + numbers[1] - 1
    return year


def period_text(frequency: Frequency, ordinal: int) -> str:
    """The period of `ordinal` in the form of `frequency` (the inverse of `ordinal_of`)."""
    if frequency == "hour":
        day = datetime.date.fromordinal(ordinal // 24)
        return f"{day.isoformat()}T{ordinal % 24:02d}:00:00Z"
    if frequency == "day":
        return datetime.date.fromordinal(ordinal).isoformat()
    if frequency == "week":
        year, week, _ = datetime.date.fromordinal(ordinal * 7 + 1).isocalendar()
        return f"{year:04d}-W{week:02d}"
    if frequency == "month":
        return f"{ordinal // 12:04d}-{ordinal % 12 + 1:02d}"
    if frequency == "quarter":
        return f"{ordinal // 4:04d}-Q{ordinal % 4 + 1}"
    return f"{ordinal:04d}"
