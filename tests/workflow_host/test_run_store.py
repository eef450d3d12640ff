"""Applying inputs durably: one append per input, facts exactly once, timers changed with their facts."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
import trio

from auto_runtime.functions.workflow.engine.model import TimerFired
from auto_runtime.ledger import DueEntry, LeaseFence, LeaseLost, Ledger, Record, uuid7
from auto_runtime.runs.facts import run_stream
from auto_runtime.runs.view import fold_run
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.pool import SandboxPool
from auto_runtime.server_clock import WALL_CLOCK
from auto_runtime.workflow_host.run_store import RunStore, UnknownRun
from tests.stored_rows import stored_rows
from tests.workflow_host.conftest import SCOPE, definition

WAIT_THEN_SET = "do:\n  - pause: { wait: { seconds: 60 } }\n  - done: { set: { done: true } }\n"
SET_ONLY = "do:\n  - first: { set: { a: 1 } }\n"


async def history(ledger: Ledger, run_id: str) -> list[Record]:
    return await ledger.read_stream(run_stream(SCOPE, run_id))


async def armed(ledger: Ledger, run_id: str) -> dict[str, tuple[str, object]]:
    rows = await ledger.due_work.entries_of_run(SCOPE, run_id)
    return {row.key: (row.state, row.payload) for row in rows}


async def test_a_start_appends_run_started_the_applied_input_and_its_steps_with_its_timers(
    ledger: Ledger, store: RunStore
) -> None:
    run_id = str(uuid7())
    started = await store.start_run(SCOPE, run_id, definition(WAIT_THEN_SET), {"n": 1}, "caller-1")
    assert not started.stale and started.status is None
    records = await history(ledger, run_id)
    assert [r.type for r in records] == ["run_started", "workflow_input_applied", "step_waiting", "run_deferred"]
    run_started, applied, waiting, deferred = records
    assert deferred.metadata["causation_id"] == applied.id
    assert run_started.data["waits"] is True
    assert run_started.metadata["definition"] == {"type": "workflow", "name": "flow", "version": 1}
    assert applied.metadata["causation_id"] == run_started.id
    assert applied.metadata["state"]["started"] is True
    assert "document" not in applied.metadata["state"], "the document is kept once as content, not per input"
    kept = await ledger.get_content(SCOPE, applied.metadata["state"]["document_sha256"])
    assert kept is not None and json.loads(kept) == definition(WAIT_THEN_SET).document
    other = str(uuid7())
    await store.start_run(SCOPE, other, definition(WAIT_THEN_SET), {"n": 2}, "caller-1")
    other_applied = (await history(ledger, other))[1]
    assert other_applied.metadata["state"]["document_sha256"] == applied.metadata["state"]["document_sha256"]
    fresh = RunStore(ledger, store.engine, runtime_version="0.1.0", max_duration_ms=store.max_duration_ms)
    loaded = await fresh.load(SCOPE, run_id)
    assert loaded is not None and loaded.state.document == definition(WAIT_THEN_SET).document
    assert waiting.id == f"{applied.id}_1"
    assert waiting.metadata["causation_id"] == applied.id
    assert {r.metadata["correlation_id"] for r in records} == {run_id}
    timers = await armed(ledger, run_id)
    assert timers == {
        f"{run_id}/#1:deadline": ("armed", {"purpose": "deadline"}),
        **{key: ("armed", {"purpose": "wait"}) for key in timers if key != f"{run_id}/#1:deadline"},
    }
    assert len(timers) == 2
    shown = fold_run(run_id, records)
    assert shown is not None and shown.status == "started" and shown.waits
    rows = await stored_rows(ledger, "SELECT status, waits FROM runs WHERE run_id = ?", [run_id])
    assert rows == [{"status": "started", "waits": 1}]


async def test_a_fired_timer_ends_the_run_once_and_cancels_the_deadline_in_the_same_append(
    ledger: Ledger, store: RunStore
) -> None:
    run_id = str(uuid7())
    await store.start_run(SCOPE, run_id, definition(WAIT_THEN_SET), {}, "caller-1")
    (wait_key,) = [key for key, (_, payload) in (await armed(ledger, run_id)).items() if payload == {"purpose": "wait"}]
    fire = TimerFired(str(uuid7()), WALL_CLOCK.now_ms() + 60_000, wait_key)
    fired = await store.apply_input(SCOPE, run_id, fire)
    assert fired.status == "succeeded"
    records = await history(ledger, run_id)
    tail = records[4:]
    assert [r.type for r in tail] == ["workflow_input_applied", "step_finished", "step_finished", "run_succeeded"]
    assert [r.id for r in tail[:3]] == [fire.id, f"{fire.id}_1", f"{fire.id}_2"]
    assert tail[0].metadata["causation_id"] == records[1].id  # the input that armed the timer
    assert tail[1].metadata["causation_id"] == fire.id
    assert tail[2].metadata["causation_id"] == f"{fire.id}_1"
    assert tail[3].metadata["causation_id"] == fire.id
    assert tail[3].data["output"] == {"done": True}
    assert len({r.global_position for r in tail}) == 4
    assert (await armed(ledger, run_id))[f"{run_id}/#1:deadline"][0] == "cancelled"
    rows = await stored_rows(ledger, "SELECT status, waits FROM runs WHERE run_id = ?", [run_id])
    assert rows == [{"status": "succeeded", "waits": 0}]

    again = await store.apply_input(SCOPE, run_id, TimerFired(str(uuid7()), WALL_CLOCK.now_ms() + 61_000, wait_key))
    assert again.stale and again.records == []
    assert len(await history(ledger, run_id)) == len(records)


async def test_a_run_that_ends_at_once_records_its_ending_with_the_start(ledger: Ledger, store: RunStore) -> None:
    run_id = str(uuid7())
    started = await store.start_run(SCOPE, run_id, definition(SET_ONLY), {}, "caller-1")
    assert started.status == "succeeded"
    types = [r.type for r in await history(ledger, run_id)]
    assert types == ["run_started", "workflow_input_applied", "step_finished", "run_succeeded"]
    assert {row.state for row in await ledger.due_work.entries_of_run(SCOPE, run_id)} == {"cancelled"}


async def test_a_second_start_of_one_run_appends_nothing(ledger: Ledger, store: RunStore) -> None:
    run_id = str(uuid7())
    await store.start_run(SCOPE, run_id, definition(WAIT_THEN_SET), {}, "caller-1")
    again = await store.start_run(SCOPE, run_id, definition(WAIT_THEN_SET), {}, "caller-2")
    assert again.stale
    assert len(await history(ledger, run_id)) == 4


async def test_a_start_marks_the_entry_it_came_from_fired_and_a_stale_start_marks_nothing(
    ledger: Ledger, store: RunStore
) -> None:
    """A start another server took comes from a `workflow-start:` entry: its mark is in the start's own append;
    a second start of the run appends nothing, so its entry stays armed for the holder to mark alone."""
    run_id = str(uuid7())
    first, second = (DueEntry(SCOPE, run_id, f"workflow-start:{n}", datetime.now(UTC), {}) for n in (1, 2))
    await ledger.due_work.arm([first, second])
    started = await store.start_run(SCOPE, run_id, definition(WAIT_THEN_SET), {}, "caller-1", fired=[first.due_key])
    assert not started.stale
    again = await store.start_run(SCOPE, run_id, definition(WAIT_THEN_SET), {}, "caller-2", fired=[second.due_key])
    assert again.stale
    states = {key: state for key, (state, _) in (await armed(ledger, run_id)).items() if key.startswith("workflow")}
    assert states == {"workflow-start:1": "fired", "workflow-start:2": "armed"}


async def test_an_input_for_an_unknown_run_is_refused(store: RunStore) -> None:
    with pytest.raises(UnknownRun):
        await store.apply_input(SCOPE, str(uuid7()), TimerFired(str(uuid7()), WALL_CLOCK.now_ms(), "nothing"))


async def test_a_refused_append_changes_neither_facts_nor_timers(ledger: Ledger, store: RunStore) -> None:
    run_id = str(uuid7())
    await store.start_run(SCOPE, run_id, definition(WAIT_THEN_SET), {}, "caller-1")
    before = await armed(ledger, run_id)
    (wait_key,) = [key for key, (_, payload) in before.items() if payload == {"purpose": "wait"}]
    state = await ledger.lease().claim("server-a", timedelta(seconds=30))
    stale_fence = LeaseFence(state.name, "server-b", state.fencing)
    with pytest.raises(LeaseLost):
        await store.apply_input(
            SCOPE, run_id, TimerFired(str(uuid7()), WALL_CLOCK.now_ms(), wait_key), fence=stale_fence
        )
    assert len(await history(ledger, run_id)) == 4
    assert await armed(ledger, run_id) == before
    fired = await store.apply_input(
        SCOPE, run_id, TimerFired(str(uuid7()), WALL_CLOCK.now_ms(), wait_key), fence=state.fence()
    )
    assert fired.status == "succeeded"


async def test_racing_appliers_of_one_timer_record_it_once(ledger: Ledger, store: RunStore) -> None:
    run_id = str(uuid7())
    await store.start_run(SCOPE, run_id, definition(WAIT_THEN_SET), {}, "caller-1")
    (wait_key,) = [k for k, (_, payload) in (await armed(ledger, run_id)).items() if payload == {"purpose": "wait"}]
    results = []

    async def fire() -> None:
        results.append(await store.apply_input(SCOPE, run_id, TimerFired(str(uuid7()), WALL_CLOCK.now_ms(), wait_key)))

    async with trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(fire)
    assert sorted(r.stale for r in results) == [False, True, True]
    types = [r.type for r in await history(ledger, run_id)]
    assert types.count("workflow_input_applied") == 2
    assert types.count("run_succeeded") == 1


async def test_an_input_that_moves_the_most_tasks_an_input_may_is_recorded_in_one_append(
    ledger: Ledger, store: RunStore
) -> None:
    run_id = str(uuid7())
    many = "do:\n" + "".join(f"  - s{i}: {{ set: {{ a: {i} }} }}\n" for i in range(150))
    started = await store.start_run(SCOPE, run_id, definition(many), {}, "caller-1")
    assert started.status is None
    records = await history(ledger, run_id)
    applied = records[1]
    assert applied.data["step_count"] == 100
    assert [r.type for r in records].count("step_finished") == 100
    assert len({r.global_position for r in records}) == len(records) == 1 + 1 + 100 + 1
    purposes = [payload for _, (_, payload) in (await armed(ledger, run_id)).items()]
    assert {"purpose": "yield"} in purposes


async def test_inputs_are_applied_on_the_workers_of_the_sandbox_pool(ledger: Ledger, engine: SandboxEngine) -> None:
    pool = SandboxPool(engine, 1)
    try:
        pooled = RunStore(ledger, engine, runtime_version="0.1.0", max_duration_ms=60_000, workers=pool.workers)
        expression = 'do:\n  - sum: { set: \'${ {"n": data["n"] + 1} }\' }\n'
        run_ids = [str(uuid7()) for _ in range(3)]
        async with pooled.playbooks.serving(), trio.open_nursery() as nursery:
            for run_id in run_ids:
                nursery.start_soon(pooled.start_run, SCOPE, run_id, definition(expression), {"n": 1}, "caller-1")
        for run_id in run_ids:
            assert (await history(ledger, run_id))[-1].data["output"] == {"n": 2}
        assert pool.workers.live == 1, "three inputs shared the pool's one worker"
    finally:
        pool.close()
