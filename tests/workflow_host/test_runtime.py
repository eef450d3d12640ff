"""The workflow runtime's own rules: only the holder of a run's partition starts it and applies events sent to it,
any other server taking them for the holder (issue 33); while stopping, `unavailable` with `Retry-After`; and a
cancellation is recorded once, on any server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import pytest
import trio
import trio.testing

from auto_runtime.functions.registry import function_types
from auto_runtime.functions.workflow.workflow_type import WorkflowType
from auto_runtime.ledger import (
    Ledger,
    partition_lease_name,
    partition_of,
    server_lease_name,
    uuid7,
    workflow_lease_lapse,
)
from auto_runtime.playbooks.definition_registry import DefinitionRegistry
from auto_runtime.playbooks.run_service import RunService
from auto_runtime.problems import Rejection
from auto_runtime.runs import RunWriter
from auto_runtime.runs.cancels import CancelRun
from auto_runtime.runs.facts import run_stream
from auto_runtime.runs.ids import is_run_id
from auto_runtime.sandbox.checker import Checkers
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.workflow_host.forwarded import BEGIN_WAIT_SECONDS
from auto_runtime.workflow_host.workflow_runtime import WorkflowRuntime
from tests.workflow_host.conftest import HEAD, SCOPE

LISTENS = "do:\n  - hear: { listen: { to: { one: { with: { type: com.acme.go } } } } }\n"
PAUSES = "do:\n  - pause: { wait: PT0.05S }\n  - done: { set: { done: true } }\n"
SETS = "do:\n  - one: { set: { n: 1 } }\n  - two: { set: { n: 2 } }\n  - three: { set: { n: 3 } }\n"
SWEEP = timedelta(milliseconds=50)


@pytest.fixture
async def runs(ledger: Ledger, engine: SandboxEngine) -> AsyncIterator[RunService]:
    checkers: Checkers[Any] = Checkers()
    try:
        types = function_types(WorkflowType(engine, checkers))
        definitions = DefinitionRegistry(ledger, types)
        async with definitions.actors.serving():
            await definitions.create(SCOPE, "workflow", "listens", HEAD + LISTENS, "tester")
            await definitions.create(SCOPE, "workflow", "pauses", HEAD + PAUSES, "tester")
            await definitions.create(SCOPE, "workflow", "sets", HEAD + SETS, "tester")
            runs = RunService(ledger, definitions, types)
            yield runs
    finally:
        checkers.close()


def runtime_of(
    ledger: Ledger, engine: SandboxEngine, runs: RunService, server_id: str, sweep: timedelta = SWEEP
) -> WorkflowRuntime:
    """A server's workflow runtime over its run service (each server process has one, and one set of playbook
    actors: see `other_server` for a second server)."""
    runtime = WorkflowRuntime(
        ledger,
        engine,
        runs,
        server_id=server_id,
        runtime_version="0.1.0",
        max_duration=timedelta(days=30),
        sweep=sweep,
        nested_runs=4,
    )
    runs.serve_waiting("workflow", runtime)
    runs.place_waiting_runs(runtime.new_run_id)
    return runtime


@asynccontextmanager
async def other_server(
    ledger: Ledger, engine: SandboxEngine, runs: RunService, server_id: str, sweep: timedelta = SWEEP
) -> AsyncIterator[WorkflowRuntime]:
    """Another server's workflow runtime on the same ledger: its own playbook actors and run service."""
    definitions = DefinitionRegistry(ledger, runs.types)
    async with definitions.actors.serving():
        yield runtime_of(ledger, engine, RunService(ledger, definitions, runs.types), server_id, sweep)


def assert_unavailable(refused: pytest.ExceptionInfo[Rejection]) -> None:
    assert refused.value.reason == "unavailable"
    assert refused.value.retry_after == 1
    assert "send the same request again shortly" in refused.value.detail


async def until_ended(ledger: Ledger, runs: RunService, run_id: str) -> str:
    """The run's status once it ended (woken by each append; bounded, not timed)."""
    with trio.fail_after(30):
        while True:
            seen = ledger.appended.generation
            if (state := await runs.read_run(SCOPE, run_id)) is not None and state.status != "started":
                return state.status
            await ledger.appended.wait_beyond(seen)


