"""Times as the runtime shows them: ISO 8601 UTC with milliseconds, such as `2026-10-01T09:00:00.000Z`.

Below every room (it imports nothing of the runtime), so the tools, the playbooks and the hosts share it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


def iso_utc(moment: datetime) -> str:
    moment = moment.astimezone(UTC)
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}:{moment.minute:02d}:"
        f"{moment.second:02d}.{moment.microsecond // 1000:03d}Z"
    )


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def microseconds_since_epoch(moment: datetime) -> int:
    """Exact UTC microseconds since 1970 (no float rounding)."""
    return (moment - EPOCH) // timedelta(microseconds=1)


def now_utc() -> datetime:
    return datetime.now(UTC)
