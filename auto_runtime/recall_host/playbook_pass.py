"""One pass over one playbook's views: definitions first, then pages of its history folded into each view.

A pass (recall-format.md, "How the view is kept"):

1. **Definitions.** The playbook's active recall functions (the `definitions` projection) against its rows: a
   new function gets a row, a new version resets its row to `view.initial` with no checkpoint, a retired one's
   row is dropped. Of the views still to build, the first `RECALL_MAX_REBUILDS` in the order their versions were
   saved are `rebuilding`; the others are `waiting`. Live and stalled views hold no place.
2. **Reading.** The live views share one read of the history, and the views being built share another: oldest
   first, from the smallest checkpoint of the group, in pages of up to 1,000 records (`Ledger.read_playbook_after`,
   which on PostgreSQL reads only behind the oldest write still open). A view folds only the records after its
   own checkpoint; a view that catches up joins the live views' read at the next page.
3. **Folding.** Each view folds its part of the page on the sandbox pool (`kind="fold"`: at most half the
   workers), in a sandbox of its own, within the page's 2 seconds (`fold_page`).
4. **Writing.** Each view that moved is written once a page, conditional on the version and checkpoint it was
   read at, and fenced by the workflow lease: a row reset by a newer version, or a lost lease, writes nothing.
   A view whose checkpoint reached the end of the history the pass read is `live`.

At most 10 pages a pass in all (the live views' reads and the rebuilding views' reads together). A view that
stalls, or whose event cost a try, is left for the next pass.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import trio

from auto_runtime.functions.recall.document import RecallDocument, parse_document
from auto_runtime.functions.recall.fold_page import FoldProgram, PageItem, PageResult, ViewState, fold_page
from auto_runtime.json_limits import compact_json, depth_of
from auto_runtime.ledger import LeaseFence, Ledger, PlaybookScope, Record
from auto_runtime.ledger.paging import SortKey
from auto_runtime.ledger.recall_views import Expected, ViewRow
from auto_runtime.playbooks.clock import iso_utc
from auto_runtime.playbooks.definition_facts import DEFINITIONS_PROJECTION, version_of
from auto_runtime.playbooks.run_facts import RUN_FAILED, RUN_REJECTED, RUN_STARTED, RUN_SUCCEEDED
from auto_runtime.sandbox.fair_queue import JobOwner
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.limits import MAX_DEPTH
from auto_runtime.sandbox.pool import SandboxPool
from auto_runtime.sandbox.workers import NoWorkerFree
from auto_runtime.workflow_host.playbook_events import playbook_event

log = logging.getLogger("auto_runtime.recall_host")

PAGE_RECORDS = 1_000
PAGES_A_PASS = 10
JOB_SECONDS = 3_600.0
"""A fold job's own bound: its sandboxes have bounds of their own (10 s an event, 2 s a page)."""
RUN_FACTS = frozenset({RUN_STARTED, RUN_SUCCEEDED, RUN_REJECTED, RUN_FAILED})
PASSED_OVER_KEPT = 10_000
DOCUMENTS_KEPT = 4_096
"""Parsed documents kept by (org, playbook, name, version); past this many they are all parsed again."""


def checkpoint_of(key: SortKey) -> str:
    """The opaque checkpoint text of a record's place in the history (two equal ones name one place)."""
    return f"{key[0]}.{key[1]}"


def key_of(checkpoint: str | None) -> SortKey | None:
    if checkpoint is None:
        return None
    first, _dot, second = checkpoint.partition(".")
    return int(first), int(second)


@dataclass(frozen=True)
class _Active:
    """An active recall function of the playbook: its version, when it was saved, its parsed document."""

    name: str
    version: int
    saved_at: str
    document: RecallDocument | None


def _groups(rows: Iterable[ViewRow]) -> list[list[ViewRow]]:
    """The live views, which share one read from the smallest of their checkpoints, and the views being built,
    which share another: a rebuild never holds back the live views' following of the history."""
    live = [row for row in rows if row.state == "live"]
    building = [row for row in rows if row.state != "live"]
    return [group for group in (live, building) if group]


def fresh_row(org: str, playbook: str, active: _Active) -> ViewRow:
    initial = active.document.initial if active.document is not None else None
    return ViewRow(
        org=org,
        playbook=playbook,
        name=active.name,
        version=active.version,
        saved_at=active.saved_at,
        state="waiting",
        view=compact_json(initial),
        checkpoint=None,
        checkpoint_at=None,
        last_event=None,
        folded=0,
        tries=0,
        stalled=None,
    )


