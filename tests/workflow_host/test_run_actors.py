"""Issue 15 point 3: every input of a workflow run goes through its run's actor, which keeps the decoded state
while inputs are queued, passivates when the run waits, and after a breakdown starts again from the ledger."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import trio
import trio.testing

from auto_runtime.actors import ActorStoppedError
from auto_runtime.functions.workflow.engine.model import TimerFired
from auto_runtime.ledger import DueEntry, Ledger, LedgerError, NewRecord, PlaybookScope, StreamWrite, uuid7
from auto_runtime.playbooks.playbook_host import PlaybookActors
from auto_runtime.runs import RunWriter
from auto_runtime.runs.facts import run_stream
from auto_runtime.runs.workflow_messages import ApplyWorkflowInput
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.server_clock import WALL_CLOCK
from auto_runtime.supervision import NO_BACKOFF, RestartIntensity, Supervisor, SupervisorFailedError
from auto_runtime.workflow_host.calls import CallDispatcher
from auto_runtime.workflow_host.run_store import Applied, RunStore, UnknownRun
from auto_runtime.workflow_host.timer_loop import TimerLoop
from tests.workflow_host.conftest import MAX_DURATION_MS, SCOPE, definition
from tests.workflow_host.test_timer_loop import SWEEP

TWO_WAITS = (
    "do:\n  - a: { wait: { seconds: 60 } }\n  - b: { wait: { seconds: 60 } }\n  - done: { set: { done: true } }\n"
)
WAIT_THEN_SET = "do:\n  - pause: { wait: { seconds: 60 } }\n  - done: { set: { done: true } }\n"
ELSEWHERE = PlaybookScope("acme", "payroll")


async def wait_key(ledger: Ledger, scope: PlaybookScope, run_id: str, *, besides: str = "") -> str:
    rows = await ledger.due_work.entries_of_run(scope, run_id)
    (key,) = [
        row.key for row in rows if row.state == "armed" and row.payload == {"purpose": "wait"} and row.key != besides
    ]
    return key


async def break_state(ledger: Ledger, store: RunStore, run_id: str) -> None:
    """Record an input whose state this server cannot read: the next input of the run breaks down inside the
    runtime (as an input written by a newer server would)."""
    loaded = await store.load(SCOPE, run_id)
    assert loaded is not None
    unreadable = NewRecord(
        "workflow_input_applied",
        {"run_id": run_id},
        {**loaded.metadata, "causation_id": None, "state": {"format": "not a state this server reads"}},
    )
    await ledger.append([StreamWrite(run_stream(SCOPE, run_id), loaded.version, [unreadable])])


async def test_the_state_a_run_actor_keeps_is_the_state_the_ledger_answers(ledger: Ledger, store: RunStore) -> None:
    run_id = str(uuid7())
    await store.start_run(SCOPE, run_id, definition(TWO_WAITS), {}, "caller-1")
    first = TimerFired(str(uuid7()), WALL_CLOCK.now_ms() + 60_000, await wait_key(ledger, SCOPE, run_id))
    writer = RunWriter(ledger, SCOPE, run_id)
    applied = await store.apply_in(writer, ApplyWorkflowInput(first))
    assert not applied.stale
    kept, fresh = writer.kept("workflow"), await store.load(SCOPE, run_id)
    assert kept is not None and fresh is not None
    run = kept.state.run
    assert (run.state, run.metadata, run.version, run.document_digest) == (
        fresh.state,
        fresh.metadata,
        fresh.version,
        fresh.document_digest,
    )
    assert kept.version == fresh.version


async def test_a_state_the_stream_moved_past_is_read_again_before_the_input_is_applied(
    ledger: Ledger, store: RunStore
) -> None:
    run_id = str(uuid7())
    await store.start_run(SCOPE, run_id, definition(TWO_WAITS), {}, "caller-1")
    writer = RunWriter(ledger, SCOPE, run_id)
    nothing = await store.apply_in(
        writer, ApplyWorkflowInput(TimerFired(str(uuid7()), WALL_CLOCK.now_ms(), "no such timer"))
    )
    assert nothing.stale and writer.kept("workflow") is not None, "the writer keeps the state it read"
    first = TimerFired(str(uuid7()), WALL_CLOCK.now_ms() + 60_000, await wait_key(ledger, SCOPE, run_id))
    await store.apply_input(SCOPE, run_id, first)  # another writer moves the run past the kept state
    second_key = await wait_key(ledger, SCOPE, run_id, besides=first.timer_id)
    second = TimerFired(str(uuid7()), WALL_CLOCK.now_ms() + 120_000, second_key)
    applied = await store.apply_in(writer, ApplyWorkflowInput(second))
    assert applied.status == "succeeded"
    kept = writer.kept("workflow")
    assert kept is not None and kept.state.run.state.ended
    records = await ledger.read_stream(run_stream(SCOPE, run_id))
    assert [r.type for r in records].count("workflow_input_applied") == 3
    assert records[-1].type == "run_succeeded"


async def test_queued_inputs_of_one_run_are_applied_in_one_life_and_a_waiting_run_holds_no_actor(
    ledger: Ledger, store: RunStore
) -> None:
    run_id = str(uuid7())
    await store.start_run(SCOPE, run_id, definition(WAIT_THEN_SET), {}, "caller-1")
    key = await wait_key(ledger, SCOPE, run_id)
    await trio.testing.wait_all_tasks_blocked()  # the start's actor, asked to passivate, has left the registry
    assert store.runs.live_count == 0, "a run that waits holds no actor"
    spawned = store.runs.spawns
    results: list[Any] = []

    async def fire(at: int) -> None:
        results.append(await store.apply_input(SCOPE, run_id, TimerFired(str(uuid7()), at, key)))

    async with trio.open_nursery() as nursery:
        for offset in (60_000, 61_000, 62_000):
            nursery.start_soon(fire, WALL_CLOCK.now_ms() + offset)
    assert sorted(result.stale for result in results) == [False, True, True]
    assert store.runs.spawns == spawned + 1, "the three inputs met in one actor's mailbox"
    await trio.testing.wait_all_tasks_blocked()  # the actor, asked to passivate, has left the registry
    assert store.runs.live_count == 0
    records = await ledger.read_stream(run_stream(SCOPE, run_id))
    assert [r.type for r in records].count("run_succeeded") == 1


async def test_an_input_for_no_run_is_answered_without_a_restart(store: RunStore) -> None:
    try:
        await store.apply_input(SCOPE, str(uuid7()), TimerFired(str(uuid7()), WALL_CLOCK.now_ms(), "nothing"))
    except UnknownRun:
        pass
    else:
        raise AssertionError("an input for no run is UnknownRun")
    assert store.runs.restarts == 0


async def fire_wait(ledger: Ledger, store: RunStore, scope: PlaybookScope, run_id: str) -> Applied | None:
    """Fire the run's wait as the timer loop does when it is due (a breakdown ends the run `failed`)."""
    (wait,) = [row for row in await ledger.due_work.entries_of_run(scope, run_id) if row.payload == {"purpose": "wait"}]
    assert wait.due_at is not None
    fence = (await ledger.lease().claim("server-a", timedelta(minutes=5))).fence()
    return await TimerLoop(store, "server-a", SWEEP).fire(
        DueEntry(scope, run_id, wait.key, wait.due_at, wait.payload), fence
    )


