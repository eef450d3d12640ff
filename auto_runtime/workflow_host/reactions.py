"""Reactions to playbook events: offers to listening runs, runs started by triggers, schedules (spec 9, 10).

`Reactions` is owned by the server. The reactions to a playbook's records are carried by the holder of the
playbook's partition (`partition_of(playbook_key(org, playbook))`, issue 33), each under that partition's fence:

- `follow(fences)` reads the ledger's feed oldest first (`read_forward`, woken by `AppendSignal` or a timeout)
  and reacts to the records of the playbooks whose partitions this server holds, each partition from its own
  durable position (`FollowPosition(ledger, partition)`). For each such record:
  - a save or retirement of a workflow (`definitions/workflow`) re-arms or cancels its schedule entries
    (`schedules`) from the workflow's latest version;
  - each playbook event (`playbook_events`) is offered (`EventOffered`) to the runs of its playbook whose open
    listen takes its type (`listeners`), never to the run that emitted it, and starts a run of each workflow
    whose event trigger matches it, in the version current when it was recorded (`workflow_versions`).
  A partition's position is saved (fenced by it) after every reaction to its records before it was appended,
  at most once a sweep (`poll_seconds`, the follower's sweep: it also looks at the feed at least that often),
  and only when records of it were read since its last save (or it was never saved, or it lags
  `CLEAN_SAVE_AFTER` records): a busy ledger costs the follower one commit a sweep per busy partition.
- `fire(entry, fence)` takes the due-work entries whose key begins `trigger:` (`is_trigger_key`): a schedule's
  due time, or an event-triggered start queued by the rate limit, under the fence of the entry's partition.

Where a reaction's input goes: a start or an offer is an input of a run, which belongs to the run's partition.
When this server holds it (`Fences.of_key(run_id)`), the input is applied here under that partition's fence;
otherwise (or when that fence turns out lost) it is handed to the partition's holder as due work armed under
the playbook partition's fence (`forwarded.start_entry`, `forwarded.offer_entry`) and the other servers are
woken. So every input a reaction makes is written under its run's partition's fence, by its holder.

Concurrency rules:

- One `follow` per server. It keeps one read position per partition held (`_Track`), loaded when the partition
  is taken (or its fence changes: it was claimed again, and another holder may have moved the position), and
  reads the feed from the furthest-behind of them; the partitions at that position react to the batch and
  move to its end, or to the next partition's position within it (they then read on together, re-reading a
  few records, which is harmless: below). Every write is fenced with the fence of the partition it is for, so
  a server that lost a partition writes nothing more for it (`LeaseLost` drops its track; its partition is
  not followed again under that fence).
- One event's offers go to its listening runs concurrently (`OFFERS_AT_ONCE`), each an input of its own run;
  records are still reacted to one after another, in feed order.
- `fire` may run concurrently with `follow` (the timer loop calls it); both only start runs under deterministic
  ids (a second start of one id is stale) and arm idempotent keys, so their order does not matter.
- Re-reading the feed from an older position is harmless: triggered runs have deterministic ids (uuid5 of
  playbook, workflow, version, trigger reference and event record id, or due time), handed-over starts and
  offers are keyed by run id and record id (arming a key again changes nothing), and an offer reaches only
  listens opened before the event was recorded and runs that did not take that record already. A server
  that takes a partition over (or this one after `LeaseLost` or a fault) re-reads at most the records of
  the partition's last sweep before its saved position moved; that is the only cost of saving once a sweep.
- Any error other than `LeaseLost` inside one reaction is logged and ends only that reaction (the position
  still moves past it: a failed start is counted in `reaction_refused`); an error reading the feed or saving
  a position ends `follow`, for its owner to restart (it resumes from the saved positions).
- A ledger that cannot take writes (`LedgerUnavailable`, a full disk) is no failed reaction: it ends the batch
  like `LeaseLost`, no position is moved, and `follow` waits (`store_faults`) and reacts to the batch again
  from the saved positions, which is harmless (above).
- `on_applied`, when given, is awaited with every `Applied` a start or an offer produced here, so the server can
  dispatch their outputs (emitted events, calls to workflows) as it does for other inputs.
- Without `fences` (a `Reactions` used under one lease, as the reaction rules' tests use it through
  `follow_once`), every run is taken to be held under the fence the reaction is made with.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import trio

from auto_runtime.actors import MailboxFull
from auto_runtime.functions.workflow.decisions import moment
from auto_runtime.functions.workflow.engine.model import EventOffered
from auto_runtime.functions.workflow.listeners import WORKFLOW_LISTENERS_PROJECTION, ListeningRun, listening_runs
from auto_runtime.functions.workflow.run_state import WORKFLOW_INPUT_APPLIED
from auto_runtime.ledger import (
    ANY_VERSION,
    DueEntry,
    DueKey,
    DueWorkChanges,
    DuplicateRecordIdError,
    FeedPosition,
    Fences,
    LeaseFence,
    LeaseLost,
    LedgerUnavailable,
    PlaybookScope,
    Record,
    StreamWrite,
    partition_of,
    playbook_key,
    uuid7,
)
from auto_runtime.playbooks.definition_registry import DefinitionRegistry
from auto_runtime.problems import Rejection
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.schema_issues import check_off_the_loop
from auto_runtime.server_clock import WALL_CLOCK
from auto_runtime.workflow_host.follow_position import FollowPosition
from auto_runtime.workflow_host.forwarded import offer_entry, start_entry
from auto_runtime.workflow_host.playbook_events import PlaybookEvent, playbook_event, scope_of
from auto_runtime.workflow_host.reaction_limits import MINUTE_MS, RefusalTally, StartBudget, minute_of
from auto_runtime.workflow_host.run_store import Applied, Definition, RunStore, UnknownRun
from auto_runtime.workflow_host.schedules import (
    QUEUED_PREFIX,
    Schedule,
    due_text,
    earlier_schedule_run_id,
    is_trigger_key,
    schedule_run_id,
    schedules_of,
)
from auto_runtime.workflow_host.store_faults import FaultPause
from auto_runtime.workflow_host.trigger_matching import DataConditions, literal_matches, trigger_matches
from auto_runtime.workflow_host.workflow_versions import WORKFLOW, SavedVersion, WorkflowVersions

__all__ = ["REACTION_PROJECTIONS", "WORKFLOW_LISTENERS_PROJECTION", "Reactions", "is_trigger_key"]

REACTION_PROJECTIONS = (WORKFLOW_LISTENERS_PROJECTION,)
"""The projections the ledger must be opened with for `Reactions` (besides `workflow_runs` and `runs`)."""

MAX_DEPTH: Final = 8
OFFERS_AT_ONCE: Final = 16
"""Listening runs one playbook event is offered to at the same time (each offer is an input of its own run)."""
FEED_BATCH: Final = 100
CLEAN_SAVE_AFTER: Final = 10_000
"""How far (in the feed's global positions) a partition's position may move past its saved one, without a record
of its own read, before it is saved anyway (so a server taking it over does not read that stretch again)."""
LISTENING_KEPT: Final = 1_024
"""How many playbooks' listening runs the follower keeps between batches before it forgets them all."""
_RUN_NAMESPACE: Final = uuid.UUID("3e0c9a7b-2d6f-5a18-b4c3-9f1e7d5a2b60")

TOO_DEEP = "The event is {depth} reactions deep; triggers start runs at most 8 deep."
QUEUE_FULL = "The workflow's event triggers started 60 runs this minute and 1,000 more wait; this event started none."
NOT_STARTED = "The run could not be started: {why}"
RETIRED_PLAYBOOK = "The playbook is retired, so its triggers start no run."
INPUT_REFUSED = "The run's input does not fit the workflow's input schema: {issue} (at {pointer})"

log = logging.getLogger(__name__)

AppliedHook = Callable[[PlaybookScope, str, Applied], Awaitable[None]]


def triggered_run_id(scope: PlaybookScope, name: str, version: int, reference: str, occasion: str) -> str:
    """The run a trigger starts for one event record (or due time): the same on every reading."""
    return str(uuid.uuid5(_RUN_NAMESPACE, f"{scope.key}\n{name}\n{version}\n{reference}\n{occasion}"))


async def input_refusal(document: Mapping[str, Any], value: Any) -> str | None:
    """Why a triggered start's input does not fit the document's `input.schema` (a permanent refusal: the run
    is not started, as a start by hand would be refused `invalid_input`), or None."""
    given = document.get("input")
    schema = given.get("schema") if isinstance(given, dict) else None
    inline = schema.get("document") if isinstance(schema, dict) else None
    if not isinstance(inline, dict):
        return None
    issues = await check_off_the_loop(inline, value, "/input")
    if not issues:
        return None
    return INPUT_REFUSED.format(issue=issues[0].detail, pointer=issues[0].pointer)


def _event_triggers(saved: SavedVersion) -> list[dict[str, Any]]:
    return [t for t in saved.triggers if t.get("kind") == "event" and isinstance(t.get("filters"), list)]


def _definition_name(record: Record) -> str | None:
    """The workflow a save or retirement record on `.../definitions/workflow` is about."""
    if not record.stream.endswith(f"/definitions/{WORKFLOW}") or not isinstance(record.data, dict):
        return None
    name = record.data.get("name")
    return name if isinstance(name, str) else None


RecordHook = Callable[[Record, LeaseFence | None], Awaitable[None]]


@dataclass
class _Track:
    """One held partition's reading of the feed: its fence, how far its records were all reacted to, what was
    saved, and whether a record of it was read since."""

    fence: LeaseFence
    keeper: FollowPosition
    position: FeedPosition | None
    saved: FeedPosition | None
    seen: bool = False

    def unsaved(self) -> bool:
        """Whether the position is to be saved at the next save (see the module)."""
        if self.position is None or self.position == self.saved:
            return False
        if self.seen or self.saved is None:
            return True
        return self.position.global_position - self.saved.global_position >= CLEAN_SAVE_AFTER


def _order(position: FeedPosition | None) -> tuple[int, int, int]:
    """Sorts the feed's start (None) before every position."""
    return (0, 0, 0) if position is None else (1, position.commit_order, position.global_position)


class Reactions:
    """Offers playbook events to listening runs, starts triggered runs and fires schedules (module rules)."""

    def __init__(
        self,
        store: RunStore,
        definitions: DefinitionRegistry,
        engine: SandboxEngine,
        *,
        poll_seconds: float = 1.0,
        clock: Callable[[], int] = WALL_CLOCK.now_ms,
        on_applied: AppliedHook | None = None,
        record_hooks: Sequence[RecordHook] = (),
        fences: Fences | None = None,
    ) -> None:
        self.store = store
        self.fences = fences
        """Where runs are held (`follow`'s own when not given); None: every run under the reaction's fence."""
        self.record_hooks = tuple(record_hooks)
        """Called with each record of a playbook the follower reads, fenced (a function type's own reactions,
        such as prediction shadow work after a document is saved)."""
        self.ledger = store.ledger
        self.definitions = definitions
        self.engine = engine
        self.poll_seconds = poll_seconds
        self.clock = clock
        self.on_applied = on_applied
        self.position = FollowPosition(self.ledger)
        self.offering = trio.CapacityLimiter(OFFERS_AT_ONCE)
        self.budget = StartBudget()
        self.refusals = RefusalTally()
        self._versions: dict[PlaybookScope, WorkflowVersions] = {}
        self._listening: dict[PlaybookScope, list[ListeningRun]] = {}
        """Each playbook's listening runs as last read, kept across batches: a batch that holds an applied input
        of a playbook (the only record that changes its listens) drops the playbook's entry before any reaction,
        so the entry read during the batch includes every listen opened up to the batch's end, as a read per
        batch would. Cleared when the follower (re)loads its position."""

    # -- following the feed ----------------------------------------------------------------------------------

    async def follow(
        self,
        fences: Fences,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Follow the feed until cancelled, reacting to the records of the playbooks of the partitions `fences`
        holds (see the module rules)."""
        task_status.started()
        if self.fences is None:
            self.fences = fences
        tracks: dict[int, _Track] = {}
        refused: set[LeaseFence] = set()
        save_at = trio.current_time() + self.poll_seconds
        faults = FaultPause("the reactions follower")
        while True:
            current = {p: f for p in fences.held() if (f := fences.fence_of(p)) is not None}
            refused &= set(current.values())
            held = {p: f for p, f in current.items() if f not in refused}
            for gone in [p for p, track in tracks.items() if held.get(p) != track.fence]:
                del tracks[gone]
            if not held:
                await trio.sleep(self.poll_seconds)
                continue
            generation = self.ledger.appended.generation
            read_on = False
            try:
                await self._load_tracks(held, tracks)
                read_on = await self._follow_tracks(tracks)
                if trio.current_time() >= save_at and any(t.unsaved() for t in tracks.values()):
                    await self._save_tracks(tracks)
                    save_at = trio.current_time() + self.poll_seconds
                await self._flush(lambda scope: fences.of_key(playbook_key(scope.org, scope.playbook)))
            except LeaseLost as lost:  # that fence's partitions are followed again only under a new fence
                for partition, track in list(tracks.items()):
                    if (track.fence.name, track.fence.fencing) == (lost.name, lost.fencing):
                        refused.add(tracks.pop(partition).fence)
                continue
            except (LedgerUnavailable, MailboxFull):  # the batch is reacted to again from the saved positions
                tracks.clear()
                await trio.sleep(faults.after_fault())
                continue
            faults.went_through()
            if read_on:  # records may wait behind this batch: read on without waiting for a signal
                continue
            unsaved = any(t.unsaved() for t in tracks.values())
            pause = max(save_at - trio.current_time(), 0.0) if unsaved else self.poll_seconds
            with trio.move_on_after(min(pause, self.poll_seconds)):
                await self.ledger.appended.wait_beyond(generation)

    async def _load_tracks(self, held: Mapping[int, LeaseFence], tracks: dict[int, _Track]) -> None:
        """A track for each partition held without one, from its saved position (the caches are read afresh)."""
        for partition, fence in held.items():
            if partition in tracks:
                continue
            keeper = FollowPosition(self.ledger, partition)
            position = await keeper.load()
            tracks[partition] = _Track(fence, keeper, position, position)
            self._versions.clear()
            self._listening.clear()

    async def _follow_tracks(self, tracks: dict[int, _Track]) -> bool:
        """React to the next batch after the furthest-behind tracks' position, for their partitions' records, and
        move them on (module rules); answers whether to read on at once: the batch was full (`FEED_BATCH` records,
        so records committed before the read may still wait unread), or its tracks stopped short of its end at
        another track's position. Otherwise everything the feed showed was read, and `follow` waits for the next
        append signal (taken before the read, so an append committed meanwhile wakes it at once) instead of
        reading an empty batch after every one that found records."""
        start = min((track.position for track in tracks.values()), key=_order)
        records, end = await self.ledger.read_forward(start, FEED_BATCH)
        if not records or end is None:
            return False
        reading = {p: track for p, track in tracks.items() if track.position == start}
        count = self.ledger.partitioning.count
        mine: list[tuple[Record, LeaseFence | None]] = []
        for record in records:
            scope = scope_of(record)
            track = None if scope is None else reading.get(partition_of(playbook_key(scope.org, scope.playbook), count))
            if track is not None:
                track.seen = True
                mine.append((record, track.fence))
        await self._react_in_order(mine)
        within = [
            track.position
            for track in tracks.values()
            if track.position is not None and _order(start) < _order(track.position) <= _order(end)
        ]
        target = min(within, key=_order) if within else end
        for track in reading.values():
            track.position = target
        return len(records) >= FEED_BATCH or target != end

    async def _save_tracks(self, tracks: dict[int, _Track]) -> None:
        for track in tracks.values():
            if track.unsaved() and track.position is not None:
                await track.keeper.save(track.position, track.fence)
                track.saved, track.seen = track.position, False

    async def follow_once(self, after: FeedPosition | None, fence: LeaseFence | None) -> FeedPosition | None:
        """React to the next batch of records after `after`, every playbook's under `fence` (one lease for the
        whole feed), and answer the position after it (`after` if there was none). Saving it is the caller's."""
        records, position = await self.ledger.read_forward(after, FEED_BATCH)
        if not records or position is None:
            return after
        await self._react_in_order([(record, fence) for record in records])
        return position

    async def _react_in_order(self, reacting: Sequence[tuple[Record, LeaseFence | None]]) -> None:
        """React to a batch's records in feed order, each under its fence. The playbooks whose runs took an input
        in the batch have their listening runs read afresh (an input may open or close a listen)."""
        listening = self._listening
        if len(listening) > LISTENING_KEPT:
            listening.clear()
        for record, _ in reacting:
            if record.type == WORKFLOW_INPUT_APPLIED and (scope := scope_of(record)) is not None:
                listening.pop(scope, None)
        for record, fence in reacting:
            await self.react(record, fence, listening)

    async def react(
        self,
        record: Record,
        fence: LeaseFence | None,
        listening: dict[PlaybookScope, list[ListeningRun]] | None = None,
    ) -> None:
        """Every reaction to one record. Errors other than `LeaseLost` and `LedgerUnavailable` are logged and end
        only this reaction."""
        scope = scope_of(record)
        if scope is None:
            return
        for hook in self.record_hooks:
            await self._guarded(hook(record, fence), "hooks", record)
        name = _definition_name(record)
        if name is not None:
            await self._guarded(self._sync_schedules(scope, name, fence), "schedules", record)
        item = playbook_event(record)
        if item is None:
            return
        await self._guarded(self._offer(item, fence, {} if listening is None else listening), "offer", record)
        await self._guarded(self._trigger(item, fence), "triggers", record)

    async def _guarded(self, work: Awaitable[None], what: str, record: Record) -> None:
        try:
            await work
        except (LeaseLost, LedgerUnavailable):
            raise
        except Exception:
            log.exception("reactions: the %s of record %s failed", what, record.id)

    async def _workflow_versions(self, scope: PlaybookScope, *, refresh: bool = True) -> WorkflowVersions:
        """The playbook's workflow versions; read afresh when `refresh` (a save was seen, or a due time came),
        else as last read (events compare by global position, so newer saves never count for older events)."""
        versions = self._versions.get(scope)
        if versions is None:
            versions = self._versions[scope] = WorkflowVersions(self.ledger, scope)
        elif not refresh:
            return versions
        await versions.refresh()
        return versions

    # -- listens ---------------------------------------------------------------------------------------------

    async def _offer(
        self, item: PlaybookEvent, fence: LeaseFence | None, listening: dict[PlaybookScope, list[ListeningRun]]
    ) -> None:
        runs = listening.get(item.scope)
        if runs is None:
            runs = listening[item.scope] = await listening_runs(self.ledger, item.scope)
        wanting = [
            run
            for run in runs
            if not (item.emitted and run.run_id == item.run_id) and run.wants(item.type, item.record)
        ]
        if not wanting:
            return
        lost: list[LeaseLost | LedgerUnavailable | MailboxFull] = []

        async def offer(run_id: str, offers: trio.Nursery) -> None:
            async with self.offering:
                offered = EventOffered(str(uuid7()), self.clock(), item.record.id, item.event)
                try:
                    await self._offer_to(item.scope, run_id, offered, fence)
                except (LeaseLost, LedgerUnavailable, MailboxFull) as error:
                    lost.append(error)
                    offers.cancel_scope.cancel()

        async with trio.open_nursery() as offers:
            for run in wanting:
                offers.start_soon(offer, run.run_id, offers)
        if lost:
            raise lost[0]

    async def _offer_to(self, scope: PlaybookScope, run_id: str, offered: EventOffered, via: LeaseFence | None) -> None:
        """Offer the event to one run: here under its partition's fence when held here, else handed to the holder."""
        here, fence = self._placed(run_id, via)
        if here:
            try:
                applied = await self.store.apply_input(scope, run_id, offered, fence=fence)
            except UnknownRun:
                return
            except LeaseLost as lost:
                if not self._run_fence_lost(lost, fence, via):
                    raise
            else:
                await self._applied(scope, run_id, applied)
                return
        await self._hand_over(offer_entry(scope, run_id, moment(offered.at), offered), via)

    def _placed(self, run_id: str, via: LeaseFence | None) -> tuple[bool, LeaseFence | None]:
        """Whether the run's partition is held here, and its fence (`via` itself without `fences`)."""
        if self.fences is None:
            return True, via
        fence = self.fences.of_key(run_id)
        return fence is not None, fence

    def _run_fence_lost(self, lost: LeaseLost, fence: LeaseFence | None, via: LeaseFence | None) -> bool:
        """Whether `lost` is the run's partition's fence alone (the input goes to its new holder), not the fence
        of the partition the reaction is made for (which ends the reaction's batch)."""
        return fence is not None and fence != via and lost.name == fence.name and lost.fencing == fence.fencing

    async def _hand_over(self, entry: DueEntry, via: LeaseFence | None) -> None:
        """Arm an input for the holder of its run's partition, under the reacting partition's fence (the ledger
        wakes the holder once the arm committed: `Ledger.due_wake`)."""
        await self.ledger.due_work.arm([entry], fence=via)

    async def _applied(self, scope: PlaybookScope, run_id: str, applied: Applied) -> None:
        if self.on_applied is not None and not applied.stale:
            await self.on_applied(scope, run_id, applied)

    # -- event triggers --------------------------------------------------------------------------------------

    async def _trigger(self, item: PlaybookEvent, fence: LeaseFence | None) -> None:
        versions = await self._workflow_versions(item.scope, refresh=False)
        candidates = [
            (saved, trigger)
            for saved in versions.current_at(item.record.global_position)
            for trigger in _event_triggers(saved)
            if any(literal_matches(f, item.event) for f in trigger["filters"])
        ]
        if not candidates:
            return
        own = await self._workflows_behind(item)
        candidates = [(saved, trigger) for saved, trigger in candidates if saved.name not in own]
        if not candidates:
            return
        matched = await trio.to_thread.run_sync(self._matching, candidates, item.event)
        for saved, trigger in matched:
            await self._start_for_event(item, saved, str(trigger["reference"]), fence)

    def _matching(
        self, candidates: Sequence[tuple[SavedVersion, dict[str, Any]]], event: Mapping[str, Any]
    ) -> list[tuple[SavedVersion, dict[str, Any]]]:
        """The candidates whose trigger matches, every `data` expression in one sandbox (a worker thread)."""
        conditions = DataConditions(self.engine, self.clock())
        try:
            return [(s, t) for s, t in candidates if trigger_matches(t["filters"], event, conditions)]
        finally:
            conditions.close()

    async def _workflows_behind(self, item: PlaybookEvent) -> set[str]:
        """The workflows whose runs the event is about or came from: the run's own and its callers' (self-guard)."""
        if item.run_id is None:
            return set()
        names: set[str] = set()
        metadata: Mapping[str, Any] = item.record.metadata
        for _ in range(MAX_DEPTH + 2):
            definition = metadata.get("definition")
            if isinstance(definition, dict) and definition.get("type") == WORKFLOW:
                names.add(str(definition.get("name")))
            called_by = metadata.get("called_by")
            caller = called_by.get("run_id") if isinstance(called_by, dict) else None
            if not isinstance(caller, str):
                break
            loaded = await self.store.load(item.scope, caller)
            if loaded is None:
                break
            metadata = loaded.metadata
        return names

    async def _start_for_event(
        self, item: PlaybookEvent, saved: SavedVersion, reference: str, fence: LeaseFence | None
    ) -> None:
        now = self.clock()
        if item.depth > MAX_DEPTH:
            self.refusals.note(item.scope, saved.name, saved.version, now, TOO_DEEP.format(depth=item.depth))
            return
        run_id = triggered_run_id(item.scope, saved.name, saved.version, reference, item.record.id)
        minute = self.budget.take((item.scope.org, item.scope.playbook, saved.name), now)
        if minute is None:
            self.refusals.note(item.scope, saved.name, saved.version, now, QUEUE_FULL)
            return
        start = {
            "name": saved.name,
            "version": saved.version,
            "saved": saved.record_id,
            "kind": "event",
            "reference": reference,
            "run_id": run_id,
            "input": [item.event],
            "cause": item.record.id,
            "depth": item.depth,
        }
        if minute > minute_of(now):
            due = datetime.fromtimestamp(minute * MINUTE_MS / 1000, tz=UTC)
            entry = DueEntry(item.scope, schedule_run_id(saved.name), f"{QUEUED_PREFIX}{run_id}", due, start)
            await self.ledger.due_work.arm([entry], fence=fence)
            return
        await self._start(item.scope, start, fence)

    async def _start(self, scope: PlaybookScope, start: Mapping[str, Any], fence: LeaseFence | None) -> None:
        """Start one triggered run (`start` as `_start_for_event` and `_fire_schedule` write it): here under the
        run's partition's fence when held here, else handed to that partition's holder; `fence` is the fence of
        the partition the reaction is made for."""
        name, version = str(start["name"]), int(start["version"])
        run_id = str(start["run_id"])
        caller = f"playbook:{scope.playbook}"
        extra = {"trigger": {"kind": start["kind"], "reference": start["reference"]}, "depth": int(start["depth"])}
        try:
            document = await self._document(scope, name, version, str(start["saved"]))
            refusal = RETIRED_PLAYBOOK if await self._retired(scope) else await input_refusal(document, start["input"])
            if refusal is not None:
                self.refusals.note(scope, name, version, self.clock(), refusal)
                return
            here, run_fence = self._placed(run_id, fence)
            if here:
                try:
                    applied = await self.store.start_run(
                        scope,
                        run_id,
                        Definition(name, version, document),
                        start["input"],
                        caller,
                        causation_id=str(start["cause"]),
                        extra_metadata=extra,
                        fence=run_fence,
                    )
                except LeaseLost as lost:
                    if not self._run_fence_lost(lost, run_fence, fence):
                        raise
                    here = False
            if not here:
                source = await self._source(scope, str(start["saved"]))
                named = (name, version, source)
                entry = start_entry(
                    scope, run_id, moment(self.clock()), named, start["input"], caller, str(start["cause"]), extra, {}
                )
                await self._hand_over(entry, fence)
                return
        except (LeaseLost, LedgerUnavailable):
            raise
        except Exception as error:
            log.exception("reactions: a %s trigger of %s did not start its run", start["kind"], name)
            self.refusals.note(scope, name, version, self.clock(), NOT_STARTED.format(why=type(error).__name__))
            return
        await self._applied(scope, run_id, applied)

    async def _retired(self, scope: PlaybookScope) -> bool:
        """Whether the playbook is retired: its triggers start nothing (a permanent refusal, not retried)."""
        row = await self.ledger.queries.playbooks.row(scope.org, scope.playbook)
        return row is not None and row["status"] == "retired"

    async def _source(self, scope: PlaybookScope, record_id: str) -> str:
        """The source a workflow's save recorded."""
        record = await self.ledger.read_record(scope, record_id)
        if record is None or not isinstance(record.data, dict):
            raise LookupError(f"no saved workflow {record_id}")
        return str(record.data.get("source", ""))

    async def _document(self, scope: PlaybookScope, name: str, version: int, record_id: str) -> dict[str, Any]:
        """The document of the version a trigger names, from the playbook actors' one cache (its source read
        from the save's record when the version is not kept)."""

        async def source() -> str:
            return await self._source(scope, record_id)

        found = await self.definitions.actors.documents.parsed(
            (scope.org, scope.playbook), WORKFLOW, name, version, source
        )
        if isinstance(found, Rejection):
            raise found  # the saved workflow no longer checks: the trigger's start is refused
        document: dict[str, Any] = found
        return document

    async def flush_refusals(self, fence: LeaseFence | None, *, everything: bool = False) -> None:
        """Append the `reaction_refused` of the minutes that have passed (every open one with `everything`,
        e.g. before a clean stop), every playbook's under `fence`."""
        await self._flush(lambda scope: fence, everything=everything)

    async def _flush(self, fence_of: Callable[[PlaybookScope], LeaseFence | None], *, everything: bool = False) -> None:
        """`flush_refusals`, each playbook's under its partition's fence (`fence_of`). The notes of a playbook
        whose partition this server no longer holds are dropped: they count refusals this server made while it
        held it, and a fenced write of them would be refused."""
        for scope, record in self.refusals.due(self.clock(), everything=everything):
            fence = fence_of(scope)
            name = str(record.metadata["definition"]["name"])
            if fence is None and self.fences is not None:
                log.info("reactions: the refusals of %s in %s are dropped (its partition moved)", name, scope.key)
                continue
            try:
                await self.ledger.append(
                    [StreamWrite(scope.stream("reactions", name), ANY_VERSION, [record])], fence=fence
                )
            except DuplicateRecordIdError:
                continue

    # -- schedules -------------------------------------------------------------------------------------------

    async def _schedules(self, versions: WorkflowVersions, saved: SavedVersion | None) -> list[Schedule]:
        if saved is None:
            return []
        anchors = {str(t.get("reference")): versions.anchor(saved, str(t.get("reference"))) for t in saved.triggers}
        return schedules_of(saved, anchors)

    async def _sync_schedules(self, scope: PlaybookScope, name: str, fence: LeaseFence | None) -> None:
        """Arm the first due time of each schedule trigger of the workflow's latest version that has no entry
        yet, and cancel the armed entries of triggers it no longer has in that form (or of a retired one). The
        entries of earlier releases' pseudo-run count as well (`schedules`: they move at their next firing)."""
        versions = await self._workflow_versions(scope)
        wanted = await self._schedules(versions, versions.latest(name))
        rows = [
            row
            for run in (schedule_run_id(name), earlier_schedule_run_id(name))
            for row in await self.ledger.due_work.entries_of_run(scope, run)
        ]
        prefixes = {schedule.key(0)[:-1]: schedule for schedule in wanted}
        cancel = [
            DueKey(scope, row.run_id, row.key)
            for row in rows
            if row.state == "armed"
            and not row.key.startswith(QUEUED_PREFIX)
            and not any(row.key.startswith(prefix) for prefix in prefixes)
        ]
        arm = [
            schedule.entry(scope, name, schedule.first(), None)
            for prefix, schedule in prefixes.items()
            if not any(row.key.startswith(prefix) for row in rows)
        ]
        if arm or cancel:
            await self.ledger.due_work.change(DueWorkChanges(arm=arm, cancel=cancel), fence=fence)

    async def fire(self, entry: DueEntry, fence: LeaseFence) -> None:
        """Take one due entry whose key begins `trigger:` and mark it fired: a schedule's in the write that arms
        its next due time, else alone once its run was started (a crash before the mark fires it again, which
        starts nothing twice). `LeaseLost` leaves it armed for the next holder."""
        if isinstance(entry.scope, PlaybookScope) and isinstance(entry.payload, dict):
            if entry.key.startswith(QUEUED_PREFIX):
                await self._fire_queued(entry.scope, entry.payload, fence)
            elif await self._fire_schedule(entry.scope, entry.payload, fence, entry.due_key):
                return
        await self.ledger.due_work.mark_fired([entry.due_key], fence=fence)

    async def _fire_queued(self, scope: PlaybookScope, start: Mapping[str, Any], fence: LeaseFence) -> None:
        versions = await self._workflow_versions(scope)
        if versions.latest(str(start.get("name"))) is None:
            return  # retired since: a permanent refusal, not retried
        await self._start(scope, start, fence)

    async def _fire_schedule(
        self, scope: PlaybookScope, payload: Mapping[str, Any], fence: LeaseFence, fired: DueKey
    ) -> bool:
        """Start the schedule's run for its due time and arm the next one, `fired` marked in that arm; answers
        whether it marked `fired` (not when the schedule is gone)."""
        name, reference = str(payload.get("name")), str(payload.get("reference"))
        versions = await self._workflow_versions(scope)
        latest = versions.latest(name)
        schedule = next((s for s in await self._schedules(versions, latest) if s.reference == reference), None)
        if latest is None or schedule is None or schedule.anchor_id != payload.get("anchor"):
            return False  # retired, removed or changed: the new form has entries of its own
        now = self.clock()
        due = schedule.latest_due(int(payload["due"]), now)
        previous = payload.get("previous_run_id")
        if not (isinstance(previous, str) and await self._running(scope, previous)):
            run_id = triggered_run_id(scope, name, latest.version, reference, str(due))
            start = {
                "name": name,
                "version": latest.version,
                "saved": latest.record_id,
                "kind": schedule.kind,
                "reference": reference,
                "run_id": run_id,
                "input": {"schedule": {"due": due_text(due)}},
                "cause": schedule.anchor_id,
                "depth": 1,
            }
            await self._start(scope, start, fence)
            previous = run_id
        following = schedule.entry(scope, name, schedule.next_after(max(due, now)), previous)
        await self.ledger.due_work.change(DueWorkChanges(arm=[following], fire=[fired]), fence=fence)
        return True

    async def _running(self, scope: PlaybookScope, run_id: str) -> bool:
        return await self.ledger.queries.runs.status(scope.org, scope.playbook, run_id) == "started"
