"""Durations, read as whole milliseconds, in the two grammars the pages give (they differ, so both are here):

- `duration_ms`, a workflow's and a prediction function's (workflow-format spec 5): ISO 8601 in weeks, days,
  hours, minutes and seconds, each part a decimal (`.` or `,`), combinable, or a mapping of days, hours,
  minutes, seconds and milliseconds; answers the milliseconds or the words that refuse the value;
- `interaction_duration_ms`, an interaction document's (interaction-format §1.1, decision on grammar): `PnW`
  alone, or `PnD` and/or `T` with `nH`, `nM`, `n[.f]S`, whole numbers but the seconds; answers None for
  anything else.

Years and months are refused by both: their length varies.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

_ISO = re.compile(
    r"^P(?!$)(?:(?P<weeks>\d+(?:[.,]\d+)?)W)?(?:(?P<days>\d+(?:[.,]\d+)?)D)?"
    r"(?:T(?=\d)(?:(?P<hours>\d+(?:[.,]\d+)?)H)?(?:(?P<minutes>\d+(?:[.,]\d+)?)M)?(?:(?P<seconds>\d+(?:[.,]\d+)?)S)?)?$"
)
_YEARS_OR_MONTHS = re.compile(r"^P(?:\d+(?:[.,]\d+)?[YM])")
_UNIT_MS = {
    "weeks": Decimal(604_800_000),
    "days": Decimal(86_400_000),
    "hours": Decimal(3_600_000),
    "minutes": Decimal(60_000),
    "seconds": Decimal(1000),
    "milliseconds": Decimal(1),
}
MAPPING_KEYS = ("days", "hours", "minutes", "seconds", "milliseconds")

MALFORMED = (
    "A duration is ISO 8601 in weeks, days, hours, minutes and seconds, such as PT30S or P1DT2H, "
    "or a mapping of days, hours, minutes, seconds and milliseconds"
)
YEARS_OR_MONTHS = "A duration cannot count years or months, whose length varies; write days or weeks"
NOT_NEGATIVE = "A duration's days, hours, minutes, seconds and milliseconds are numbers not below 0"


def _rounded(total: Decimal) -> int:
    return int(total.quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def duration_ms(value: object) -> int | str:
    """The milliseconds of a literal duration, or the words that refuse it."""
    if isinstance(value, str):
        text = value.strip()
        if _YEARS_OR_MONTHS.match(text) or re.match(r"^P[^T]*[YM]", text):
            return YEARS_OR_MONTHS
        match = _ISO.match(text)
        if match is None:
            return MALFORMED
        total = Decimal(0)
        for unit, amount in match.groupdict().items():
            if amount is not None:
                try:
                    total += Decimal(amount.replace(",", ".")) * _UNIT_MS[unit]
                except InvalidOperation:
                    return MALFORMED
        return _rounded(total)
    if isinstance(value, dict):
        if not value or any(key not in MAPPING_KEYS for key in value):
            return MALFORMED
        total = Decimal(0)
        for unit, amount in value.items():
            if isinstance(amount, bool) or not isinstance(amount, int | float):
                return MALFORMED
            if amount < 0 or amount != amount or amount in (float("inf"),):
                return NOT_NEGATIVE
            total += Decimal(str(amount)) * _UNIT_MS[unit]
        return _rounded(total)
    return MALFORMED


def iso_ms(ms: int) -> str:
    """An ISO 8601 duration for a number of milliseconds, such as `P30D` or `PT1M`."""
    days, rest = divmod(ms, 86_400_000)
    hours, rest = divmod(rest, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds = Decimal(rest) / 1000
    text = "P" + (f"{days}D" if days else "")
    time = (f"{hours}H" if hours else "") + (f"{minutes}M" if minutes else "")
    if seconds:
        time += f"{seconds.normalize():f}S"
    return text + ("T" + time if time else "") if (days or time) else "PT0S"


_INTERACTION = re.compile(
    r"^P(?:(?P<weeks>\d+)W|(?P<days>\d+D)?(?:T(?P<hours>\d+H)?(?P<minutes>\d+M)?(?P<seconds>\d+(?:\.\d+)?S)?)?)$"
)
MINUTE_MS = 60_000
DAY_MS = 24 * 60 * MINUTE_MS


def interaction_duration_ms(text: object) -> int | None:
    """An interaction document's duration in milliseconds (rounded), or None when `text` is not one it takes."""
    if not isinstance(text, str):
        return None
    found = _INTERACTION.match(text)
    if found is None or text in ("P", "PT") or text.endswith("T"):
        return None
    if found["weeks"] is not None:
        return int(found["weeks"]) * 7 * DAY_MS
    total = Decimal(0)
    for name, unit in (("days", DAY_MS), ("hours", 60 * MINUTE_MS), ("minutes", MINUTE_MS), ("seconds", 1000)):
        part = found[name]
        if part is not None:
            total += Decimal(part[:-1]) * unit
    return int(total.to_integral_value())