def program_of(document: RecallDocument) -> FoldProgram:
    wheres: list[str] = []
    for event_filter in document.filters:
        if event_filter.where is not None and event_filter.where not in wheres:
            wheres.append(event_filter.where)
    return FoldProgram(document.module, document.module_first_line, tuple(wheres), document.view_schema)


def item_for(
    name: str,
    document: RecallDocument,
    program: FoldProgram,
    key: SortKey,
    record: Record,
    event: Mapping[str, Any] | None,
) -> PageItem:
    """The page item a record is for this view: with its event and `where` indices when a filter may take it."""
    at = record.metadata.get("at")
    at_text = at if isinstance(at, str) else iso_utc(record.recorded_at)
    checkpoint = checkpoint_of(key)
    if event is None:
        return PageItem(checkpoint, at_text)
    if record.type in RUN_FACTS and event.get("subject") == f"recall/{name}":
        return PageItem(checkpoint, at_text)
    wheres: list[int] = []
    for event_filter in document.filters:
        if not event_filter.literal_holds(event):
            continue
        if event_filter.where is None:
            return PageItem(checkpoint, at_text, event, tuple(wheres), True)
        index = program.wheres.index(event_filter.where)
        if index not in wheres:
            wheres.append(index)
    return PageItem(checkpoint, at_text, event if wheres else None, tuple(wheres), False)