async def test_a_server_that_does_not_hold_the_partition_takes_starts_and_events_for_its_holder(
    ledger: Ledger, engine: SandboxEngine, runs: RunService
) -> None:
    holder = runtime_of(ledger, engine, runs, "server-a")
    async with trio.open_nursery() as nursery:
        await nursery.start(holder.run)
        async with other_server(ledger, engine, runs, "server-b") as standby:
            await standby.loop.sweep_once()
            assert standby.fence() is None and standby.loop.partitions.held() == frozenset()
            # A start answers as on the holder: the run as it began, or how it ended in its first input.
            started = await standby.runs.run_definition(SCOPE, "workflow", "listens", {}, None, "caller-1")
            assert started["status"] == "started"
            ended = await standby.runs.run_definition(SCOPE, "workflow", "sets", {}, None, "caller-1")
            assert (ended["status"], ended["output"]) == ("succeeded", {"n": 3})
            sent = await standby.send_event(SCOPE, started["run_id"], {"type": "com.acme.go", "id": "go-1"}, "c")
            assert (sent["run_id"], sent["event"]["id"]) == (started["run_id"], "go-1")
            assert await until_ended(ledger, runs, started["run_id"]) == "succeeded"
        nursery.cancel_scope.cancel()
    for run_id in (started["run_id"], ended["run_id"]):
        types = [r.type for r in await ledger.read_stream(run_stream(SCOPE, run_id))]
        assert types.count("run_started") == 1 and types[-1] == "run_succeeded"
    forwarded = {
        row.key: row.state
        for run_id in (started["run_id"], ended["run_id"])
        for row in await ledger.due_work.entries_of_run(SCOPE, run_id)
        if row.key.startswith(("workflow-start:", "workflow-event:"))
    }
    assert forwarded == {"workflow-start:": "fired", "workflow-event:go-1": "fired"}


async def test_a_handed_over_start_is_answered_when_the_holder_names_its_run_not_at_the_waiting_servers_sweep(
    ledger: Ledger, engine: SandboxEngine, runs: RunService
) -> None:
    """The waiting server's sweep is longer than a start waits (`BEGIN_WAIT_SECONDS`), so only the holder naming
    the run begun (`Ledger.tell_runs_begun`) can wake it in time: otherwise the start would answer `unavailable`."""
    holder = runtime_of(ledger, engine, runs, "server-a")
    async with trio.open_nursery() as nursery:
        await nursery.start(holder.run)
        slow = timedelta(seconds=BEGIN_WAIT_SECONDS * 2)
        async with other_server(ledger, engine, runs, "server-b", sweep=slow) as standby:
            # Never swept: not alive to the holder, which keeps every partition (none lapses within the test).
            assert standby.loop.partitions.held() == frozenset()
            run_id = str(uuid7())
            started = await standby.runs.run_definition(SCOPE, "workflow", "listens", {}, run_id, "caller-1")
            assert (started["run_id"], started["status"]) == (run_id, "started")
            assert len(ledger.runs_begun) == 0  # the waiter kept nothing
        nursery.cancel_scope.cancel()
    assert await start_entries(ledger, run_id) == [("workflow-start:", "fired")]


async def test_a_start_or_event_whose_partition_changed_hands_since_its_fence_was_read_goes_to_the_new_holder(
    ledger: Ledger, engine: SandboxEngine, runs: RunService
) -> None:
    """A server still answering a partition's fence after it was taken (released behind its back here, as a
    lapse under load does) meets `LeaseLost` in its write: the start or event is then taken for the new holder,
    not answered with an error."""
    stale = runtime_of(ledger, engine, runs, "server-a", sweep=timedelta(seconds=30))
    await stale.loop.sweep_once()
    held = sorted(stale.loop.partitions.held())
    assert len(held) == ledger.partitioning.count
    names = [server_lease_name("server-a"), *(partition_lease_name(p) for p in held)]
    async with trio.open_nursery() as nursery, other_server(ledger, engine, runs, "server-b") as holder:
        await ledger.leases.release_many(names, "server-a")
        await holder.loop.sweep_once()  # server-a's row is gone too: server-b alone takes every partition
        assert holder.loop.partitions.held() == frozenset(held)
        await nursery.start(holder.run)
        listening = await holder.runs.run_definition(SCOPE, "workflow", "listens", {}, None, "caller-1")
        assert stale.loop.partitions.held() == frozenset(held)  # it has not looked again yet
        ended = await stale.runs.run_definition(SCOPE, "workflow", "sets", {}, None, "caller-1")
        assert (ended["status"], ended["output"]) == ("succeeded", {"n": 3})
        sent = await stale.send_event(SCOPE, listening["run_id"], {"type": "com.acme.go", "id": "go-1"}, "c")
        assert sent["event"]["id"] == "go-1"
        assert await until_ended(ledger, runs, listening["run_id"]) == "succeeded"
        nursery.cancel_scope.cancel()


