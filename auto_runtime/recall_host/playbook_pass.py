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
3. **Folding.** The page is handed to each view's actor (`view_actor`, one per view under the playbook's
   actor), which folds its part on the sandbox pool (`kind="fold"`: at most half the workers), in a sandbox of
   its own, within the page's 2 seconds (`fold_page`); the views of a page fold side by side.
4. **Writing.** Each view actor writes its row once a page, conditional on the version and checkpoint it was
   read at, and fenced by the workflow lease: a row reset by a newer version, or a lost lease, writes nothing.
   A view whose checkpoint reached the end of the history the pass read is `live`. A view actor that fails
   leaves its view for the next pass (its new life resumes from the checkpoint row); the others go on.

At most 10 pages a pass in all (the live views' reads and the rebuilding views' reads together). A view that
stalls, or whose event cost a try, is left for the next pass.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import trio
from cachetools import LRUCache

from auto_runtime.functions.recall.document import RecallDocument, parse_document
from auto_runtime.json_limits import compact_json, depth_of
from auto_runtime.ledger import LeaseFence, LeaseLost, Ledger, PlaybookScope, Record
from auto_runtime.ledger.paging import SortKey
from auto_runtime.ledger.recall_views import Expected, ViewRow
from auto_runtime.playbooks.definition_facts import DEFINITIONS_PROJECTION, version_of
from auto_runtime.recall_host.page_items import checkpoint_of, key_of
from auto_runtime.recall_host.view_actor import FoldAnswer, FoldPart
from auto_runtime.sandbox.limits import MAX_DEPTH
from auto_runtime.workflow_host.playbook_events import playbook_event

log = logging.getLogger("auto_runtime.recall_host")

PAGE_RECORDS = 1_000
PAGES_A_PASS = 10
PASSED_OVER_KEPT = 10_000
DOCUMENTS_KEPT = 4_096
"""Parsed documents kept by (org, playbook, name, version), the least recently used going first."""

FoldView = Callable[[str, FoldPart], Awaitable[FoldAnswer]]
"""Ask the actor of the playbook's view of that name to fold its part of a page (`view_actor`)."""


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


class PlaybookPass:
    """Passes over playbooks' views (see the module's steps). One pass of a playbook at a time: each runs in its
    playbook's actor (`views_actor`)."""

    def __init__(self, ledger: Ledger, max_rebuilds: int) -> None:
        self.ledger = ledger
        self.max_rebuilds = max_rebuilds
        self._documents: LRUCache[tuple[str, str, str, int], RecallDocument | None] = LRUCache(DOCUMENTS_KEPT)
        self._passed_over: LRUCache[str, None] = LRUCache(PASSED_OVER_KEPT)
        """Records already logged as passed over (too deep), so each is logged once while remembered."""

    async def _actives(self, scope: PlaybookScope) -> dict[str, _Active]:
        rows = await self.ledger.queries.definitions.active_of_type(scope.org, scope.playbook, "recall")
        found: dict[str, _Active] = {}
        for row in rows:
            version = version_of(DEFINITIONS_PROJECTION.decode_row(row))
            key = (scope.org, scope.playbook, version.name, version.version)
            if key in self._documents:
                document = self._documents[key]
            else:
                parsed = parse_document(version.source)
                document = self._documents[key] = parsed if isinstance(parsed, RecallDocument) else None
            found[version.name] = _Active(version.name, version.version, version.updated_at, document)
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

    async def run(self, org: str, playbook: str, holding: Callable[[], LeaseFence | None], views: FoldView) -> None:
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
                done = await self._fold_group(scope, fence, group, actives, views, results) and done
            resting.update(name for name, row in results.items() if row is None)
            if done:
                return

    async def _fold_group(
        self,
        scope: PlaybookScope,
        fence: LeaseFence,
        group: list[ViewRow],
        actives: Mapping[str, _Active],
        views: FoldView,
        results: dict[str, ViewRow | None],
    ) -> bool:
        """One shared read for the group from its smallest checkpoint, handed to each of its views' actors to fold
        their part; whether every view that goes on has caught up with the end of the history. A view actor that
        fails is left for the next pass (its registry restarts it from its checkpoint row), the others go on."""
        starts = [key_of(row.checkpoint) for row in group]
        start = None if any(key is None for key in starts) else min(key for key in starts if key is not None)
        records = await self.ledger.read_playbook_after(scope, start, PAGE_RECORDS)
        at_end = len(records) < PAGE_RECORDS
        events = tuple((key, record, self._event(record)) for key, record in records)
        lost: list[bool] = []

        async def fold_one(row: ViewRow, document: RecallDocument) -> None:
            results[row.name] = None
            try:
                answer = await views(row.name, FoldPart(row, document, events, at_end, fence))
            except Exception:
                log.exception(
                    "recall views: a view's actor failed; it resumes from its checkpoint at the next pass",
                    extra={"org": scope.org, "playbook": scope.playbook, "definition": row.name},
                )
                return
            lost.append(answer.lease_lost)
            results[row.name] = answer.row

        async with trio.open_nursery() as nursery:
            for row in group:
                document = actives[row.name].document
                assert document is not None
                nursery.start_soon(fold_one, row, document)
        if any(lost):
            raise LeaseLost(fence.name, fence.holder, fence.fencing)
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
                self._passed_over[record.id] = None
                log.warning("record_passed_over", extra={"record_id": record.id, "record_type": record.type})
            return None
        return found.event
