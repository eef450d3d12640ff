"""How a run's type takes part in the one write loop: `RunDecider` (load, decide, evolve) and the common
decider base `HistoryDecider`, whose state is the run's records.

A decider is pure in what it writes: `decide` reads its state and the message (and may compute: check a schema
off the Trio thread, evaluate a workflow step in the sandbox), and returns a `Decision`; only the run's writer
appends. `kind` names the state a decider folds, so the run's actor keeps one state per kind and drops every
other when an append moves the stream.
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from auto_runtime.ledger import Ledger, PlaybookScope, Record
from auto_runtime.runs.decision import Decision, Loaded
from auto_runtime.runs.facts import run_stream

S = TypeVar("S")
M = TypeVar("M")
M_contra = TypeVar("M_contra", contravariant=True)
R = TypeVar("R")


class RunDecider(Protocol[S, M_contra, R]):
    """A type's decision about one kind of message to a run."""

    kind: str
    """The state this decider folds (deciders of one kind share the state the run's actor keeps)."""

    async def load(self, ledger: Ledger, scope: PlaybookScope, run_id: str) -> Loaded[S]:
        """The run's state as the ledger holds it now."""

    def decide(self, loaded: Loaded[S], message: M_contra) -> Decision[R] | Awaitable[Decision[R]]:
        """What the message does to the run: records, due work and the reply. Never writes."""

    def evolve(self, loaded: Loaded[S], appended: Sequence[Record]) -> Loaded[S] | None:
        """The state after the run's own records `appended`; None when it must be read again."""


@dataclass(frozen=True)
class RunHistory:
    """A run's records in stream order (its state for every decider that folds records), and its address."""

    scope: PlaybookScope
    run_id: str
    records: tuple[Record, ...]

    @property
    def version(self) -> int:
        return len(self.records)


class HistoryDecider(abc.ABC, Generic[M, R]):
    """A decider whose state is the run's records: loaded by reading the stream, evolved by adding the appended
    ones. Subclasses define `decide`."""

    kind = "history"

    async def load(self, ledger: Ledger, scope: PlaybookScope, run_id: str) -> Loaded[RunHistory]:
        records = tuple(await ledger.read_stream(run_stream(scope, run_id)))
        return Loaded(RunHistory(scope, run_id, records), len(records))

    def evolve(self, loaded: Loaded[RunHistory], appended: Sequence[Record]) -> Loaded[RunHistory]:
        history = loaded.state
        records = history.records + tuple(appended)
        return Loaded(RunHistory(history.scope, history.run_id, records), len(records))

    @abc.abstractmethod
    def decide(self, loaded: Loaded[RunHistory], message: Any) -> Decision[Any] | Awaitable[Decision[Any]]:
        """What the message does to the run, decided on its records."""
