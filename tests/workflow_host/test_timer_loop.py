"""The timer loop end to end: a run that waits `PT0.1S` is woken by the loop and ends, on real time."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import trio
import trio.testing

from auto_runtime.functions.computation.computation_type import ComputationType
from auto_runtime.functions.registry import function_types
from auto_runtime.ledger import (
    DueEntry,
    DueWorkChanges,
    Ledger,
    NewRecord,
    StreamWrite,
    partition_lease_name,
    partition_of,
    uuid7,
)
from auto_runtime.ledger.due_work import encode_changes
from auto_runtime.ledger.sqlite.store import SqliteLedger
from auto_runtime.playbooks.definition_registry import DefinitionRegistry
from auto_runtime.playbooks.run_service import RunService
from auto_runtime.runs.facts import run_stream
from auto_runtime.sandbox.checker import Checkers
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.pool import SandboxPool
from auto_runtime.workflow_host.calls import CallDispatcher
from auto_runtime.workflow_host.run_store import RunStore
from auto_runtime.workflow_host.timer_loop import TimerLoop
from tests.stored_rows import stored_rows
from tests.workflow_host.conftest import DOUBLE, SCOPE, definition

WAIT_THEN_SET = "do:\n  - pause: { wait: PT0.1S }\n  - done: { set: { done: true } }\n"
WAIT_THEN_CALL = (
    "do:\n  - pause: { wait: PT0.1S }\n"
    "  - double: { call: run_definition, with: { type: computation, name: double, input: { n: 21 } } }\n"
)
SWEEP = timedelta(milliseconds=50)
BOUND_SECONDS = 60


async def status_of(ledger: Ledger, run_id: str) -> str:
    status = await ledger.queries.runs.status(SCOPE.org, SCOPE.playbook, run_id)
    assert status is not None, f"no run {run_id}"
    return status


async def ended(ledger: Ledger, run_id: str) -> str:
    """The run's ending once it has one; the bound only keeps a broken loop from hanging the suite."""
    with trio.fail_after(BOUND_SECONDS):
        while True:
            seen = ledger.appended.generation
            if (status := await status_of(ledger, run_id)) != "started":
                break
            await ledger.appended.wait_beyond(seen)
    return status


async def until_due(ledger: Ledger) -> None:
    """Until the ledger answers an entry as due at the time the loop reads (the clock passed its `due_at`,
    which is no Trio event, so it is polled); the bound only keeps a broken ledger from hanging the suite."""
    with trio.fail_after(BOUND_SECONDS):
        while not await ledger.due_work.due(datetime.now(UTC), limit=10):  # noqa: ASYNC110
            await trio.sleep(0.01)


async def states_of(ledger: Ledger, run_id: str) -> list[str]:
    return sorted(row.state for row in await ledger.due_work.entries_of_run(SCOPE, run_id))


async def until_none_armed(ledger: Ledger, run_id: str) -> None:
    """Until none of the run's due entries is armed: the loop marks an entry fired after the input it fired
    was applied, so a run may have ended before it (a mark is no Trio event, so it is polled); the bound only
    keeps a broken loop from hanging the suite."""
    with trio.fail_after(BOUND_SECONDS):
        while "armed" in await states_of(ledger, run_id):  # noqa: ASYNC110
            await trio.sleep(0.01)


async def test_the_loop_fires_a_due_wait_and_the_run_succeeds(ledger: Ledger, store: RunStore) -> None:
    run_id = str(uuid7())
    async with trio.open_nursery() as nursery:
        loop = TimerLoop(store, "server-a", SWEEP)
        await nursery.start(loop.run)
        await store.start_run(SCOPE, run_id, definition(WAIT_THEN_SET), {}, "caller-1")
        loop.wake()
        assert await ended(ledger, run_id) == "succeeded"
        await until_none_armed(ledger, run_id)
        nursery.cancel_scope.cancel()
    records = await ledger.read_stream(run_stream(SCOPE, run_id))
    assert [r.type for r in records] == [
        "run_started",
        "workflow_input_applied",
        "step_waiting",
        "run_deferred",
        "workflow_input_applied",
        "step_finished",
        "step_finished",
        "run_succeeded",
    ]
    assert records[-1].data["output"] == {"done": True}
    assert await states_of(ledger, run_id) == ["cancelled", "fired"]
    assert await ledger.leases.read_all("partition:")  # held while the loop ran,
    for prefix in ("partition:", "server:"):  # and released when it stopped
        assert all(row.holder is None for row in await ledger.leases.read_all(prefix))