async def split_partitions(ledger: Ledger, first: WorkflowRuntime, second: WorkflowRuntime) -> None:
    """`first` and `second` each hold their share of the partitions: the second is alive (its own row) before the
    first claims, so the first takes only its share of the free partitions and the second the rest."""
    lapse = workflow_lease_lapse(SWEEP)
    await ledger.leases.claim_many([server_lease_name(second.loop.partitions.server_id)], "server-b", lapse)
    await first.loop.sweep_once()
    await second.loop.sweep_once()
    held = (first.loop.partitions.keeping(), second.loop.partitions.keeping())
    assert all(held) and held[0].isdisjoint(held[1])
    assert held[0] | held[1] == frozenset(range(ledger.partitioning.count))


async def start_entries(ledger: Ledger, run_id: str) -> list[tuple[str, str]]:
    """The run's `workflow-start:` entries (a start another server took for the run's partition) and their state."""
    rows = await ledger.due_work.entries_of_run(SCOPE, run_id)
    return [(row.key, row.state) for row in rows if row.key.startswith("workflow-start:")]


async def test_a_start_without_a_run_id_is_placed_in_a_partition_of_the_server_it_reaches_and_begun_there(
    ledger: Ledger, engine: SandboxEngine, runs: RunService
) -> None:
    """Issue 33: a start that names no run id gets one in a partition its server keeps and is begun there, with
    no `workflow-start:` entry for another server; a start naming a run id of the other server's partition is still
    taken for that server."""
    first = runtime_of(ledger, engine, runs, "server-a")
    async with other_server(ledger, engine, runs, "server-b") as second:
        await split_partitions(ledger, first, second)
        async with trio.open_nursery() as nursery:
            await nursery.start(first.run)
            await nursery.start(second.run)
            placed: list[str] = []
            for runtime in (first, second):
                keeping = runtime.loop.partitions.keeping()
                for name in ("sets", "listens", "sets"):
                    answer = await runtime.runs.run_definition(SCOPE, "workflow", name, {}, None, "caller-1")
                    run_id = str(answer["run_id"])
                    assert partition_of(run_id, ledger.partitioning.count) in keeping
                    assert answer["status"] == ("succeeded" if name == "sets" else "started")
                    placed.append(run_id)
            assert len(set(placed)) == len(placed)
            given = next(
                run_id
                for run_id in iter(lambda: str(uuid7()), "")
                if partition_of(run_id, ledger.partitioning.count) in second.loop.partitions.keeping()
            )
            answer = await first.runs.run_definition(SCOPE, "workflow", "sets", {}, given, "caller-1")
            assert (answer["run_id"], answer["status"]) == (given, "succeeded")
            nursery.cancel_scope.cancel()
    for run_id in placed:
        assert await start_entries(ledger, run_id) == []
        types = [r.type for r in await ledger.read_stream(run_stream(SCOPE, run_id))]
        assert types.count("run_started") == 1
    assert await start_entries(ledger, given) == [("workflow-start:", "fired")]


async def test_a_start_without_a_run_id_whose_partition_is_lost_before_its_append_goes_to_the_new_holder(
    ledger: Ledger, engine: SandboxEngine, runs: RunService
) -> None:
    """The race of placing: the id is drawn in a partition the server still answers the fence of, but another
    server took it meanwhile (released behind its back here, as a lapse under load does). The start's append is
    refused by the fence (`LeaseLost`), the start is taken for the new holder, and the run begins once, there."""
    stale = runtime_of(ledger, engine, runs, "server-a", sweep=timedelta(seconds=30))
    async with other_server(ledger, engine, runs, "server-b") as holder:
        await split_partitions(ledger, stale, holder)
        kept = stale.loop.partitions.keeping()
        names = [server_lease_name("server-a"), *(partition_lease_name(p) for p in sorted(kept))]
        await ledger.leases.release_many(names, "server-a")
        async with trio.open_nursery() as nursery:
            await nursery.start(holder.run)
            with trio.fail_after(30):  # until its next look finds server-a gone and takes every partition
                while not holder.loop.partitions.holds_all():  # noqa: ASYNC110
                    await trio.sleep(SWEEP.total_seconds())
            assert stale.loop.partitions.keeping() == kept  # it has not looked again yet
            ended = await stale.runs.run_definition(SCOPE, "workflow", "sets", {}, None, "caller-1")
            assert (ended["status"], ended["output"]) == ("succeeded", {"n": 3})
            run_id = str(ended["run_id"])
            assert partition_of(run_id, ledger.partitioning.count) in kept
            assert partition_of(run_id, ledger.partitioning.count) not in stale.loop.partitions.keeping()  # lost
            nursery.cancel_scope.cancel()
    types = [r.type for r in await ledger.read_stream(run_stream(SCOPE, run_id))]
    assert types.count("run_started") == 1 and types[-1] == "run_succeeded"
    assert await start_entries(ledger, run_id) == [("workflow-start:", "fired")]