async def test_a_run_actor_that_breaks_down_is_restarted_and_its_run_ends_failed_once_others_untouched(
    ledger: Ledger, store: RunStore
) -> None:
    broken, healthy, other = str(uuid7()), str(uuid7()), str(uuid7())
    for scope, run_id in ((SCOPE, broken), (SCOPE, healthy), (ELSEWHERE, other)):
        await store.start_run(scope, run_id, definition(WAIT_THEN_SET), {}, "caller-1")
    await break_state(ledger, store, broken)
    assert await fire_wait(ledger, store, SCOPE, broken) is None
    assert store.runs.restarts == 1
    await trio.testing.wait_all_tasks_blocked()
    assert store.runs.live_count == 0
    history = [r.type for r in await ledger.read_stream(run_stream(SCOPE, broken))]
    assert history.count("run_failed") == 1 and history[-1] == "run_failed"
    assert {row.state for row in await ledger.due_work.entries_of_run(SCOPE, broken)} <= {"cancelled", "fired"}
    for scope, run_id in ((SCOPE, healthy), (ELSEWHERE, other)):
        applied = await fire_wait(ledger, store, scope, run_id)
        assert applied is not None and applied.status == "succeeded"
    assert store.runs.restarts == 1


async def test_breakdowns_that_repeat_escalate_to_the_playbook_actor_which_gives_up_others_untouched(
    ledger: Ledger, engine: SandboxEngine
) -> None:
    """OTP's rule with a window far longer than the test, and where it ends: the second breakdown of one
    playbook's runs makes its run actors' registry fail, the playbook's actor restarts with fresh run actors; the
    fourth makes the playbook's actor give up. The `playbooks` supervisor never sees any of it, and another
    playbook's actor and run live on through the faults."""
    once = RestartIntensity(max_restarts=1, period=3600.0)
    host = PlaybookActors(ledger, {}, run_intensity=once, escalations=once)
    store = RunStore(ledger, engine, runtime_version="0.1.0", max_duration_ms=MAX_DURATION_MS, playbooks=host)
    runs = [str(uuid7()) for _ in range(4)]
    other = str(uuid7())
    supervisor = Supervisor("playbooks", [host.child_spec()], intensity=once, backoff=NO_BACKOFF)
    ended_with: list[SupervisorFailedError] = []

    async def supervise(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            await supervisor.run(task_status=task_status)
        except SupervisorFailedError as failure:
            ended_with.append(failure)

    broke: list[str] = []
    spawns_after: list[int] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(supervise)
        for run_id in runs:  # a start goes through the run's actor too
            await store.start_run(SCOPE, run_id, definition(WAIT_THEN_SET), {}, "caller-1")
            await break_state(ledger, store, run_id)
        await store.start_run(ELSEWHERE, other, definition(TWO_WAITS), {}, "caller-1")
        first = TimerFired(str(uuid7()), WALL_CLOCK.now_ms() + 60_000, await wait_key(ledger, ELSEWHERE, other))
        assert not (await store.apply_input(ELSEWHERE, other, first)).stale
        elsewhere = host.hosted((ELSEWHERE.org, ELSEWHERE.playbook))
        assert elsewhere is not None, "the other playbook's actor is live through the faults"
        for run_id in runs:
            try:
                await store.apply_input(SCOPE, run_id, TimerFired(str(uuid7()), WALL_CLOCK.now_ms(), "any"))
            except (ActorStoppedError, UnknownRun, LedgerError) as unexpected:
                raise AssertionError(f"the input should have broken down, not {unexpected!r}") from unexpected
            except Exception:
                broke.append(run_id)
            for _ in range(10_000):  # until its run actors run again, or its actor gave up
                await trio.testing.wait_all_tasks_blocked()
                runs_now = host.hosted((SCOPE.org, SCOPE.playbook))
                if runs_now is None or runs_now.runs.running:
                    break
            spawns_after.append(host.spawns)
        still = host.hosted((ELSEWHERE.org, ELSEWHERE.playbook))
        assert still is elsewhere, "the other playbook's actor was never restarted"
        second_key = await wait_key(ledger, ELSEWHERE, other, besides=first.timer_id)
        second = TimerFired(str(uuid7()), WALL_CLOCK.now_ms() + 120_000, second_key)
        assert (await store.apply_input(ELSEWHERE, other, second)).status == "succeeded"
        assert supervisor.running and host.running
        nursery.cancel_scope.cancel()
    assert broke == runs
    assert not ended_with, "escalation ends at the playbook's actor"
    assert (host.escalated, host.gave_up, host.restarts) == (2, 1, 0)
    assert store.runs.restarts == 4
    # the other playbook's actor, then SCOPE's, restarted once after the second breakdown, then gone (gave up)
    assert spawns_after == [2, 3, 3, 3]
    assert not host.is_live((SCOPE.org, SCOPE.playbook))


async def test_two_requests_under_one_run_id_meet_in_its_actor_and_the_run_runs_once(
    ledger: Ledger, dispatcher: CallDispatcher
) -> None:
    runs = dispatcher.runs
    run_id = str(uuid7())
    answers: list[dict[str, Any]] = []

    async def run() -> None:
        answers.append(await runs.run_definition(SCOPE, "computation", "double", {"n": 2}, run_id, "caller-1"))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        nursery.start_soon(run)
    assert [answer["output"] for answer in answers] == [{"n": 4}, {"n": 4}]
    kinds = [r.type for r in await ledger.read_stream(run_stream(SCOPE, run_id))]
    assert kinds == ["run_started", "run_succeeded"]
    assert runs.runs.spawns == 1, "the second request waited in the run id's mailbox"
    await trio.testing.wait_all_tasks_blocked()
    assert runs.runs.live_count == 0
