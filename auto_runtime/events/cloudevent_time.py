"""A published event's `time`: RFC 3339, read as an exact instant.

The seeds' rules: a `time` is RFC 3339 (`2026-10-01T09:00:00Z`, an offset such as `+02:00`, any number of
digits of a second); its date must exist in the calendar; a second of 60 is allowed only at the end of a day
in UTC, and such a leap second counts as the first second of the next day, so `2016-12-31T23:59:60Z` is the
same instant as `2017-01-01T00:00:00Z`. Times are compared as instants, to the last digit given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone
from fractions import Fraction

_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$",
    re.ASCII,
)


class EventTimeError(ValueError):
    """A `time` that is not one the runtime takes; its message is the rule it broke, in words."""


@dataclass(frozen=True)
class EventTime:
    """An instant: `utc` is the whole second in UTC (a leap second already moved to the next day's first
    second) and `fraction` the part of a second given, so two times are equal exactly when their instants are.
    """

    utc: datetime
    fraction: Fraction

    @property
    def shown(self) -> str:
        """The time as the runtime returns it: ISO 8601 UTC with milliseconds (the digits below cut off)."""
        moment = self.utc + timedelta(milliseconds=int(self.fraction * 1000))
        return f"{moment.year:04d}-" + moment.strftime("%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"

    def same_instant(self, other: EventTime) -> bool:
        return self.utc == other.utc and self.fraction == other.fraction


def parse_event_time(text: str) -> EventTime:
    """The instant `text` names, or `EventTimeError` saying which rule it breaks."""
    match = _RFC3339.match(text)
    if match is None:
        raise EventTimeError("expected an RFC 3339 time with its offset, such as 2026-10-01T09:00:00Z")
    year, month, day, hour, minute, second = (int(match.group(n)) for n in range(1, 7))
    digits = match.group(7) or ""
    try:
        date(year, month, day)
    except ValueError:
        raise EventTimeError("expected a date that exists in the calendar") from None
    if hour > 23 or minute > 59 or second > 60:
        raise EventTimeError("expected an hour from 00 to 23, a minute from 00 to 59 and a second from 00 to 60")
    offset = timedelta(0)
    if match.group(9) is not None:
        offset_hours, offset_minutes = int(match.group(10)), int(match.group(11))
        if offset_hours > 23 or offset_minutes > 59:
            raise EventTimeError("expected an offset from -23:59 to +23:59")
        offset = timedelta(hours=offset_hours, minutes=offset_minutes)
        if match.group(9) == "-":
            offset = -offset
    try:
        local = datetime(year, month, day, hour, minute, min(second, 59), tzinfo=timezone(offset))
        utc = local.astimezone(UTC)
    except (ValueError, OverflowError):
        raise EventTimeError("expected a time between the years 0001 and 9999 in UTC") from None
    if second == 60:
        if (utc.hour, utc.minute) != (23, 59):
            raise EventTimeError("expected a second of 60 only at the end of a day in UTC, at 23:59:60Z")
        try:
            utc = utc + timedelta(seconds=1)
        except OverflowError:
            raise EventTimeError("expected a time between the years 0001 and 9999 in UTC") from None
    fraction = Fraction(int(digits), 10 ** len(digits)) if digits else Fraction(0)
    return EventTime(utc=utc, fraction=fraction)