async def test_a_server_holding_no_partition_or_stopping_picks_any_run_id(
    ledger: Ledger, engine: SandboxEngine, runs: RunService
) -> None:
    runtime = runtime_of(ledger, engine, runs, "server-a")
    assert runtime.loop.partitions.keeping() == frozenset()
    assert is_run_id(runtime.new_run_id())
    await runtime.loop.sweep_once()
    assert runtime.loop.partitions.holds_all()
    runtime.stopping = True
    assert is_run_id(runtime.new_run_id())


async def test_a_stopping_runtime_refuses_starts_and_events(
    ledger: Ledger, engine: SandboxEngine, runs: RunService
) -> None:
    runtime = runtime_of(ledger, engine, runs, "server-a")
    async with trio.open_nursery() as nursery:
        await nursery.start(runtime.run)
        started = await runtime.runs.run_definition(SCOPE, "workflow", "listens", {}, None, "caller-1")
        runtime.stopping = True
        with pytest.raises(Rejection) as refused:
            await runtime.runs.run_definition(SCOPE, "workflow", "listens", {}, None, "caller-1")
        assert_unavailable(refused)
        with pytest.raises(Rejection) as refused:
            await runtime.send_event(SCOPE, started["run_id"], {"type": "com.acme.go"}, "caller-1")
        assert_unavailable(refused)
        nursery.cancel_scope.cancel()
    history = await ledger.read_stream(run_stream(SCOPE, started["run_id"]))
    assert [r.type for r in history][-1] == "run_deferred", "the refused event recorded nothing"


async def test_a_cancellation_is_recorded_once_on_any_server_and_the_holder_ends_the_run(
    ledger: Ledger, engine: SandboxEngine, runs: RunService
) -> None:
    holder = runtime_of(ledger, engine, runs, "server-a")
    async with trio.open_nursery() as nursery:
        await nursery.start(holder.run)
        run_id = str(uuid7())
        await holder.runs.run_definition(SCOPE, "workflow", "listens", {}, run_id, "caller-1")
        async with other_server(ledger, engine, runs, "server-b") as standby:
            await standby.runs.cancel_run(SCOPE, run_id, "Not needed.", "caller-2")
            await standby.runs.cancel_run(SCOPE, run_id, "Asked twice.", "caller-3")
        holder.loop.wake()
        with trio.fail_after(30):
            while True:
                seen = ledger.appended.generation
                if (ended := await runs.read_run(SCOPE, run_id)) is not None and ended.status != "started":
                    break
                await ledger.appended.wait_beyond(seen)
        nursery.cancel_scope.cancel()
    types = [r.type for r in await ledger.read_stream(run_stream(SCOPE, run_id))]
    assert types.count("run_cancel_requested") == 1
    assert types[-1] == "run_rejected"
    assert ended is not None and ended.rejection == {
        "reason": "cancelled",
        "kind": "requested",
        "detail": "Not needed.",
    }
    with pytest.raises(Rejection) as refused:
        await holder.runs.cancel_run(SCOPE, run_id, None, "caller-4")
    assert refused.value.reason == "conflict"


async def test_a_cancel_that_meets_an_ended_run_is_refused_the_same_on_either_path(
    ledger: Ledger, engine: SandboxEngine, runs: RunService
) -> None:
    """One refusal, one text: `RunService.cancel_run` reading the run ended, and the cancel's decision finding it
    ended when the run moved after `RunService` read it `started`."""
    runtime = runtime_of(ledger, engine, runs, "server-a")
    async with trio.open_nursery() as nursery:
        await nursery.start(runtime.run)
        run_id = str(uuid7())
        await runtime.runs.run_definition(SCOPE, "workflow", "listens", {}, run_id, "caller-1")
        read_started = await runs.read_run(SCOPE, run_id)
        assert read_started is not None and read_started.status == "started"
        await runtime.send_event(SCOPE, run_id, {"type": "com.acme.go"}, "caller-1")
        with trio.fail_after(30):
            while True:
                seen = ledger.appended.generation
                if (ended := await runs.read_run(SCOPE, run_id)) is not None and ended.status != "started":
                    break
                await ledger.appended.wait_beyond(seen)
        with pytest.raises(Rejection) as on_record:
            writer = RunWriter(ledger, SCOPE, run_id)
            await runtime.cancel(writer, SCOPE, read_started, CancelRun("Too late.", "caller-2"))
        with pytest.raises(Rejection) as on_read:
            await runtime.runs.cancel_run(SCOPE, run_id, "Too late.", "caller-2")
        nursery.cancel_scope.cancel()
    assert ended.status == "succeeded"
    for refused in (on_record.value, on_read.value):
        assert (refused.reason, refused.kind, refused.because) == ("conflict", None, None)
        assert refused.detail == f"The run {run_id} has ended (succeeded), so there is nothing to cancel."
    types = [r.type for r in await ledger.read_stream(run_stream(SCOPE, run_id))]
    assert "run_cancel_requested" not in types


