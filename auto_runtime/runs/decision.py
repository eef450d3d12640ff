"""What a run's type decides about one message, and what the run's writer did with it.

A decision is data: the records for the run's stream, the due-work changes and the writes to other streams
(an event a workflow emits) that go in the same append, and the reply. Deciding never writes; the run's writer
(`writer.RunWriter`) appends a decision with the version its state was read at, in one transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from auto_runtime.ledger import DueWorkChanges, LeaseFence, NewRecord, Record, StreamWrite

S = TypeVar("S")
R = TypeVar("R")

NO_DUE_WORK = DueWorkChanges()


@dataclass(frozen=True)
class Loaded(Generic[S]):
    """A run's state as a type folds it, and the version of the run's stream it stands for (0: no stream)."""

    state: S
    version: int


@dataclass(frozen=True)
class Decision(Generic[R]):
    """One message's decision. `records` go to the run's stream at the loaded version; `other_writes` (streams
    other than the run's, each with its own expected version), `due_work` and the lease's `fence` go in the same
    append. A decision with no records and no due work appends nothing.

    `fresh_only`: the decision holds only on the state as the ledger holds it now (an input a kept state finds
    stale may apply to the run as another server moved it): when it was made on a state the run's actor kept,
    the writer reads the run again and decides again before answering."""

    reply: R
    records: Sequence[NewRecord] = ()
    due_work: DueWorkChanges = NO_DUE_WORK
    other_writes: Sequence[StreamWrite] = ()
    fence: LeaseFence | None = None
    fresh_only: bool = False
    state_after: Any = None
    """The run's state after `records`, when the decider knows it (a workflow's transition does): the writer
    keeps it instead of asking the decider to evolve the state it loaded."""

    @property
    def writes(self) -> bool:
        work = self.due_work
        return bool(self.records or self.other_writes or work.arm or work.cancel or work.fire)


@dataclass(frozen=True)
class Written(Generic[S, R]):
    """What the writer did with a decision: the reply, the records appended (the run's first, then the other
    writes'; none when the decision wrote nothing) and the run as it left it."""

    reply: R
    appended: list[Record] = field(default_factory=list)
    after: Loaded[S] | None = None