async def test_the_loop_tells_the_ledger_which_due_work_wakes_the_partitions_holders(
    ledger: Ledger, store: RunStore
) -> None:
    """The ledger's `due_wake` follows the partitions the loop holds, its sweep and its clock: work due within a
    sweep wakes the other servers while its partition is held elsewhere (here, none yet), not once held here."""
    now = datetime(2030, 1, 1, tzinfo=UTC)
    loop = TimerLoop(store, "server-a", SWEEP, clock=lambda: now)
    soon = encode_changes(DueWorkChanges(arm=[DueEntry(SCOPE, str(uuid7()), "timer", now + SWEEP)]))
    later = encode_changes(DueWorkChanges(arm=[DueEntry(SCOPE, str(uuid7()), "timer", now + 2 * SWEEP)]))
    assert ledger.due_wake.wakes(soon) and not ledger.due_wake.wakes(later)
    await loop.sweep_once()
    assert loop.partitions.holds_all()  # alone, it took every partition
    assert not ledger.due_wake.wakes(soon)
    await loop.partitions.release_all()


async def test_only_the_partition_holder_fires_and_a_second_fire_is_stale(ledger: Ledger, store: RunStore) -> None:
    run_id = str(uuid7())
    partition = ledger.lease(partition_lease_name(partition_of(run_id, ledger.partitioning.count)))
    await partition.claim("server-a", timedelta(minutes=5))
    standby = TimerLoop(store, "server-b", SWEEP)
    await store.start_run(SCOPE, run_id, definition(WAIT_THEN_SET), {}, "caller-1")
    (wait,) = [row for row in await ledger.due_work.entries_of_run(SCOPE, run_id) if row.payload == {"purpose": "wait"}]
    assert wait.due_at is not None
    await until_due(ledger)
    await standby.sweep_once()
    assert partition_of(run_id, ledger.partitioning.count) not in standby.partitions.held()
    assert len(standby.partitions.held()) == ledger.partitioning.count - 1  # every free one, alone as it was
    assert await status_of(ledger, run_id) == "started"

    holder = TimerLoop(store, "server-a", SWEEP)
    await holder.sweep_once()
    assert await status_of(ledger, run_id) == "succeeded"
    length = len(await ledger.read_stream(run_stream(SCOPE, run_id)))
    fence = (await partition.claim("server-a", timedelta(minutes=5))).fence()
    again = await holder.fire(DueEntry(SCOPE, run_id, wait.key, wait.due_at, wait.payload), fence)
    assert again is not None and again.stale
    assert len(await ledger.read_stream(run_stream(SCOPE, run_id))) == length


async def test_the_loop_dispatches_a_call_a_fired_timer_made_and_the_run_succeeds(
    ledger: Ledger, store: RunStore, dispatcher: CallDispatcher
) -> None:
    run_id = str(uuid7())
    async with trio.open_nursery() as nursery:
        loop = TimerLoop(store, "server-a", SWEEP, dispatcher)
        await nursery.start(loop.run)
        await store.start_run(SCOPE, run_id, definition(WAIT_THEN_CALL), {}, "caller-1")
        loop.wake()
        assert await ended(ledger, run_id) == "succeeded"
        nursery.cancel_scope.cancel()
    records = await ledger.read_stream(run_stream(SCOPE, run_id))
    assert records[-1].data["output"] == {"n": 42}
    assert [r.type for r in records].count("workflow_input_applied") == 3
    # The entry is marked fired once the caller took the answer; a loop stopped in between leaves it armed,
    # and the next sweep dispatches it again, which changes nothing.
    await TimerLoop(store, "server-a", SWEEP, dispatcher).sweep_once()
    rows = {row.key: row.state for row in await ledger.due_work.entries_of_run(SCOPE, run_id)}
    (call_key,) = [key for key in rows if key.startswith("call:")]
    assert rows[call_key] == "fired"
    callee = await ledger.read_stream(run_stream(SCOPE, call_key.removeprefix("call:")))
    assert [r.type for r in callee] == ["run_started", "run_succeeded"]
    assert len(await ledger.read_stream(run_stream(SCOPE, run_id))) == len(records)