async def test_a_run_takes_a_cancel_recorded_elsewhere_before_any_other_input(
    ledger: Ledger, engine: SandboxEngine, runs: RunService
) -> None:
    holder = runtime_of(ledger, engine, runs, "server-a")
    await holder.loop.sweep_once()  # claims the lease; the loop does not run, so the cancel's entry stays armed
    run_id = str(uuid7())
    await holder.runs.run_definition(SCOPE, "workflow", "listens", {}, run_id, "caller-1")
    async with other_server(ledger, engine, runs, "server-b") as standby:
        await standby.runs.cancel_run(SCOPE, run_id, "Not needed.", "caller-2")
    (entry,) = [row for row in await ledger.due_work.entries_of_run(SCOPE, run_id) if row.key.startswith("cancel:")]
    assert entry.state == "armed"

    await holder.send_event(SCOPE, run_id, {"type": "com.acme.go"}, "caller-3")

    records = await ledger.read_stream(run_stream(SCOPE, run_id))
    types = [r.type for r in records]
    assert types[-3:] == ["run_cancel_requested", "workflow_input_applied", "run_rejected"]
    assert records[-2].data["input"]["kind"] == "cancel_requested"
    assert records[-2].metadata["causation_id"] == records[-3].id
    assert records[-1].data["reason"] == "cancelled" and records[-1].data["detail"] == "Not needed."
    assert types.count("workflow_input_applied") == 2, "the event was applied after the cancel"
    (entry,) = [row for row in await ledger.due_work.entries_of_run(SCOPE, run_id) if row.key.startswith("cancel:")]
    assert entry.state == "fired"


async def test_a_timer_armed_by_a_start_fires_when_due_not_at_the_next_sweep(
    ledger: Ledger, engine: SandboxEngine, runs: RunService
) -> None:
    runtime = runtime_of(ledger, engine, runs, "server-a", sweep=timedelta(minutes=1))
    async with trio.open_nursery() as nursery:
        await nursery.start(runtime.run)
        run_id = str(uuid7())
        await runtime.runs.run_definition(SCOPE, "workflow", "pauses", {}, run_id, "caller-1")
        with trio.fail_after(30):  # a bound, half the sweep: the loop was woken by the start, not by its sweep
            while True:
                seen = ledger.appended.generation
                if (ended := await runs.read_run(SCOPE, run_id)) is not None and ended.status != "started":
                    break
                await ledger.appended.wait_beyond(seen)
        nursery.cancel_scope.cancel()
    assert ended.status == "succeeded" and ended.output == {"done": True}


async def test_only_an_input_that_leaves_due_work_armed_wakes_the_loop(
    ledger: Ledger, engine: SandboxEngine, runs: RunService, mock_clock: trio.testing.MockClock
) -> None:
    runtime = runtime_of(ledger, engine, runs, "server-a")
    async with trio.open_nursery() as nursery:
        await nursery.start(runtime.run)
        await trio.testing.wait_all_tasks_blocked()  # the loop sleeps (the clock stands still: until woken)
        sweeps = runtime.loop.sweeps
        ended = await runtime.runs.run_definition(SCOPE, "workflow", "sets", {}, None, "caller-1")
        assert ended["status"] == "succeeded"
        rows = await ledger.due_work.entries_of_run(SCOPE, ended["run_id"])
        assert [row.state for row in rows] == ["cancelled"]  # its deadline, armed and cancelled in its one append
        await trio.testing.wait_all_tasks_blocked()
        assert runtime.loop.sweeps == sweeps, "an input that arms and cancels the same timer woke the loop"
        waiting = await runtime.runs.run_definition(SCOPE, "workflow", "pauses", {}, None, "caller-1")
        assert waiting["status"] == "started"
        await trio.testing.wait_all_tasks_blocked()
        assert runtime.loop.sweeps == sweeps + 1  # its wait is armed: the loop looks at the table again
        nursery.cancel_scope.cancel()
