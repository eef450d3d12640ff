"""The host loop for due work: fire timers as `TimerFired` inputs and carry out the outbox (calls, answers,
cancels; see `outbox`) of the partitions this server holds.

A sweep renews the server's partition leases (`PartitionLeases.renew`: look, balance, claim) unless the claims
held are fresh: they are claimed again only once due for renewal (`workflow_lease_renewal`: a sweep after they
were asked), so a sweep a run's new timer woke early reads the due work without a write of its own. A server
holding no partition sleeps a sweep and looks again. A holder reads the due entries of its partitions and, for
each timer, applies `TimerFired(entry.key)` to its run through `RunStore.apply_input` under the fence of the
entry's partition (an `answer:` entry as `CallAnswered`, a `cancel:` entry as `CancelRequested`, a key with a
handler through it), the entry marked fired in the input's own append (`RunStore.apply_input(..., fired=...)`).
It fires for at most half its claim, then releases the partitions above its share (`release_surplus`), and
sweeps again at once when work is left (claiming, since the claims are then due for renewal); otherwise it
sleeps until the next due entry, the next sweep or the claims' renewal, whichever comes first.

Rules:

- An entry is marked fired in the append that records its input, so the two commit together. An input the
  run's state finds stale appends nothing, and the entry is then marked fired alone; a crash before that
  mark delivers it again at the next sweep, stale again.
- `LeaseLost` (another server took the entry's partition) ends the sweep: nothing of that input was appended,
  and the partition is no longer answered (`PartitionLeases.lost`) until a later look claims it again.
- An entry whose run is not a workflow run here (`UnknownRun`) is marked fired: nothing can take it.
- The loop is woken (`wake`) only by inputs that leave due work armed (`Applied.arms`: an input that arms
  and cancels the same timer wakes nothing), and on PostgreSQL by another server that recorded due work due
  soon for a partition it does not hold (a start, an event, an offer, an answer or a cancel it took for a run
  of another partition: `Ledger.due_recorded`, its `LISTEN/NOTIFY`, sent by the ledger itself). The loop tells
  the ledger which partitions this server holds, its sweep and its clock (`Ledger.due_wake`), so a write of
  this server wakes the others in turn: work due later than a sweep from now needs no wake, since every sweep
  reads the next due time of the partitions held.
- Only one server fires a partition's timers at a time; within it, the entries of different runs fire
  concurrently, those of one run one after another in due order (concurrent appliers of one run would only
  race on its version). The runs of a sweep take the `FIRING_AT_ONCE` slots in turn fairly across orgs, then playbooks
  (`fair_firing`), so an org whose runs keep coming due, such as a run that loops on a zero wait, cannot keep
  another org's due runs waiting behind its own; the sweeps read the entries in due order, so an entry read in
  no sweep yet is read before any entry that came due after it.
  `partitions` tells the server's other parts (starts, sent events, followers) which partitions it holds.
- Calls kept in the outbox (`outbox`) are dispatched by the loop's `CallDispatcher` in tasks of their own,
  outside the claim's time (a call may outlast it): one task per entry at a time, the entry marked fired
  once the caller took the answer. An entry in flight is no reason to sweep: the loop sleeps until the next
  entry it is not carrying out, a wake (a dispatch that ends wakes it) or the sweep. A call's answer needs no
  fence: the caller's stream version guards it, and a second dispatch runs nothing twice. A loop without a
  dispatcher leaves calls for one that has one.
- An input that breaks down inside the runtime (the engine raises, a state this server cannot read, an
  input too large to record) ends its run `failed` with an incident (`RunStore.fail_run`, the entry marked
  fired in that append), logged with the traceback, so one broken run never stops the others. A store that
  fails ends the loop with that error, leaving the entry armed: the loop's owner (a supervisor) restarts it.
- A ledger that cannot take writes (`LedgerUnavailable`, a full disk) does not end the loop: the sweep stops,
  what it could not record stays armed (a call it could not start waits for a later sweep), and the loop
  sweeps again after a back-off (`store_faults`). The claim it could not renew lapses as any claim does.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta

import trio

from auto_runtime.actors import MailboxFull
from auto_runtime.clock_text import now_utc
from auto_runtime.functions.workflow.engine.model import Input, TimerFired
from auto_runtime.functions.workflow.outbox import (
    answer_of,
    call_of,
    cancel_of,
    is_answer_key,
    is_call_key,
    is_cancel_key,
)
from auto_runtime.ledger import (
    DueEntry,
    DueKey,
    LeaseFence,
    LeaseLost,
    LedgerError,
    LedgerUnavailable,
    PlaybookScope,
    uuid7,
)
from auto_runtime.ledger.due_work import MAX_DUE_LIMIT
from auto_runtime.metrics import taken_up
from auto_runtime.workflow_host.calls import CallDispatcher
from auto_runtime.workflow_host.fair_firing import FairSlots, owner_of
from auto_runtime.workflow_host.partition_leases import PartitionLeases
from auto_runtime.workflow_host.run_store import Applied, RunStore, RunStoreConflict, UnknownRun
from auto_runtime.workflow_host.store_faults import FaultPause

log = logging.getLogger("auto_runtime.workflows")

DUE_BATCH = 100
LATEST_DUE = datetime(9999, 1, 1, tzinfo=UTC)
"""Later than any entry's due time: `due(LATEST_DUE)` reads the armed entries in due order."""
FIRING_AT_ONCE = 16
"""Runs whose due entries fire at the same time within one sweep (their slots handed out fairly by org)."""
DueHandler = Callable[[DueEntry, LeaseFence], Awaitable[None]]
"""Carries out one due entry of a kind the loop does not know (`handlers`) and marks it fired, in its own last
write when it can (the loop does not mark it again)."""


