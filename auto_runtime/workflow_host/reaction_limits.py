"""The event-trigger rate limit and the `reaction_refused` tallies (spec 10, "Rate" and "Refusals").

`StartBudget`: each workflow starts at most `STARTS_PER_MINUTE` runs from event triggers per minute; further
starts are queued for later minutes (`QUEUED_MAX` at most), then refused. A start is given a minute: the current
one (start now) or a later one (queue it until that minute begins). Schedules are not counted.

`RefusalTally`: one `reaction_refused` per workflow and minute, with how many times its triggers did not start it
in that minute (`count`) and the last `reason`; the record is appended once the minute has passed, under an id
derived from the workflow and the minute, so appending it twice records it once.

Both live in the memory of the lease holder's `Reactions`: after a restart or a change of holder the budget
starts afresh (queued starts are durable due work and still run) and a tally not yet appended is lost.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from auto_runtime.clock_text import iso_utc
from auto_runtime.ledger import NewRecord, PlaybookScope

STARTS_PER_MINUTE: Final = 60
QUEUED_MAX: Final = 1_000
REACTION_REFUSED: Final = "reaction_refused"
MINUTE_MS: Final = 60_000
_NAMESPACE: Final = uuid.UUID("6c1f2b0e-7d4a-5c3b-9a8e-2f4d6b8c0a1e")

WorkflowKey = tuple[str, str, str]
"""(org, playbook, workflow name)."""


def minute_of(ms: int) -> int:
    return ms // MINUTE_MS


class StartBudget:
    """Per workflow and minute, how many event-triggered starts were given that minute."""

    def __init__(self) -> None:
        self._given: dict[WorkflowKey, dict[int, int]] = {}

    def take(self, workflow: WorkflowKey, now_ms: int) -> int | None:
        """The minute the start may happen in (now or later), or None when the queue is full (refused)."""
        now = minute_of(now_ms)
        given = {minute: count for minute, count in self._given.get(workflow, {}).items() if minute >= now}
        self._given[workflow] = given
        queued = sum(count for minute, count in given.items() if minute > now)
        minute = now
        while given.get(minute, 0) >= STARTS_PER_MINUTE:
            minute += 1
        if minute > now and queued >= QUEUED_MAX:
            return None
        given[minute] = given.get(minute, 0) + 1
        return minute


@dataclass
class _Tally:
    scope: PlaybookScope
    name: str
    version: int
    minute: int
    count: int
    reason: str


class RefusalTally:
    """The refusals of the current minutes, per workflow, until they are appended as `reaction_refused`."""

    def __init__(self) -> None:
        self._open: dict[tuple[WorkflowKey, int], _Tally] = {}

    def note(self, scope: PlaybookScope, name: str, version: int, now_ms: int, reason: str) -> None:
        minute = minute_of(now_ms)
        key = ((scope.org, scope.playbook, name), minute)
        tally = self._open.get(key)
        if tally is None:
            self._open[key] = _Tally(scope, name, version, minute, 1, reason)
        else:
            tally.count += 1
            tally.reason = reason
            tally.version = version

    def due(self, now_ms: int, *, everything: bool = False) -> list[tuple[PlaybookScope, NewRecord]]:
        """The `reaction_refused` records of the minutes that have passed (all of them with `everything`),
        taken out of the tally."""
        now = minute_of(now_ms)
        ready = [key for key, tally in self._open.items() if everything or tally.minute < now]
        return [(self._open[key].scope, refused_record(self._open.pop(key))) for key in ready]


def refused_record(tally: _Tally) -> NewRecord:
    minute = iso_utc(datetime.fromtimestamp(tally.minute * 60, tz=UTC))
    record_id = str(uuid.uuid5(_NAMESPACE, f"{tally.scope.key}\n{tally.name}\n{tally.minute}"))
    data: dict[str, Any] = {"minute": minute, "count": tally.count, "reason": tally.reason}
    metadata = {
        "correlation_id": None,
        "causation_id": None,
        "by": f"playbook:{tally.scope.playbook}",
        "definition": {"type": "workflow", "name": tally.name, "version": tally.version},
    }
    return NewRecord(REACTION_REFUSED, data, metadata, id=record_id)
