"""The one writer of one run: load, decide, append with the version read, and the one version-clash retry.

Held by the run's actor (`actor.RunActor`), so within this process the run's messages are decided one at a
time, in arrival order. Across processes (another server, a tool that writes the ledger) the append's expected
version guards: a `VersionConflict` means someone else moved the run, and the writer reads it again and decides
again, up to `ATTEMPTS` times, then raises what the caller chose (`RunKeptMoving` unless told otherwise). This
is the only place above the ledger that catches a version clash on a run's stream.

A decision that holds only due work (an entry marked fired with nothing to record) changes the due-work table
alone, under the decision's fence, without a version check: it moves no stream.

Between two messages the writer keeps, per decider kind, the state the last append left, so a queued message
is decided without reading the run again; every other kind's kept state is dropped when an append moves the
stream, and all of it when a message fails (`forget`).

The writer also knows the run's whole stream while it can (`known_records`): from the moment a decision is made
on the run's records (a `RunHistory`), extended by each of its own appends made at exactly the version it knows
(the stream is append-only, so an append accepted at that version proves the records before it are the known
ones), and forgotten on a clash, on an append at any other version, and on `forget`. So a caller that just wrote
the run can answer it as recorded without reading it back.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from auto_runtime.ledger import Ledger, PlaybookScope, Record, StreamWrite, VersionConflict
from auto_runtime.runs.deciders import RunDecider, RunHistory
from auto_runtime.runs.decision import Decision, Loaded, Written
from auto_runtime.runs.facts import run_stream

S = TypeVar("S")
M = TypeVar("M")
R = TypeVar("R")

ATTEMPTS = 16
"""Version clashes one message survives (each means another writer moved the run meanwhile)."""


class RunKeptMoving(Exception):
    """Other writers kept moving the run while a message was decided; nothing of the message was appended."""


class RunWriter:
    """The writer of the run `run_id` of `scope` (see the module's rules)."""

    def __init__(self, ledger: Ledger, scope: PlaybookScope, run_id: str) -> None:
        self.ledger = ledger
        self.scope = scope
        self.run_id = run_id
        self.stream = run_stream(scope, run_id)
        self._kept: dict[str, Loaded[Any]] = {}
        self._records: tuple[Record, ...] | None = None

    def forget(self) -> None:
        """Drop every kept state: the next message reads the run again."""
        self._kept.clear()
        self._records = None

    def known_records(self) -> tuple[Record, ...] | None:
        """The run's whole stream as of this writer's last append, when it knows it (see the module's rules)."""
        return self._records

    def kept(self, kind: str) -> Loaded[Any] | None:
        """The state of `kind` the last append left, if kept."""
        return self._kept.get(kind)

    async def write(
        self,
        decider: RunDecider[S, M, R],
        message: M,
        *,
        kept_moving: Callable[[], Exception] | None = None,
        first: Loaded[S] | None = None,
        attempts: int = ATTEMPTS,
    ) -> Written[S, R]:
        """Decide `message` on the run's state and append the decision (see the module's rules). `first`: the state
        to decide on first instead of reading it (a run id this server minted names no stream yet); a clash reads.
        `attempts`: how many decisions a clash may cost (1 for a start at version 0, which a clash makes stale)."""
        for _ in range(attempts):
            loaded: Loaded[S] | None = self._kept.pop(decider.kind, None) if first is None else first
            first = None
            fresh = loaded is None
            if loaded is None:
                loaded = await decider.load(self.ledger, self.scope, self.run_id)
            if isinstance(loaded.state, RunHistory):
                self._records = loaded.state.records
            decided = decider.decide(loaded, message)
            decision: Decision[R] = await decided if inspect.isawaitable(decided) else decided
            if decision.fresh_only and not fresh:
                continue
            if not decision.writes:
                self._kept[decider.kind] = loaded
                return Written(decision.reply, [], loaded)
            writes = [*decision.other_writes]
            if decision.records:
                writes.insert(0, StreamWrite(self.stream, loaded.version, list(decision.records)))
            if not writes:
                await self.ledger.due_work.change(decision.due_work, fence=decision.fence)
                self._kept[decider.kind] = loaded
                return Written(decision.reply, [], loaded)
            try:
                appended = await self.ledger.append(writes, due_work=decision.due_work, fence=decision.fence)
            except VersionConflict:
                self._kept.clear()
                self._records = None
                continue
            self._kept.clear()
            own = appended[: len(decision.records)]
            known = self._records
            if decision.records:
                fits = known is not None and len(known) == loaded.version
                self._records = known + tuple(own) if fits and known is not None else None
            after: Loaded[S] | None
            if decision.state_after is not None:
                after = Loaded(decision.state_after, loaded.version + len(decision.records))
            else:
                after = decider.evolve(loaded, own) if decision.records else loaded
            if after is not None:
                self._kept[decider.kind] = after
            return Written(decision.reply, appended, after)
        raise (
            kept_moving()
            if kept_moving is not None
            else RunKeptMoving(f"other writers kept moving the run {self.run_id}; nothing was recorded, send it again")
        )
