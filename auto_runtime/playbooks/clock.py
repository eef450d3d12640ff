"""Times as the runtime shows them: ISO 8601 UTC with milliseconds, such as `2026-10-01T09:00:00.000Z`."""

from __future__ import annotations

from datetime import UTC, datetime


def iso_utc(moment: datetime) -> str:
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def now_utc() -> datetime:
    return datetime.now(UTC)
