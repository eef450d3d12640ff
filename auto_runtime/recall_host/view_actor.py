"""The actor of one recall view: one per (org, playbook, function name), in its playbook's child registry
`recall-view-actors[org/playbook]` (see `views_actor`), holding the view's row (version, checkpoint, state).

Its one message, `FoldPart`, is its part of a page the playbook's pass read once for all its views: the actor
folds the records after its own checkpoint on the sandbox pool (`kind="fold"`), and writes its row once,
conditional on the version and checkpoint it holds and fenced by the workflow lease. A part none of whose events
the view's filters may take (the playbook's other records, other types) only moves the checkpoint, here, without
a worker (`fold_page.passed_over`).

Invariants:
- The row an actor holds is the ledger's: it is read in `on_start` (so a new life, after a crash or a
  passivation, resumes from the checkpoint row), replaced by each write that lands, and dropped after a write
  the ledger refused (a newer version reset the row, another writer moved it): the next message's row, which
  the pass has just read, is taken instead. A row the pass changed (a new version, `waiting` to `rebuilding`)
  is taken from the message too. So no event is folded twice into a view: an event is folded only after the
  checkpoint the ledger holds, and a fold is kept only by a write conditional on that checkpoint.
- A fault of the actor (its row unreadable, the ledger failing its write) ends its life for the registry to
  restart on its next message; the playbook's other view actors go on. A lost lease is no fault: it is
  answered (`FoldAnswer.lease_lost`), and the pass ends.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from auto_runtime.actors import Actor
from auto_runtime.functions.recall.document import RecallDocument
from auto_runtime.functions.recall.fold_page import PageResult, ViewState, fold_page, passed_over
from auto_runtime.json_limits import compact_json
from auto_runtime.ledger import LeaseFence, LeaseLost, Ledger
from auto_runtime.ledger.recall_views import Expected, ViewRow
from auto_runtime.recall_host.page_items import PageEvent, item_for, key_of, program_of
from auto_runtime.sandbox.fair_queue import JobOwner
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.pool import SandboxPool
from auto_runtime.sandbox.workers import NoWorkerFree

JOB_SECONDS = 3_600.0
"""A fold job's own bound: its sandboxes have bounds of their own (10 s an event, 2 s a page)."""


@dataclass(frozen=True)
class FoldPart:
    """Fold the view's part of a page read for the playbook: `row` is the view's row as the pass read it before
    the page, `events` the page, `at_end` whether the page reached the end of the history the pass read."""

    row: ViewRow
    document: RecallDocument
    events: Sequence[PageEvent]
    at_end: bool
    fence: LeaseFence


@dataclass(frozen=True)
class FoldAnswer:
    """The row to go on with in this pass, or None when the view waits for the next pass (stalled, an event cost
    it a try, its write was refused, or no worker became free); `lease_lost` when the fence no longer holds."""

    row: ViewRow | None
    lease_lost: bool = False


class ViewActor(Actor[FoldPart, FoldAnswer]):
    """One life of a view's actor (see the module's invariants)."""

    def __init__(self, ledger: Ledger, pool: SandboxPool, org: str, playbook: str, name: str) -> None:
        self.ledger = ledger
        self.pool = pool
        self.org = org
        self.playbook = playbook
        self.name = name
        self.row: ViewRow | None = None

    async def on_start(self) -> None:
        self.row = await self.ledger.recall_views.one(self.org, self.playbook, self.name)

    async def receive(self, message: FoldPart) -> FoldAnswer:
        row = self._current(message.row)
        try:
            moved = await self._fold(row, message)
        except LeaseLost:
            self.row = None
            return FoldAnswer(None, lease_lost=True)
        if moved is None:
            return FoldAnswer(None)
        if moved.state == "stalled" or moved.tries > row.tries:
            return FoldAnswer(None)
        return FoldAnswer(moved)

    def _current(self, read: ViewRow) -> ViewRow:
        """The row to fold from: the one held, unless the pass's read shows the row was made anew or moved."""
        held = self.row
        if held is None or (held.version, held.state, held.saved_at) != (read.version, read.state, read.saved_at):
            self.row = read
            return read
        return held

    async def _fold(self, row: ViewRow, message: FoldPart) -> ViewRow | None:
        """Fold the page's records after the row's checkpoint and write the row; the row written, or None when
        nothing could be written (no worker free, or the ledger refused the write)."""
        after = key_of(row.checkpoint)
        program = program_of(message.document)
        items = [
            item_for(row.name, message.document, program, key, record, event)
            for key, record, event in message.events
            if after is None or key > after
        ]
        state = ViewState(
            row.view,
            row.checkpoint,
            row.checkpoint_at,
            json.loads(row.last_event) if row.last_event else None,
            row.folded,
            row.tries,
        )
        engine = self.pool.engine

        def job(control: RunControl) -> tuple[PageResult, bool]:
            return fold_page(engine, program, state, items, control), False

        result = passed_over(state, items)
        if result is None:
            try:
                result = await self.pool.workers.submit(
                    job, RunControl(time.monotonic() + JOB_SECONDS), "fold", JobOwner(self.org, self.playbook)
                )
            except NoWorkerFree:
                return None
        moved = row_after(row, result, caught_up=message.at_end and result.examined == len(items))
        if moved != row:
            written = await self.ledger.recall_views.advance(
                moved, Expected(row.version, row.checkpoint), message.fence
            )
            if not written:
                self.row = None
                return None
            self.row = moved
        return moved


def row_after(row: ViewRow, result: PageResult, *, caught_up: bool) -> ViewRow:
    """The row once a page's result is folded into it (stalled, caught up, or still building)."""
    state = result.state
    moved = replace(
        row,
        view=state.view_json,
        checkpoint=state.checkpoint,
        checkpoint_at=state.checkpoint_at,
        last_event=compact_json(dict(state.last_event)) if state.last_event is not None else None,
        folded=state.folded,
        tries=state.tries,
    )
    if result.stall is not None:
        return replace(moved, state="stalled", stalled=compact_json(result.stall.as_json()))
    if caught_up and row.state == "rebuilding":
        return replace(moved, state="live")
    return moved
