"""A command on one stream under optimistic concurrency: load, decide, append with the version loaded, and the one
version-clash retry of every writer that is not a run's (a run's writer is `auto_runtime.runs.writer`).

`load` gives the state the command decides on and the stream version it stands for: read and folded from the
stream (`folding_reader`), or kept in memory by an actor that checks the version first. `decide` returns the
records to append, none when the command changes nothing (then nothing is appended), or raises a rejection
(which appends nothing and leaves the loop). The append states the version loaded; a `VersionConflict` means
another writer moved the stream in between: `forget` (when given) drops what the caller kept, and the command
loads and decides again, up to `attempts` decisions, then raises what the caller's `clashed` makes, so the
answer to a stream that kept moving is each caller's own.

Concurrency: nothing is held across the loop; the stream's expected version is the only guard, so the loop is
correct across tasks, actors and servers alike. A caller that takes turns in its own process (an actor, a lock)
meets only other processes' writes here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from .due_work import DueWorkChanges
from .errors import VersionConflict
from .lease import LeaseFence
from .ledger import Ledger
from .records import NewRecord, Record, StreamWrite
from .streams import StreamName

S = TypeVar("S")

ATTEMPTS = 4
"""Decisions a command makes before it gives up, when the caller does not say (each clash costs one)."""


@dataclass(frozen=True)
class Folded(Generic[S]):
    """A stream's state as a command folds it, and the stream version it stands for (0: no stream yet)."""

    state: S
    version: int


@dataclass(frozen=True)
class Decided(Generic[S]):
    """What a command did: the state its decision was made on, the version that state stands for, and the records
    appended at that version (none when the decision held none)."""

    state: S
    version: int
    appended: list[Record]


def folding_reader(
    ledger: Ledger, stream: StreamName, fold: Callable[[Sequence[Record]], S]
) -> Callable[[], Awaitable[Folded[S]]]:
    """A `load` that reads the whole stream and folds it (its version: how many records it holds)."""

    async def load() -> Folded[S]:
        history = await ledger.read_stream(stream)
        return Folded(fold(history), len(history))

    return load


async def decide_and_append(
    ledger: Ledger,
    stream: StreamName,
    load: Callable[[], Awaitable[Folded[S]]],
    decide: Callable[[S], Sequence[NewRecord] | Awaitable[Sequence[NewRecord]]],
    *,
    clashed: Callable[[], Exception],
    attempts: int = ATTEMPTS,
    forget: Callable[[], None] | None = None,
    due_work: DueWorkChanges | None = None,
    fence: LeaseFence | None = None,
) -> Decided[S]:
    """Load, decide and append to `stream` (see the module's rules); `clashed()` is raised after `attempts`
    decisions each lost to another writer. `due_work` and `fence` go with the append (a decision that appends
    nothing applies no due work either: the caller decides what to do with it then)."""
    for _ in range(attempts):
        folded = await load()
        decided = decide(folded.state)
        records = await decided if isinstance(decided, Awaitable) else decided
        if not records:
            return Decided(folded.state, folded.version, [])
        try:
            appended = await ledger.append(
                [StreamWrite(stream, folded.version, list(records))], due_work=due_work, fence=fence
            )
        except VersionConflict:
            if forget is not None:
                forget()
            continue
        return Decided(folded.state, folded.version, appended)
    raise clashed()
