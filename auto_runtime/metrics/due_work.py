"""Due work: the entries the timer loop takes up, and how late each was taken up.

`taken_up` is called with what one sweep read; an entry already being carried out (a call in flight, read
again while its caller has not taken its answer) is left out, so each entry counts once a take-up."""

from __future__ import annotations

from collections.abc import Container, Sequence
from datetime import datetime
from typing import Protocol

from auto_runtime.metrics.state import METERING


class DueEntryLike(Protocol):
    @property
    def due_at(self) -> datetime: ...

    @property
    def due_key(self) -> object: ...


def taken_up(entries: Sequence[DueEntryLike], now: datetime, in_flight: Container[object]) -> None:
    if not METERING.on:
        return
    instruments = METERING.instruments
    for entry in entries:
        if entry.due_key in in_flight:
            continue
        instruments.due_entries.add(1)
        instruments.due_lateness.record(max((now - entry.due_at).total_seconds(), 0.0))