async def test_a_call_left_in_the_outbox_is_dispatched_by_the_next_sweep(
    ledger: Ledger, store: RunStore, dispatcher: CallDispatcher
) -> None:
    run_id = str(uuid7())
    source = "do:\n  - double: { call: run_definition, with: { type: computation, name: double, input: { n: 1 } } }\n"
    await store.start_run(SCOPE, run_id, definition(source), {}, "caller-1")  # its dispatch never came
    await TimerLoop(store, "server-a", SWEEP, dispatcher).sweep_once()
    assert await status_of(ledger, run_id) == "succeeded"
    records = await ledger.read_stream(run_stream(SCOPE, run_id))
    assert records[-1].data["output"] == {"n": 2}


async def test_an_input_that_breaks_down_ends_its_run_failed_and_the_loop_goes_on(
    ledger: Ledger, store: RunStore
) -> None:
    broken, healthy = str(uuid7()), str(uuid7())
    await store.start_run(SCOPE, broken, definition(WAIT_THEN_SET), {}, "caller-1")
    loaded = await store.load(SCOPE, broken)
    assert loaded is not None
    unreadable = NewRecord(
        "workflow_input_applied",
        {"run_id": broken},
        {**loaded.metadata, "causation_id": None, "state": {"format": "not a state this server reads"}},
    )
    await ledger.append([StreamWrite(run_stream(SCOPE, broken), loaded.version, [unreadable])])
    async with trio.open_nursery() as nursery:
        loop = TimerLoop(store, "server-a", SWEEP)
        await nursery.start(loop.run)
        await store.start_run(SCOPE, healthy, definition(WAIT_THEN_SET), {}, "caller-1")
        loop.wake()
        assert await ended(ledger, broken) == "failed"
        assert await ended(ledger, healthy) == "succeeded"
        await until_none_armed(ledger, broken)
        nursery.cancel_scope.cancel()
    failed = (await ledger.read_stream(run_stream(SCOPE, broken)))[-1]
    assert failed.type == "run_failed"
    assert failed.data["reason"] == "internal"
    assert failed.data["instance"].startswith("urn:uuid:")
    assert not await store.is_running(SCOPE, broken), "the ending ends the stored state, so later inputs are stale"
    assert await store.is_running(SCOPE, str(uuid7())) is False
    assert {row.state for row in await ledger.due_work.entries_of_run(SCOPE, broken)} <= {"cancelled", "fired"}


async def test_a_fired_timer_is_marked_in_the_append_of_the_input_it_fed(ledger: Ledger, store: RunStore) -> None:
    run_id = str(uuid7())
    await store.start_run(SCOPE, run_id, definition(WAIT_THEN_SET), {}, "caller-1")
    (wait,) = [row for row in await ledger.due_work.entries_of_run(SCOPE, run_id) if row.payload == {"purpose": "wait"}]
    assert wait.due_at is not None
    fence = (await ledger.lease().claim("server-a", timedelta(minutes=5))).fence()
    commits = ledger.writer.batches if isinstance(ledger, SqliteLedger) else 0
    applied = await TimerLoop(store, "server-a", SWEEP).fire(
        DueEntry(SCOPE, run_id, wait.key, wait.due_at, wait.payload), fence
    )
    assert applied is not None and not applied.stale and applied.status == "succeeded"
    (fed,) = [record for record in applied.records if record.type == "workflow_input_applied"]
    assert fed.data["input"] == {"kind": "timer_fired", "key": wait.key}
    rows = {row.key: row.state for row in await ledger.due_work.entries_of_run(SCOPE, run_id)}
    assert rows[wait.key] == "fired"
    if isinstance(ledger, SqliteLedger):
        assert ledger.writer.batches == commits + 1  # one commit: the input's append, which carried the mark
    else:  # the row's mark and the input's record were written by one transaction
        (mark,) = await stored_rows(
            ledger, "SELECT xmin::text AS tx FROM ledger_due_work WHERE run_id = ? AND key = ?", [run_id, wait.key]
        )
        (record,) = await stored_rows(ledger, "SELECT xmin::text AS tx FROM ledger_records WHERE id = ?", [fed.id])
        assert mark["tx"] == record["tx"]


