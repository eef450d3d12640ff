"""Reactions end to end on both stores with the real sandbox: triggers, listens, schedules, the follow position."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest
import trio
import trio.testing

from auto_runtime.functions.registry import function_types
from auto_runtime.functions.workflow.run_state import WORKFLOW_RUNS_PROJECTION
from auto_runtime.functions.workflow.workflow_type import WorkflowType
from auto_runtime.ledger import (
    DueEntry,
    LeaseFence,
    Ledger,
    NewRecord,
    Record,
    StreamWrite,
    partition_of,
    playbook_key,
    uuid7,
)
from auto_runtime.playbooks.definition_registry import DefinitionRegistry
from auto_runtime.playbooks.event_publishing import EventPublishing
from auto_runtime.playbooks.playbook_registry import PlaybookRegistry
from auto_runtime.runs.facts import run_stream
from auto_runtime.sandbox.checker import Checkers
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.server import RUNTIME_PROJECTIONS
from auto_runtime.workflow_host.follow_position import POSITION_SCOPE, FollowPosition, pseudo_runs
from auto_runtime.workflow_host.reactions import FEED_BATCH, REACTION_PROJECTIONS, Reactions, is_trigger_key
from auto_runtime.workflow_host.run_store import RunStore
from auto_runtime.workflow_host.schedules import schedule_run_id
from tests.ledger.conftest import Target
from tests.stored_rows import stored_rows
from tests.workflow_host.conftest import HEAD, MAX_DURATION_MS, SCOPE, OneFence, definition

MONTH_CLOSED = "com.acme.ledger.month-closed"
ON_EU = (
    "schedule:\n"
    f'  on: {{ one: {{ with: {{ type: {MONTH_CLOSED}, data: \'${{ data["region"] == "eu" }}\' }} }} }}\n'
    "do:\n  - first: { set: { seen: true } }\n"
)
ON_SUCCEEDED = "schedule:\n  on: { one: { with: { type: run_succeeded } } }\ndo:\n  - first: { set: { seen: true } }\n"
EVERY_MINUTE = "schedule:\n  every: PT1M\ndo:\n  - pause: { wait: PT1H }\n"
LISTEN = f"do:\n  - hear: {{ listen: {{ to: {{ one: {{ with: {{ type: {MONTH_CLOSED} }} }} }} }} }}\n"
SET_ONLY = "do:\n  - first: { set: { a: 1 } }\n"


@pytest.fixture
async def ledger(target: Target) -> AsyncIterator[Ledger]:
    wanted = {p.name: p for p in (*RUNTIME_PROJECTIONS, WORKFLOW_RUNS_PROJECTION, *REACTION_PROJECTIONS)}
    async with target.open(list(wanted.values())) as opened:
        yield opened


@pytest.fixture
async def store(ledger: Ledger, engine: SandboxEngine) -> AsyncIterator[RunStore]:
    served = RunStore(ledger, engine, runtime_version="0.1.0", max_duration_ms=MAX_DURATION_MS)
    async with served.playbooks.serving():
        yield served


@pytest.fixture
async def registry(ledger: Ledger, engine: SandboxEngine) -> AsyncIterator[DefinitionRegistry]:
    checkers: Checkers[Any] = Checkers()
    try:
        definitions = DefinitionRegistry(ledger, function_types(WorkflowType(engine, checkers)))
        async with definitions.actors.serving():
            yield definitions
    finally:
        checkers.close()


class Clock:
    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> int:
        return self.ms


@pytest.fixture
def clock() -> Clock:
    from auto_runtime.server_clock import WALL_CLOCK

    return Clock(WALL_CLOCK.now_ms())


@pytest.fixture
def reactions(store: RunStore, registry: DefinitionRegistry, engine: SandboxEngine, clock: Clock) -> Reactions:
    return Reactions(store, registry, engine, clock=clock)


@pytest.fixture
async def fence(ledger: Ledger) -> LeaseFence:
    return (await ledger.lease().claim("server-a", timedelta(minutes=5))).fence()


async def save(registry: DefinitionRegistry, name: str, body: str) -> None:
    source = HEAD.replace("name: host", f"name: {name}") + body
    try:
        await registry.update(SCOPE, "workflow", name, source, "tester")
    except Exception:
        await registry.create(SCOPE, "workflow", name, source, "tester")


async def publish(ledger: Ledger, region: str, event_type: str = MONTH_CLOSED) -> None:
    await EventPublishing(ledger).publish(
        SCOPE, {"source": "/ledger", "type": event_type, "data": {"region": region}}, "caller-1"
    )


async def follow_all(reactions: Reactions, fence: LeaseFence) -> None:
    """React to the whole feed after the saved position, then save the position (as `follow` does, once)."""
    position = await reactions.position.load()
    while (moved := await reactions.follow_once(position, fence)) != position:
        position = moved
    if position is not None:
        await reactions.position.save(position, fence)


async def started_runs(ledger: Ledger, name: str) -> list[Record]:
    page = await ledger.read_playbook(SCOPE, order="asc", types={"run_started"}, limit=100)
    return [r for r in page.records if r.metadata.get("definition", {}).get("name") == name]


async def ended_runs(ledger: Ledger) -> list[Record]:
    page = await ledger.read_playbook(SCOPE, order="asc", types={"run_succeeded"}, limit=100)
    return page.records


async def test_a_published_event_starts_one_run_of_the_matching_workflow_once(
    ledger: Ledger, registry: DefinitionRegistry, reactions: Reactions, fence: LeaseFence
) -> None:
    await save(registry, "digest", ON_EU)
    await publish(ledger, "eu")
    await publish(ledger, "us")
    await follow_all(reactions, fence)
    await follow_all(Reactions(reactions.store, registry, reactions.engine), fence)
    await reactions.follow_once(None, fence)  # re-reading the whole feed starts nothing twice
    runs = await started_runs(ledger, "digest")
    assert len(runs) == 1
    started = runs[0]
    published = (await ledger.read_playbook(SCOPE, order="asc", types={"event_published"})).records[0]
    assert started.metadata["by"] == f"playbook:{SCOPE.playbook}"
    assert started.metadata["trigger"] == {"kind": "event", "reference": "/schedule/on"}
    assert started.metadata["depth"] == 1
    assert started.metadata["causation_id"] == published.id
    assert started.metadata["definition"] == {"type": "workflow", "name": "digest", "version": 1}
    (event,) = started.data["input"]
    assert event["type"] == MONTH_CLOSED and event["data"] == {"region": "eu"} and event["specversion"] == "1.0"
    history = await ledger.read_stream(run_stream(SCOPE, started.metadata["run_id"]))
    assert history[-1].type == "run_succeeded"


async def test_each_event_runs_the_version_current_when_it_was_recorded(
    ledger: Ledger, registry: DefinitionRegistry, reactions: Reactions, fence: LeaseFence
) -> None:
    await save(registry, "digest", ON_EU)
    await publish(ledger, "eu")
    await save(registry, "digest", ON_EU.replace("seen: true", "seen: 2"))
    await publish(ledger, "eu")
    await follow_all(reactions, fence)
    versions = [r.metadata["definition"]["version"] for r in await started_runs(ledger, "digest")]
    assert versions == [1, 2]


async def test_facts_start_runs_one_deeper_but_never_of_the_workflow_they_are_about(
    ledger: Ledger, store: RunStore, registry: DefinitionRegistry, reactions: Reactions, fence: LeaseFence
) -> None:
    await save(registry, "watcher", ON_SUCCEEDED)
    await store.start_run(SCOPE, str(uuid7()), definition(SET_ONLY, name="other"), {}, "caller-1")
    await follow_all(reactions, fence)
    runs = await started_runs(ledger, "watcher")
    assert len(runs) == 1, "the other run's success starts one; the watcher's own success starts none"
    assert runs[0].metadata["depth"] == 1
    (event,) = runs[0].data["input"]
    assert event["source"].startswith("/runs/") and event["subject"] == "workflow/other"
    assert event["data"] == {"output": {"a": 1}} and event["caller"] == "caller-1"


async def test_a_chain_deeper_than_eight_starts_nothing_and_is_counted_as_refused(
    ledger: Ledger, store: RunStore, registry: DefinitionRegistry, reactions: Reactions, fence: LeaseFence
) -> None:
    await save(registry, "watcher", ON_SUCCEEDED)
    deep = definition(SET_ONLY, name="other")
    await store.start_run(SCOPE, str(uuid7()), deep, {}, "caller-1", extra_metadata={"depth": 8})
    await follow_all(reactions, fence)
    assert await started_runs(ledger, "watcher") == []
    await reactions.flush_refusals(fence, everything=True)
    refused = (await ledger.read_playbook(SCOPE, types={"reaction_refused"})).records
    assert len(refused) == 1
    assert refused[0].data["count"] == 1 and "9 reactions deep" in refused[0].data["reason"]
    assert refused[0].metadata["definition"] == {"type": "workflow", "name": "watcher", "version": 1}


async def test_a_listen_takes_a_playbook_event_recorded_while_it_is_open_only(
    ledger: Ledger, store: RunStore, reactions: Reactions, fence: LeaseFence
) -> None:
    await publish(ledger, "before")
    run_id = str(uuid7())
    await store.start_run(SCOPE, run_id, definition(LISTEN), {}, "caller-1")
    await follow_all(reactions, fence)
    status = await ledger.queries.runs.status(SCOPE.org, SCOPE.playbook, run_id)
    assert status == "started", "an event recorded before the listen opened is not offered"
    await publish(ledger, "after")
    await follow_all(reactions, fence)
    await reactions.follow_once(None, fence)  # re-reading offers nothing twice
    history = await ledger.read_stream(run_stream(SCOPE, run_id))
    assert history[-1].type == "run_succeeded"
    assert history[-1].data["output"] == [{"region": "after"}]
    assert await stored_rows(ledger, "SELECT run_id FROM workflow_listeners") == []


async def test_a_listen_opened_after_the_follower_read_its_playbook_takes_the_next_event(
    ledger: Ledger, store: RunStore, reactions: Reactions, fence: LeaseFence
) -> None:
    """The follower keeps each playbook's listening runs between batches: a batch that opens a listen must not be
    answered from what an earlier batch read (no run listening then)."""
    await publish(ledger, "first")
    await follow_all(reactions, fence)
    run_id = str(uuid7())
    await store.start_run(SCOPE, run_id, definition(LISTEN), {}, "caller-1")
    await publish(ledger, "second")
    await follow_all(reactions, fence)
    history = await ledger.read_stream(run_stream(SCOPE, run_id))
    assert history[-1].type == "run_succeeded"
    assert history[-1].data["output"] == [{"region": "second"}]


async def test_the_definition_shows_its_triggers_and_since_when(ledger: Ledger, registry: DefinitionRegistry) -> None:
    await save(registry, "digest", ON_EU)
    saved = await registry.latest(SCOPE, "workflow", "digest")
    shown = await registry.shown(SCOPE, saved, with_overview=True)
    assert shown["triggers"] == [
        {
            "kind": "event",
            "reference": "/schedule/on",
            "filters": [
                {
                    "reference": "/schedule/on/one",
                    "type": MONTH_CLOSED,
                    "attributes": {"data": '${ data["region"] == "eu" }'},
                }
            ],
        }
    ]
    assert shown["triggers_since"] == saved.saved_record_id
    listed = await registry.shown(SCOPE, saved, with_overview=False)
    assert "triggers" in listed and "triggers_since" not in listed


async def test_an_every_schedule_is_armed_at_save_fires_once_per_due_time_and_skips_while_running(
    ledger: Ledger, registry: DefinitionRegistry, reactions: Reactions, fence: LeaseFence, clock: Clock
) -> None:
    await save(registry, "ticker", EVERY_MINUTE)
    await follow_all(reactions, fence)
    armed = await armed_entries(ledger, "ticker")
    assert len(armed) == 1 and is_trigger_key(armed[0].key)
    first = armed[0]
    clock.ms = int(first.due_at.timestamp() * 1000) + 150_000  # two more due times passed meanwhile
    await reactions.fire(first, fence)
    runs = await started_runs(ledger, "ticker")
    assert len(runs) == 1, "after downtime only the latest missed time runs"
    assert runs[0].data["input"] == {"schedule": {"due": due_iso(int(first.due_at.timestamp() * 1000) + 120_000)}}
    assert runs[0].metadata["trigger"] == {"kind": "every", "reference": "/schedule/every"}
    saved = await registry.latest(SCOPE, "workflow", "ticker")
    assert runs[0].metadata["causation_id"] == saved.saved_record_id
    (following,) = await armed_entries(ledger, "ticker")
    clock.ms = int(following.due_at.timestamp() * 1000)
    await reactions.fire(following, fence)
    assert len(await started_runs(ledger, "ticker")) == 1, "the run still waits, so this due time is skipped"
    (third,) = await armed_entries(ledger, "ticker")
    assert third.payload["previous_run_id"] == runs[0].metadata["run_id"]
    await save(registry, "ticker", EVERY_MINUTE.replace("PT1H", "PT2H"))
    await follow_all(reactions, fence)
    assert await armed_entries(ledger, "ticker") == [third], "an unchanged trigger keeps its entry"
    await save(registry, "ticker", EVERY_MINUTE.replace("PT1M", "PT2M"))
    await follow_all(reactions, fence)
    (changed,) = await armed_entries(ledger, "ticker")
    assert changed.key != third.key and changed.payload["anchor"] != third.payload["anchor"]
    await registry.retire(SCOPE, "workflow", "ticker", "tester")
    await follow_all(reactions, fence)
    assert await armed_entries(ledger, "ticker") == []


async def test_follow_reacts_while_it_holds_the_lease_and_keeps_its_position(
    ledger: Ledger, registry: DefinitionRegistry, reactions: Reactions, fence: LeaseFence
) -> None:
    await save(registry, "digest", ON_EU)
    async with trio.open_nursery() as nursery:
        await nursery.start(
            lambda task_status: reactions.follow(OneFence(fence, ledger.partitioning.count), task_status=task_status)
        )
        await publish(ledger, "eu")
        with trio.fail_after(60):  # a bound against a broken loop, not a timed assertion
            await until_appended(ledger, lambda: at_least(started_runs(ledger, "digest"), 1))
        nursery.cancel_scope.cancel()
    successor = Reactions(reactions.store, registry, reactions.engine)
    await follow_all(successor, fence)
    assert len(await started_runs(ledger, "digest")) == 1
    position = await successor.position.load()
    assert position is not None and (await ledger.read_forward(position, 10))[0] == []


async def armed_entries(ledger: Ledger, name: str) -> list[DueEntry]:
    rows = await ledger.due_work.entries_of_run(SCOPE, schedule_run_id(name))
    return [DueEntry(r.scope, r.run_id, r.key, r.due_at, r.payload) for r in rows if r.state == "armed" and r.due_at]


def due_iso(ms: int) -> str:
    from auto_runtime.workflow_host.schedules import due_text

    return due_text(ms)


async def test_an_event_whose_input_the_schema_refuses_starts_nothing_and_is_counted_as_refused(
    ledger: Ledger, registry: DefinitionRegistry, reactions: Reactions, fence: LeaseFence
) -> None:
    schema = "input: { schema: { document: { type: object } } }\n"
    await save(registry, "digest", schema + ON_EU)
    await publish(ledger, "eu")
    await follow_all(reactions, fence)
    assert await started_runs(ledger, "digest") == []
    await reactions.flush_refusals(fence, everything=True)
    (refused,) = (await ledger.read_playbook(SCOPE, types={"reaction_refused"})).records
    assert refused.data["count"] == 1
    assert refused.data["reason"].startswith("The run's input does not fit the workflow's input schema: ")
    assert refused.data["reason"].endswith("(at /input)")


async def test_a_retired_playbook_s_triggers_start_nothing_and_are_counted_as_refused(
    ledger: Ledger, registry: DefinitionRegistry, reactions: Reactions, fence: LeaseFence
) -> None:
    playbooks = PlaybookRegistry(ledger)
    async with playbooks.actors.serving():
        await playbooks.create(SCOPE.org, SCOPE.playbook, "Finance", "", "tester")
        await save(registry, "digest", ON_EU)
        await playbooks.retire(SCOPE.org, SCOPE.playbook, "tester")
    await publish(ledger, "eu")
    await follow_all(reactions, fence)
    assert await started_runs(ledger, "digest") == []
    await reactions.flush_refusals(fence, everything=True)
    (refused,) = (await ledger.read_playbook(SCOPE, types={"reaction_refused"})).records
    assert refused.data["reason"] == "The playbook is retired, so its triggers start no run."


async def until_appended(ledger: Ledger, holds: Callable[[], Awaitable[bool]]) -> None:
    """Waits until `holds()` is true. The append generation is read before each check, so an append that lands
    between the check and the wait wakes it (reading it after the check could wait for an append that never comes)."""
    while True:
        seen = ledger.appended.generation
        if await holds():
            return
        await ledger.appended.wait_beyond(seen)


async def at_least(runs: Awaitable[list[Record]], count: int) -> bool:
    """Whether the awaited list of run records holds at least `count`."""
    return len(await runs) >= count


async def saved_positions(ledger: Ledger) -> int:
    """How many times the follower saved a position (each save is one row, see `follow_position`)."""
    runs = [run for partition in range(ledger.partitioning.count) for run in pseudo_runs(partition)]
    return sum([len(await ledger.due_work.entries_of_run(POSITION_SCOPE, run)) for run in runs])


async def test_the_follower_saves_its_position_at_most_once_a_sweep(
    ledger: Ledger,
    registry: DefinitionRegistry,
    reactions: Reactions,
    fence: LeaseFence,
    mock_clock: trio.testing.MockClock,
) -> None:
    await save(registry, "digest", ON_EU)
    async with trio.open_nursery() as nursery:
        await nursery.start(
            lambda task_status: reactions.follow(OneFence(fence, ledger.partitioning.count), task_status=task_status)
        )
        for count in range(1, 6):  # five events, each its own append and batch, each starting a run
            await publish(ledger, "eu")
            await until_appended(ledger, lambda count=count: at_least(started_runs(ledger, "digest"), count))
        # a run's ending is its run actor's append, after the start's
        await until_appended(ledger, lambda: at_least(ended_runs(ledger), 5))
        await trio.testing.wait_all_tasks_blocked()
        assert await saved_positions(ledger) == 0, "saved within the sweep (the clock stands still)"
        mock_clock.jump(reactions.poll_seconds)  # a sweep passed: each partition's first save, after everything
        count = ledger.partitioning.count
        for _ in range(10_000):  # until the follower saved (a save signals no append on PostgreSQL)
            await trio.testing.wait_all_tasks_blocked()
            if await saved_positions(ledger) >= count:
                break
        await trio.testing.wait_all_tasks_blocked()
        assert await saved_positions(ledger) == count
        await publish(ledger, "eu")  # one more event: only its playbook's partition has a position to save
        await until_appended(ledger, lambda: at_least(ended_runs(ledger), 6))
        mock_clock.jump(reactions.poll_seconds)
        for _ in range(10_000):
            await trio.testing.wait_all_tasks_blocked()
            if await saved_positions(ledger) > count:
                break
        await trio.testing.wait_all_tasks_blocked()
        assert await saved_positions(ledger) == count + 1
        nursery.cancel_scope.cancel()
    position = await FollowPosition(ledger, partition_of(playbook_key(SCOPE.org, SCOPE.playbook), count)).load()
    assert position is not None and (await ledger.read_forward(position, 10))[0] == []


async def test_a_feed_longer_than_a_batch_is_read_to_its_end_without_another_append_or_sweep(
    ledger: Ledger,
    registry: DefinitionRegistry,
    reactions: Reactions,
    fence: LeaseFence,
    mock_clock: trio.testing.MockClock,
) -> None:
    """The follower reads on at once only after a full batch (`FEED_BATCH` records), and waits for the next append
    after a shorter one: an event behind a full batch is still reacted to with no append and no sweep after it
    (the clock stands still, so no sweep comes)."""
    await save(registry, "digest", ON_EU)
    filler = [NewRecord("noted", {}, {}) for _ in range(FEED_BATCH + 20)]
    await ledger.append([StreamWrite(run_stream(SCOPE, str(uuid7())), 0, filler)])
    await publish(ledger, "eu")
    async with trio.open_nursery() as nursery:
        await nursery.start(
            lambda task_status: reactions.follow(OneFence(fence, ledger.partitioning.count), task_status=task_status)
        )
        for _ in range(10_000):  # until the triggered run started (bounded: a broken follower waits for ever)
            await trio.testing.wait_all_tasks_blocked()
            if await started_runs(ledger, "digest"):
                break
        assert len(await started_runs(ledger, "digest")) == 1
        nursery.cancel_scope.cancel()