class PlaybookPass:
    """Passes over playbooks' views (see the module's steps). One pass of a playbook at a time: the keeper
    never runs two passes of one playbook together."""

    def __init__(
        self,
        ledger: Ledger,
        pool: SandboxPool,
        max_rebuilds: int,
    ) -> None:
        self.ledger = ledger
        self.pool = pool
        self.max_rebuilds = max_rebuilds
        self._documents: dict[tuple[str, str, str, int], RecallDocument | None] = {}
        self._passed_over: set[str] = set()

    async def _actives(self, scope: PlaybookScope) -> dict[str, _Active]:
        rows = await self.ledger.fetch(
            "SELECT * FROM definitions WHERE org = ? AND playbook = ? AND type = ? AND status = ?",
            (scope.org, scope.playbook, "recall", "active"),
        )
        found: dict[str, _Active] = {}
        for row in rows:
            version = version_of(DEFINITIONS_PROJECTION.decode_row(row))
            key = (scope.org, scope.playbook, version.name, version.version)
            if key not in self._documents:
                if len(self._documents) >= DOCUMENTS_KEPT:
                    self._documents.clear()
                parsed = parse_document(version.source)
                self._documents[key] = parsed if isinstance(parsed, RecallDocument) else None
            found[version.name] = _Active(version.name, version.version, version.updated_at, self._documents[key])
        return found

    async def _reconciled(self, scope: PlaybookScope, fence: LeaseFence) -> tuple[list[ViewRow], dict[str, _Active]]:
        """Step 1: the rows made to match the active functions, with `rebuilding` and `waiting` assigned."""
        actives = await self._actives(scope)
        rows = {row.name: row for row in await self.ledger.recall_views.of_playbook(scope.org, scope.playbook)}
        for name in [name for name in rows if name not in actives]:
            await self.ledger.recall_views.drop(scope.org, scope.playbook, name, fence)
            del rows[name]
        fresh: set[str] = set()
        for name, active in actives.items():
            row = rows.get(name)
            if row is None or row.version != active.version:
                rows[name] = fresh_row(scope.org, scope.playbook, active)
                fresh.add(name)
        building = sorted(
            (row for row in rows.values() if row.state in ("rebuilding", "waiting")),
            key=lambda row: (row.saved_at, row.name),
        )
        for place, row in enumerate(building):
            state = "rebuilding" if place < self.max_rebuilds else "waiting"
            moved = replace(row, state=state)
            if row.name in fresh:
                await self.ledger.recall_views.put(moved, fence)
                rows[row.name] = moved
            elif row.state != state and await self.ledger.recall_views.advance(
                moved, Expected(row.version, row.checkpoint), fence
            ):
                rows[row.name] = moved
        return list(rows.values()), actives

    async def run(self, org: str, playbook: str, holding: Callable[[], LeaseFence | None]) -> None:
        """One pass of the playbook's views, under the lease's fence as `holding()` gives it (none: stand by).

        The definitions are read again before each page, so a function saved while a pass folds gets its row
        (and its place, `rebuilding` or `waiting`) within a page; and the fence too, so a pass ends after the
        page in flight once the server stops holding the workflows (or starts stopping)."""
        fence = holding()
        if fence is None:
            return
        scope = PlaybookScope(org, playbook)
        resting: set[str] = set()
        pages = 0
        while pages < PAGES_A_PASS:
            if holding() != fence:
                return
            rows, actives = await self._reconciled(scope, fence)
            folding = {
                row.name: row
                for row in rows
                if row.state in ("live", "rebuilding")
                and actives[row.name].document is not None
                and row.name not in resting
            }
            if not folding:
                return
            results: dict[str, ViewRow | None] = {}
            done = True
            for group in _groups(folding.values())[: PAGES_A_PASS - pages]:
                pages += 1
                done = await self._fold_group(scope, fence, group, actives, results) and done
            resting.update(name for name, row in results.items() if row is None)
            if done:
                return

    async def _fold_group(
        self,
        scope: PlaybookScope,
        fence: LeaseFence,
        group: list[ViewRow],
        actives: Mapping[str, _Active],
        results: dict[str, ViewRow | None],
    ) -> bool:
        """One shared read for the group from its smallest checkpoint, folded into each of its views; whether every
        view that goes on has caught up with the end of the history."""
        starts = [key_of(row.checkpoint) for row in group]
        start = None if any(key is None for key in starts) else min(key for key in starts if key is not None)
        records = await self.ledger.read_playbook_after(scope, start, PAGE_RECORDS)
        at_end = len(records) < PAGE_RECORDS
        events = [(key, record, self._event(record)) for key, record in records]
        async with trio.open_nursery() as nursery:
            for row in group:
                document = actives[row.name].document
                assert document is not None
                nursery.start_soon(self._fold_one, scope, fence, row, document, events, at_end, results)
        going_on = [results[row.name] for row in group if results.get(row.name) is not None]
        return at_end and all(row is not None and self._caught_up(row, records) for row in going_on)

    @staticmethod
    def _caught_up(row: ViewRow, records: list[tuple[SortKey, Record]]) -> bool:
        return not records or row.checkpoint == checkpoint_of(records[-1][0])

    def _event(self, record: Record) -> Mapping[str, Any] | None:
        found = playbook_event(record)
        if found is None:
            return None
        if depth_of(found.event) > MAX_DEPTH:
            if record.id not in self._passed_over:
                if len(self._passed_over) >= PASSED_OVER_KEPT:
                    self._passed_over.clear()
                self._passed_over.add(record.id)
                log.warning("record_passed_over", extra={"record_id": record.id, "record_type": record.type})
            return None
        return found.event

    async def _fold_one(
        self,
        scope: PlaybookScope,
        fence: LeaseFence,
        row: ViewRow,
        document: RecallDocument,
        events: list[tuple[SortKey, Record, Mapping[str, Any] | None]],
        at_end: bool,
        results: dict[str, ViewRow | None],
    ) -> None:
        """Fold the page's records after the row's checkpoint into its view and write it; `results` gets the row
        to go on with, or None when the view waits for the next pass (stalled, an event cost it a try, its write
        was refused, or no worker became free)."""
        results[row.name] = None
        after = key_of(row.checkpoint)
        program = program_of(document)
        items = [
            item_for(row.name, document, program, key, record, event)
            for key, record, event in events
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

        if items:
            try:
                result = await self.pool.workers.submit(
                    job, RunControl(time.monotonic() + JOB_SECONDS), "fold", JobOwner(scope.org, scope.playbook)
                )
            except NoWorkerFree:
                return
        else:
            result = PageResult(state, None, 0)
        moved = _row_after(row, result, caught_up=at_end and result.examined == len(items))
        if moved != row and not await self.ledger.recall_views.advance(
            moved, Expected(row.version, row.checkpoint), fence
        ):
            return
        if moved.state == "stalled" or moved.tries > row.tries:
            return
        results[row.name] = moved


def _row_after(row: ViewRow, result: PageResult, *, caught_up: bool) -> ViewRow:
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