async def test_a_fresh_claim_is_not_claimed_again_until_it_is_due_for_renewal(
    ledger: Ledger, store: RunStore, mock_clock: trio.testing.MockClock
) -> None:
    loop = TimerLoop(store, "server-a", SWEEP)
    home = ledger.lease(partition_lease_name(0))
    assert await loop.sweep_once() <= SWEEP
    first = await home.holder()
    assert first.holder == "server-a" and first.until is not None
    for _ in range(3):  # woken again and again within the sweep: the claim is fresh, nothing is written
        assert await loop.sweep_once() <= SWEEP
    again = await home.holder()
    assert (again.holder, again.until, again.fencing) == (first.holder, first.until, first.fencing)
    assert loop.partitions() == first.fence()
    mock_clock.jump(SWEEP.total_seconds())  # a sweep later the claim is due for renewal
    await loop.sweep_once()
    renewed = await home.holder()
    assert renewed.holder == "server-a" and renewed.fencing == first.fencing
    assert renewed.until is not None and renewed.until > first.until


async def test_the_loop_sleeps_while_a_call_is_in_flight(
    ledger: Ledger, store: RunStore, engine: SandboxEngine
) -> None:
    """A call in flight keeps its entry armed and past due until its caller took the answer; the loop must not
    sweep again for it. The test holds the sandbox's only worker, so the call waits in flight until released."""
    run_id = str(uuid7())
    source = "do:\n  - double: { call: run_definition, with: { type: computation, name: double, input: { n: 4 } } }\n"
    pool = SandboxPool(engine, 1, wait_seconds=BOUND_SECONDS)
    checkers: Checkers[object] = Checkers()
    held, occupied = threading.Event(), threading.Event()

    def occupy(control: RunControl) -> tuple[None, bool]:
        occupied.set()
        held.wait(BOUND_SECONDS)
        return None, False

    try:
        types = function_types(ComputationType(engine, pool, checkers))
        definitions = DefinitionRegistry(ledger, types)
        async with definitions.actors.serving(), trio.open_nursery() as nursery:
            await definitions.create(SCOPE, "computation", "double", DOUBLE, "tester")
            nursery.start_soon(pool.workers.submit, occupy, RunControl(time.monotonic() + BOUND_SECONDS))
            await trio.to_thread.run_sync(occupied.wait, BOUND_SECONDS)
            loop = TimerLoop(
                store, "server-a", timedelta(hours=1), CallDispatcher(store, RunService(ledger, definitions, types))
            )
            await nursery.start(loop.run)
            await store.start_run(SCOPE, run_id, definition(source), {}, "caller-1")
            loop.wake()
            with trio.fail_after(BOUND_SECONDS):
                while not loop.in_flight:  # noqa: ASYNC110 (the dispatch's start is no event the test can await)
                    await trio.sleep(0.01)
            before = loop.sweeps
            for _ in range(50):  # the ledger's round trips, during which a busy loop would sweep again and again
                await ledger.queries.runs.status(SCOPE.org, SCOPE.playbook, run_id)
            assert loop.sweeps - before <= 1, "the loop swept again while only the call in flight was due"
            held.set()
            assert await ended(ledger, run_id) == "succeeded"
            nursery.cancel_scope.cancel()
    finally:
        held.set()
        pool.close()
        checkers.close()
    records = await ledger.read_stream(run_stream(SCOPE, run_id))
    assert records[-1].data["output"] == {"n": 8}
