"""Requests taken by a server that does not hold the run's partition (issue 33, "any server takes any request"):
recorded where they arrive as due work in the run's partition, and applied by the partition's holder.

- A workflow start (`record_start`) arms a `workflow-start:` entry for the run carrying what the start needs (the
  definition's name, version and source, the input, the caller, the call bounds and metadata), which wakes the holder by
  itself (the ledger's `due_wake`: an entry due now in a partition not held here is told over `LISTEN/NOTIFY` on
  PostgreSQL once it committed, and the holder's timer loop heeds it), then waits for the run to begin (the holder names
  it once begun: `Ledger.tell_runs_begun`, so the waiting server reads again when its run is named, and at least each
  sweep), so the request answers as a start on the holder does (seeds: `200` with `status: started` as soon as the run
  begins, or how it ended when it ended in its first input). The wait is bounded (`BEGIN_WAIT_SECONDS`, a guard): past
  it the request answers `unavailable` with `Retry-After`, the entry stays armed, and the same request again finds the
  run begun or waits again (the entry is armed once by its key: the first request's start is the one applied). Should
  this server take the partition meanwhile, the start goes on here (the request holds the run's actor, which the timer
  loop's start would wait for).
- An event sent to a run (`record_event`) arms a `workflow-event:<event id>` entry carrying the delivered event and
  answers at once with it, as the holder would; the holder applies it as the run's input (a run takes an event
  id once, so an event sent again changes nothing).
- The reactions (`reactions`: triggers, listens and schedules, carried by the holder of the playbook's partition)
  hand a triggered start or an offered playbook event for a run of a partition held by another server over the
  same way, without waiting: a `workflow-start:` entry (`start_entry`) or a `workflow-offer:<record id>` entry
  (`offer_entry`), armed under the playbook partition's fence.
- The holder's timer loop carries out all three (`apply_start`, `apply_event`, `apply_offer`: due handlers), under
  the fence of the run's partition, each entry marked fired in the append of its input (or alone when its input
  was stale).

Cancels need nothing of this: `cancel_run` records `run_cancel_requested` and its `cancel:` entry on any server.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any, Final

import trio

from auto_runtime.functions.workflow.engine.model import EventOffered, EventReceived
from auto_runtime.ledger import DueEntry, Fences, LeaseFence, Ledger, PlaybookScope, uuid7
from auto_runtime.playbooks.definition_registry import DefinitionVersion
from auto_runtime.playbooks.run_service import RunService
from auto_runtime.problems import Rejection, unavailable
from auto_runtime.runs.facts import run_stream
from auto_runtime.runs.view import RunState
from auto_runtime.server_clock import ServerClock
from auto_runtime.workflow_host.run_store import Applied, Definition, RunStore, UnknownRun

log = logging.getLogger("auto_runtime.workflows")

START_KEY: Final = "workflow-start:"
EVENT_PREFIX: Final = "workflow-event:"
OFFER_PREFIX: Final = "workflow-offer:"
BEGIN_WAIT_SECONDS: Final = 30
"""The most a start waits for the partition's holder to begin the run (a guard: then `unavailable`)."""
RETRY_AFTER_SECONDS: Final = 1
NOT_BEGUN = (
    "The run was handed to the server holding its partition, which has not begun it yet; send the same request "
    "again shortly."
)


def start_entry(
    scope: PlaybookScope,
    run_id: str,
    at: datetime,
    definition: tuple[str, int, str],
    value: Any,
    caller_id: str,
    causation_id: str | None,
    extra_metadata: Mapping[str, Any],
    call_bounds_ms: Mapping[str, int],
) -> DueEntry:
    """The `workflow-start:` entry that has the holder of the run's partition start it (`apply_start`), with
    `definition` as (name, version, source)."""
    name, version, source = definition
    payload = {
        "name": name,
        "version": version,
        "source": source,
        "input": value,
        "caller_id": caller_id,
        "causation_id": causation_id,
        "metadata": dict(extra_metadata),
        "call_bounds_ms": dict(call_bounds_ms),
    }
    return DueEntry(scope, run_id, START_KEY, at, payload)


def offer_entry(scope: PlaybookScope, run_id: str, at: datetime, offered: EventOffered) -> DueEntry:
    """The `workflow-offer:` entry that has the holder of the run's partition offer it a playbook event
    (`apply_offer`); keyed by the event's record, so the same offer is armed once."""
    payload = {"record_id": offered.record_id, "event": dict(offered.event)}
    return DueEntry(scope, run_id, f"{OFFER_PREFIX}{offered.record_id}", at, payload)


