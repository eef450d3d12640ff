"""The ISO 8601 durations of an interaction document (interaction-format §1.1, decision on grammar): `PnW`, or
`PnD` and/or `T` with `nH`, `nM`, `n[.f]S`; years and months refused. Read as whole milliseconds."""

from __future__ import annotations

import re
from decimal import Decimal

_DURATION = re.compile(
    r"^P(?:(?P<weeks>\d+)W|(?P<days>\d+D)?(?:T(?P<hours>\d+H)?(?P<minutes>\d+M)?(?P<seconds>\d+(?:\.\d+)?S)?)?)$"
)
MINUTE_MS = 60_000
DAY_MS = 24 * 60 * MINUTE_MS


def duration_ms(text: object) -> int | None:
    """The duration in milliseconds (rounded), or None when `text` is not one this format takes."""
    if not isinstance(text, str):
        return None
    found = _DURATION.match(text)
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
