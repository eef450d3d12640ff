"""`DueWake`: which writes of due work wake the other servers sharing the ledger (PostgreSQL's `DUE_CHANNEL`).

Servers on one database share the work by partitions (`partitions`); a server that records due work for a
partition another server holds (a forwarded start or event, an offer, an answer, a cancel, handed-over scores)
has the ledger wake that holder, so it fires the entry now rather than at its next sweep. No caller asks for it:
the store asks `wakes(changes)` of every write that carries due-work changes (an append's, or the due-work
port's own), and when it answers True, the write's one notification is sent once the write committed, never
inside its transaction (`postgres.notifier`). Every server listening is woken (`Ledger.due_recorded`); the holder's
timer loop sweeps.

The rule: a write wakes when its changes leave an entry armed (an arm its own cancels do not undo) that is due by
`horizon` from now (the clock due work is judged against) in a partition this server does not hold. Why an
entry due later needs no wake: a holder's timer loop sleeps at most its sweep (`horizon`, the same setting on
every server of a deployment) and each sweep reads the next due time of its partitions, so it sees the entry in
time. An arm the table refuses (its key has a row already) may still wake: a spurious wake costs a holder one
sweep, a missing one a request kept waiting.

The workflow host tells which partitions this server holds (`watch`, once at its start); until then, and on a
ledger no other server shares (SQLite, where the store never asks), this server holds every partition and no
write wakes another.

Concurrency: `watch` and `wakes` are called from Trio tasks of this process.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from .due_work import EncodedChanges
from .partitions import Partitioning, partition_of_due
from .records import to_microseconds


class DueWake:
    """The rule above, for one ledger: which partitions this server holds, how far ahead a wake is worth it."""

    def __init__(self, partitioning: Partitioning) -> None:
        self._partitioning = partitioning
        self._holds: Callable[[int], bool] | None = None
        self._horizon_us = 0
        self._clock: Callable[[], datetime] | None = None

    def watch(self, holds: Callable[[int], bool], horizon: timedelta, clock: Callable[[], datetime]) -> None:
        """From now on, a partition is held here when `holds(partition)`; entries due by `horizon` after `clock()`
        wake the other servers (the workflow host's partitions, its sweep and its clock)."""
        self._holds = holds
        self._horizon_us = max(int(horizon / timedelta(microseconds=1)), 0)
        self._clock = clock

    def wakes(self, changes: EncodedChanges) -> bool:
        """Whether a write of `changes` wakes the other servers once it committed (see the module)."""
        holds, clock = self._holds, self._clock
        if holds is None or clock is None or not changes.arm:
            return False
        cancelled = {(key.scope_key, key.run_id, key.key) for key in changes.cancel}
        latest = to_microseconds(clock()) + self._horizon_us
        count = self._partitioning.count
        return any(
            entry.due_us <= latest
            and (entry.scope_key, entry.run_id, entry.key) not in cancelled
            and not holds(partition_of_due(entry.scope_key, entry.run_id, count))
            for entry in changes.arm
        )