class ForwardedRequests:
    """Records starts and sent events for the holder of a run's partition, and applies them there (see the
    module). `wake` is called when an applied start or event armed due work (the timer loop's `wake`)."""

    def __init__(
        self,
        ledger: Ledger,
        store: RunStore,
        runs: RunService,
        fences: Fences,
        wake: Callable[[], None],
        sweep: timedelta,
        clock: ServerClock,
    ) -> None:
        self.ledger = ledger
        self.clock = clock
        self.store = store
        self.runs = runs
        self.fences = fences
        self.wake = wake
        self.sweep = sweep

    async def record_start(
        self,
        scope: PlaybookScope,
        definition: DefinitionVersion,
        value: Any,
        run_id: str,
        caller_id: str,
        causation_id: str | None,
        extra_metadata: Mapping[str, Any],
        call_bounds_ms: Mapping[str, int],
    ) -> LeaseFence | None:
        """Record the start for the partition's holder and wait for the run to begin; raises the run's rejection
        when it ended rejected in its first input, `unavailable` when it did not begin in time. Answers None once
        the run began, or the partition's fence when this server took the partition meanwhile: the caller (the
        run's actor, which the holder's start would wait for) then starts the run itself, under that fence."""
        named = (definition.name, definition.version, definition.source)
        entry = start_entry(
            scope, run_id, self.clock.now(), named, value, caller_id, causation_id, extra_metadata, call_bounds_ms
        )
        await self.ledger.due_work.arm([entry])
        begun = await self._begun(scope, run_id)
        if begun is None:
            raise unavailable(NOT_BEGUN, retry_after=RETRY_AFTER_SECONDS)
        if isinstance(begun, LeaseFence):
            return begun
        if begun.status == "rejected":
            raise begun.final_rejection()
        return None

    async def _begun(self, scope: PlaybookScope, run_id: str) -> RunState | LeaseFence | None:
        """The run once its stream exists, or the partition's fence once this server holds it (looked at least
        each sweep), or None past `BEGIN_WAIT_SECONDS`. Woken when the holder names the run begun
        (`Ledger.runs_begun`), not at every append this process hears of: a busy server's waiting starts read only
        when their own run moved, and each sweep (a holder that began the run but could not tell, or a run begun
        some other way)."""
        begun = self.ledger.runs_begun
        with trio.move_on_after(BEGIN_WAIT_SECONDS):
            stream = run_stream(scope, run_id)
            while True:
                told = begun.watch(run_id)  # before the read: a name told after it is not missed
                try:
                    if await self.ledger.stream_version(stream) > 0:  # one row read per wake, the run read once
                        state = await self.runs.read_run(scope, run_id)
                        if state is not None:
                            return state
                    fence = self.fences.of_key(run_id)
                    if fence is not None:
                        return fence
                    with trio.move_on_after(self.sweep.total_seconds()):
                        await told.wait()
                finally:
                    begun.forget(run_id, told)
        return None

    async def record_event(self, scope: PlaybookScope, run_id: str, delivered: Mapping[str, Any]) -> None:
        """Record an event sent to the run for the partition's holder (who applies it as the run's input)."""
        key = f"{EVENT_PREFIX}{delivered['id']}"
        await self.ledger.due_work.arm([DueEntry(scope, run_id, key, self.clock.now(), {"event": dict(delivered)})])

    async def apply_start(self, entry: DueEntry, fence: LeaseFence) -> None:
        """The holder's handler of a `workflow-start:` entry: start the run under the fence, the entry marked
        fired in the start's own append (alone when the start was stale: its stream exists, started by a crash's
        earlier try)."""
        payload = entry.payload
        scope = entry.scope
        assert isinstance(scope, PlaybookScope)
        document = await self.runs.definitions.actors.documents.parsed(
            (scope.org, scope.playbook), "workflow", payload["name"], payload["version"], payload["source"]
        )
        if isinstance(document, Rejection):  # the arriving server parsed the same source: not expected
            log.error("a forwarded start of %s names a document that does not parse: %s", entry.run_id, document)
        else:
            applied = await self.store.start_run(
                scope,
                entry.run_id,
                Definition(payload["name"], payload["version"], document),
                payload["input"],
                payload["caller_id"],
                call_bounds_ms=payload["call_bounds_ms"],
                causation_id=payload["causation_id"],
                extra_metadata=payload["metadata"],
                fence=fence,
                fired=[entry.due_key],
            )
            self._armed(applied)
            if not applied.stale:
                await self.ledger.tell_runs_begun([entry.run_id])
                return
        await self.ledger.due_work.mark_fired([entry.due_key], fence=fence)
        await self.ledger.tell_runs_begun([entry.run_id])

    async def apply_event(self, entry: DueEntry, fence: LeaseFence) -> None:
        """The holder's handler of a `workflow-event:` entry: the event as the run's input, marked fired in its
        append (alone when the run ended or took that event already)."""
        received = EventReceived(str(uuid7()), self.clock.now_ms(), dict(entry.payload["event"]))
        await self._apply(entry, received, fence)

    async def apply_offer(self, entry: DueEntry, fence: LeaseFence) -> None:
        """The holder's handler of a `workflow-offer:` entry: the playbook event offered to the run, marked fired in
        its append (alone when the run ended, or no open listen took it: an offer never waits)."""
        payload = entry.payload
        offered = EventOffered(str(uuid7()), self.clock.now_ms(), str(payload["record_id"]), dict(payload["event"]))
        await self._apply(entry, offered, fence)

    async def _apply(self, entry: DueEntry, given: EventReceived | EventOffered, fence: LeaseFence) -> None:
        """`given` as the input of the entry's run, the entry marked fired in its append, or alone when the run
        ended or took it already (stale); the loop woken when the input armed due work."""
        scope = entry.scope
        assert isinstance(scope, PlaybookScope)
        try:
            applied = await self.store.apply_input(scope, entry.run_id, given, fence=fence, fired=[entry.due_key])
        except UnknownRun:
            applied = Applied(stale=True)
        if applied.stale:
            await self.ledger.due_work.mark_fired([entry.due_key], fence=fence)
        self._armed(applied)

    def _armed(self, applied: Applied) -> None:
        if applied.arms:
            self.wake()