class TimerLoop:
    """Fires due timers and carries out the outbox (calls, answers, cancels) of the workflow runs of the
    partitions `server_id` holds (`partitions`).

    `handlers` maps a key prefix to the handler of entries with such keys (a schedule trigger's, say).
    `nested_runs` bounds how many calls run at once (`WORKFLOW_NESTED_RUNS`); more wait their turn."""

    def __init__(
        self,
        store: RunStore,
        server_id: str,
        sweep: timedelta,
        dispatcher: CallDispatcher | None = None,
        *,
        nested_runs: int = 32,
        handlers: Mapping[str, DueHandler] | None = None,
        clock: Callable[[], datetime] = now_utc,
    ) -> None:
        self.store = store
        self.ledger = store.ledger
        self.server_id = server_id
        self.sweep = sweep
        self.dispatcher = dispatcher
        self.handlers = dict(handlers or {})
        self.clock = clock
        """The time entries are due against (a test's own clock; the claim's times stay Trio's)."""
        self.partitions = PartitionLeases(self.ledger, server_id, sweep)
        self.ledger.due_wake.watch(self.partitions.holds, sweep, clock)
        self.calls = trio.CapacityLimiter(nested_runs)
        self.firing = FairSlots(FIRING_AT_ONCE)
        self._wake = trio.Event()
        self._nursery: trio.Nursery | None = None
        self._in_flight: set[DueKey] = set()
        self._lost_in_sweep = False
        self.sweeps = 0
        """Sweeps made so far (the first, and one each time the loop was woken or its pause ran out)."""
        self._fault: LedgerUnavailable | None = None
        self.faults = FaultPause("the workflow timer loop")

    @property
    def in_flight(self) -> int:
        """Calls dispatched and not yet taken by their callers (their entries stay armed meanwhile)."""
        return len(self._in_flight)

    def wake(self) -> None:
        """Sweep now rather than at the next due time (after a run armed a timer or a call sooner than it)."""
        self._wake.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Sweep until cancelled; a cancelled loop releases its partitions so other servers take them at once."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._wake_on_due_recorded)
                task_status.started()
                while True:
                    try:
                        pause = await self.sweep_once()
                    except LedgerUnavailable:
                        await trio.sleep(self.faults.after_fault())
                        continue
                    self.faults.went_through()
                    with trio.move_on_after(pause.total_seconds()):
                        await self._wake.wait()
                    self._wake = trio.Event()
        finally:
            self._nursery = None
            with trio.CancelScope(shield=True):
                try:
                    await self.partitions.release_all()
                except LedgerUnavailable:
                    log.warning("the partitions could not be released (the ledger's disk is full); they lapse")

    async def _wake_on_due_recorded(self) -> None:
        """Sweep when a server recorded due work due soon for a partition it does not hold (a request it took for
        a run of a partition this server may hold: `Ledger.due_recorded`), not only at the next sweep."""
        generation = self.ledger.due_recorded.generation
        while True:
            await self.ledger.due_recorded.wait_beyond(generation)
            generation = self.ledger.due_recorded.generation
            self.wake()

    async def sweep_once(self) -> timedelta:
        """One sweep: renew the partitions unless their claims are fresh, fire what is due in them for at most
        half the claim, release those above this server's share; answers how long to sleep.

        Entries of different runs fire concurrently (`FIRING_AT_ONCE`), those of one run in due order. A sweep
        that found a full batch, or ran out of its time, asks to sweep again at once, so a busy holder renews
        its claim at least every half lapse and `fence()` never lapses under load; an idle holder sleeps at
        most until its claim is due for renewal. Outside `run`, due calls are dispatched before it returns. A
        ledger that cannot take writes raises `LedgerUnavailable` once the calls taken are dispatched (see the
        module's rules)."""
        self.sweeps += 1
        if not await self.partitions.renew():
            return self.sweep
        calls: list[DueEntry] = []
        runs: dict[tuple[str, str], list[DueEntry]] = {}
        more = True
        self._lost_in_sweep = False
        with trio.move_on_at(self.partitions.firing_until):
            limit = DUE_BATCH + len(self._in_flight)
            entries = await self.ledger.due_work.due(self.clock(), limit=limit, partitions=self._reading())
            taken_up(entries, self.clock(), self._in_flight)
            for entry in entries:
                if is_call_key(entry.key):
                    if self.dispatcher is not None and entry.due_key not in self._in_flight:
                        self._in_flight.add(entry.due_key)
                        calls.append(entry)
                else:
                    runs.setdefault((entry.scope.key, entry.run_id), []).append(entry)
            async with trio.open_nursery() as nursery:
                for group in runs.values():
                    nursery.start_soon(self._fire_in_order, group, nursery.cancel_scope)
            more = len(entries) == limit
        for entry in calls:
            if self._nursery is not None:
                self._nursery.start_soon(self.dispatch, entry)
            else:
                await self.dispatch(entry)
        fault, self._fault = self._fault, None
        if fault is not None:
            raise fault
        await self.partitions.release_surplus()
        if self._lost_in_sweep:
            return self.sweep
        if more:
            return timedelta(0)
        renewal = self.partitions.until_renewal()
        next_due = await self._next_due()
        if next_due is None:
            return min(self.sweep, renewal)
        return max(min(self.sweep, renewal, next_due - self.clock()), timedelta(0))

    async def _next_due(self) -> datetime | None:
        """The earliest due time of an armed entry this loop is not carrying out already. A call in flight stays
        armed (and past due) until its caller took the answer: it is no reason to sweep again, or the loop would
        sweep at once, over and over, for as long as the call runs; its dispatch wakes the loop when it ends."""
        if not self._in_flight:
            return await self.ledger.due_work.next_due(self._reading())
        limit = min(len(self._in_flight) + 1, MAX_DUE_LIMIT)
        earliest = await self.ledger.due_work.due(LATEST_DUE, limit=limit, partitions=self._reading())
        return next((entry.due_at for entry in earliest if entry.due_key not in self._in_flight), None)

    def _reading(self) -> frozenset[int] | None:
        """The partitions whose due work this server reads (None: every one, as it holds them all)."""
        return None if self.partitions.holds_all() else self.partitions.held()

    async def _fire_in_order(self, group: list[DueEntry], sweep: trio.CancelScope) -> None:
        """Fire one run's due entries in order, each under its partition's fence; `LeaseLost` or
        `LedgerUnavailable` ends the whole sweep (nothing more is fired)."""
        async with self.firing.held(owner_of(group[0].scope)):
            for entry in group:
                fence = self.partitions.of_due(entry)
                if fence is None:
                    return  # the partition lapsed or was released meanwhile: its next holder fires the entry
                try:
                    await self.fire(entry, fence)
                except LeaseLost:
                    self.partitions.lost(self.partitions.partition_of_due(entry))
                    self._lost_in_sweep = True
                    sweep.cancel()
                    return
                except LedgerUnavailable as error:
                    self._fault = error
                    sweep.cancel()
                    return

    async def fire(self, entry: DueEntry, fence: LeaseFence) -> Applied | None:
        """Carry out one due entry that is not a call (a timer, an answer, a cancel, or a handler's), marked fired
        in the append of its input (alone when nothing was appended); None when its run is not a workflow run
        here or a handler took it."""
        applied: Applied | None = None
        marked = False
        handler = next((h for prefix, h in self.handlers.items() if entry.key.startswith(prefix)), None)
        if handler is not None:
            await handler(entry, fence)
            marked = True
        elif isinstance(entry.scope, PlaybookScope):
            at = max(self.store.clock(), int(entry.due_at.timestamp() * 1000))
            applied_input: Input
            if is_answer_key(entry.key):
                applied_input = answer_of(entry.payload, str(uuid7()), at)
            elif is_cancel_key(entry.key):
                applied_input = cancel_of(entry.payload, str(uuid7()), at)
            else:
                applied_input = TimerFired(str(uuid7()), at, entry.key)
            try:
                applied = await self.store.apply_input(
                    entry.scope, entry.run_id, applied_input, fence=fence, fired=[entry.due_key]
                )
                marked = not applied.stale
            except UnknownRun:
                applied = None
            except MailboxFull:
                return None  # the run has more inputs queued than its mailbox takes: a later sweep fires this again
            except (LedgerError, RunStoreConflict):
                raise
            except Exception:
                incident = f"urn:uuid:{uuid.uuid4()}"
                log.exception(
                    "input %s of the workflow run %s broke down: incident %s", entry.key, entry.run_id, incident
                )
                failed = await self.store.fail_run(
                    entry.scope, entry.run_id, incident, fence=fence, fired=[entry.due_key]
                )
                marked = failed is not None
                applied = None
        if not marked:
            await self.ledger.due_work.mark_fired([entry.due_key], fence=fence)
        if applied is not None and applied.arms:
            self.wake()
        return applied

    async def dispatch(self, entry: DueEntry) -> Applied | None:
        """Dispatch one due call (at most `nested_runs` at once); None when the caller is unknown or the callee
        answers later. The entry is marked fired once the call was started and, when it answers now, answered;
        a ledger that cannot take writes leaves it armed (None)."""
        assert self.dispatcher is not None
        applied: Applied | None = None
        try:
            async with self.calls:
                if isinstance(entry.scope, PlaybookScope):
                    try:
                        applied = await self.dispatcher.dispatch(entry.scope, entry.run_id, call_of(entry.payload))
                    except UnknownRun:
                        await self.ledger.due_work.mark_fired([entry.due_key])
        except (LedgerUnavailable, MailboxFull):
            return None  # the entry stays armed: a later sweep dispatches it again (the callee answers by its id)
        finally:
            self._in_flight.discard(entry.due_key)
        self.wake()
        return applied
