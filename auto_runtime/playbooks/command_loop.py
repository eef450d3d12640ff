"""Load, fold, decide, append: how a command changes a stream under optimistic concurrency.

The stream is read, folded into a state, and `decide` returns the records to append (or raises a rejection,
which appends nothing). The append states the version that was read; when another change landed first, the
command reloads and decides again, a few times, then answers `conflict`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from auto_runtime.ledger import Ledger, NewRecord, Record, StreamName, StreamWrite, VersionConflict
from auto_runtime.problems import conflict

State = TypeVar("State")
ATTEMPTS = 4
CHANGED_AT_THE_SAME_MOMENT = "Another change was made at the same moment; send the request again."


async def decide_and_append(
    ledger: Ledger,
    stream: StreamName,
    fold: Callable[[Sequence[Record]], State],
    decide: Callable[[State], Sequence[NewRecord] | Awaitable[Sequence[NewRecord]]],
) -> tuple[State, list[Record]]:
    """Returns the state the decision was made on and the records appended (none when nothing changed)."""
    for _ in range(ATTEMPTS):
        history = await ledger.read_stream(stream)
        state = fold(history)
        decided = decide(state)
        records = await decided if isinstance(decided, Awaitable) else decided
        if not records:
            return state, []
        try:
            appended = await ledger.append([StreamWrite(stream, len(history), list(records))])
        except VersionConflict:
            continue
        return state, appended
    raise conflict(CHANGED_AT_THE_SAME_MOMENT)
