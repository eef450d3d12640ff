"""The reaction rules on their own: event forms, filter matching, the rate limit, the position's rows, the
1,025th triggered workflow, and queued starts."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from auto_runtime.ledger import (
    DueEntry,
    FeedPosition,
    LeaseFence,
    Ledger,
    Record,
    StreamName,
    partition_of,
    partition_of_due,
    playbook_key,
)
from auto_runtime.playbooks import playbook_actor
from auto_runtime.playbooks.definition_registry import DefinitionRegistry
from auto_runtime.problems import Rejection
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.workflow_host import follow_position
from auto_runtime.workflow_host.follow_position import POSITION_SCOPE, PSEUDO_RUNS, FollowPosition
from auto_runtime.workflow_host.playbook_events import playbook_event
from auto_runtime.workflow_host.reaction_limits import QUEUED_MAX, STARTS_PER_MINUTE, StartBudget
from auto_runtime.workflow_host.reactions import Reactions
from auto_runtime.workflow_host.schedules import QUEUED_PREFIX, earlier_schedule_run_id, schedule_run_id
from auto_runtime.workflow_host.trigger_matching import DataConditions, trigger_matches
from tests.workflow_host.conftest import SCOPE
from tests.workflow_host.test_reactions import (
    MONTH_CLOSED,
    ON_EU,
    Clock,
    clock,
    fence,
    follow_all,
    ledger,
    publish,
    reactions,
    registry,
    save,
    started_runs,
    store,
)

__all__ = ["clock", "fence", "ledger", "reactions", "registry", "store"]

AT = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)


def record(kind: str, data: Any, metadata: dict[str, Any], stream: str = "playbook/acme/finance/runs/r1") -> Record:
    return Record("rec-1", StreamName(stream), 1, 7, kind, data, metadata, AT)


def test_run_facts_take_the_recall_form_with_their_extensions() -> None:
    metadata = {
        "by": "caller-1",
        "correlation_id": "top",
        "causation_id": "cause",
        "run_id": "r1",
        "definition": {"type": "reasoning", "name": "grade", "version": 3},
        "depth": 2,
        "call_depth": 1,
        "called_by": {"run_id": "top", "reference": "/do/0/x", "run": 1},
        "trigger": {"kind": "event", "reference": "/schedule/on"},
    }
    rejected = playbook_event(record("run_rejected", {"reason": "invalid_input", "detail": "no"}, metadata))
    assert rejected is not None and rejected.depth == 3 and rejected.run_id == "r1"
    assert rejected.event == {
        "specversion": "1.0",
        "id": "rec-1",
        "type": "run_rejected",
        "time": "2026-10-01T09:00:00.000Z",
        "source": "/runs/r1",
        "subject": "reasoning/grade",
        "data": {"reason": "invalid_input"},
        "causationid": "cause",
        "correlationid": "top",
        "caller": "caller-1",
        "definitionversion": 3,
        "depth": 2,
        "calldepth": 1,
        "calledby": "top",
        "triggerkind": "event",
        "triggerreference": "/schedule/on",
    }
    started = playbook_event(record("run_started", {"input": {}}, metadata))
    assert started is not None and "data" not in started.event
    big = playbook_event(record("run_succeeded", {"output": "x" * 300_000}, metadata))
    assert big is not None and big.event["data"] == {"output_bytes": 300_002}


def test_definition_facts_have_no_subject_or_data_and_other_records_are_no_events() -> None:
    metadata = {"by": "tester", "definition": {"type": "workflow", "name": "digest", "version": 2}}
    stream = "playbook/acme/finance/definitions/workflow"
    retired = playbook_event(record("definition_retired", {"name": "digest", "version": 2}, metadata, stream))
    assert retired is not None and retired.depth == 1
    assert retired.event["source"] == "/definitions/workflow/digest"
    assert "subject" not in retired.event and "data" not in retired.event
    assert "definitionversion" not in retired.event
    assert playbook_event(record("run_deferred", {}, metadata)) is None
    assert playbook_event(record("step_finished", {}, metadata)) is None


def test_filters_compare_attributes_as_json_and_a_raising_expression_is_no_match(engine: SandboxEngine) -> None:
    event = {"type": "t", "source": "/s", "depth": 1, "data": {"n": 2}}
    conditions = DataConditions(engine, 0)
    try:

        def matches(attributes: dict[str, Any]) -> bool:
            return trigger_matches([{"reference": "/", "type": "t", "attributes": attributes}], event, conditions)

        assert matches({}) and matches({"source": "/s", "depth": 1})
        assert not matches({"depth": True}), "an integer extension is not a boolean"
        assert not matches({"subject": "x"}) and matches({"subject": None})
        assert matches({"data": {"n": 2}}) and not matches({"data": {"n": 3}})
        assert matches({"data": '${ data["n"] > 1 }'}) and not matches({"data": '${ data["n"] > 2 }'})
        assert not matches({"data": '${ data["missing"] }'}), "a raising expression is no match"
    finally:
        conditions.close()


def test_the_budget_starts_sixty_a_minute_queues_a_thousand_then_refuses() -> None:
    budget = StartBudget()
    key = ("acme", "finance", "digest")
    now = 60_000 * 1_000
    minutes = [budget.take(key, now) for _ in range(STARTS_PER_MINUTE + QUEUED_MAX + 1)]
    assert minutes[:STARTS_PER_MINUTE] == [1_000] * STARTS_PER_MINUTE
    assert minutes[STARTS_PER_MINUTE] == 1_001
    assert minutes[-2] == 1_000 + (QUEUED_MAX + STARTS_PER_MINUTE - 1) // STARTS_PER_MINUTE
    assert minutes[-1] is None
    assert budget.take(("acme", "finance", "other"), now) == 1_000


async def test_the_position_keeps_the_furthest_saved_across_rotations(
    ledger: Ledger, fence: LeaseFence, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(follow_position, "ROTATE_AFTER", 3)
    kept = FollowPosition(ledger)
    assert await kept.load() is None
    for n in range(1, 9):
        await kept.save(FeedPosition(n, n), fence)
        assert await FollowPosition(ledger).load() == FeedPosition(n, n)
    rows = [await ledger.due_work.entries_of_run(POSITION_SCOPE, run) for run in PSEUDO_RUNS]
    assert sum(len(r) for r in rows) <= 4


async def test_a_1025th_workflow_with_triggers_is_refused(
    registry: DefinitionRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(playbook_actor, "MAX_TRIGGERED_WORKFLOWS", 2)
    await save(registry, "one", ON_EU)
    await save(registry, "two", ON_EU)
    await save(registry, "two", ON_EU.replace("seen: true", "seen: 2"))  # a new version of one of them is fine
    with pytest.raises(Rejection) as refused:
        await save(registry, "three", ON_EU)
    assert refused.value.reason == "conflict"
    await registry.retire(SCOPE, "workflow", "one", "tester")
    await save(registry, "three", ON_EU)


async def test_starts_past_sixty_a_minute_are_queued_as_due_work_and_fired_later(
    ledger: Ledger, registry: DefinitionRegistry, reactions: Reactions, fence: LeaseFence, clock: Clock
) -> None:
    await save(registry, "digest", ON_EU)
    for _ in range(STARTS_PER_MINUTE + 2):
        await publish(ledger, "eu")
    await follow_all(reactions, fence)
    assert len(await started_runs(ledger, "digest")) == STARTS_PER_MINUTE
    rows = await ledger.due_work.entries_of_run(SCOPE, schedule_run_id("digest"))
    queued = [row for row in rows if row.key.startswith(QUEUED_PREFIX) and row.state == "armed"]
    assert len(queued) == 2
    for row in queued:
        assert row.due_at is not None and row.due_at.timestamp() * 1000 > clock.ms
        assert row.payload["input"][0]["type"] == MONTH_CLOSED
        await reactions.fire(ledger_entry(row), fence)
    assert len(await started_runs(ledger, "digest")) == STARTS_PER_MINUTE + 2


def ledger_entry(row: Any) -> Any:
    from auto_runtime.ledger import DueEntry

    return DueEntry(row.scope, row.run_id, row.key, row.due_at, row.payload)


async def test_a_cron_schedule_is_due_at_the_first_matching_minute_after_its_save_and_runs_with_its_due_time(
    ledger: Ledger, registry: DefinitionRegistry, reactions: Reactions, fence: LeaseFence, clock: Clock
) -> None:
    await save(registry, "nightly", "schedule:\n  cron: '0 6 * * *'\ndo:\n  - first: { set: { a: 1 } }\n")
    await follow_all(reactions, fence)
    rows = await ledger.due_work.entries_of_run(SCOPE, schedule_run_id("nightly"))
    (row,) = rows
    assert row.due_at is not None and (row.due_at.hour, row.due_at.minute, row.due_at.second) == (6, 0, 0)
    saved = await registry.latest(SCOPE, "workflow", "nightly")
    assert 0 < (row.due_at - datetime.fromisoformat(saved.updated_at)).total_seconds() <= 86_400
    clock.ms = int(row.due_at.timestamp() * 1000) + 5
    await reactions.fire(ledger_entry(row), fence)
    (run,) = await started_runs(ledger, "nightly")
    assert run.data["input"] == {"schedule": {"due": row.due_at.strftime("%Y-%m-%dT%H:%M:%S.000Z")}}
    assert run.metadata["trigger"] == {"kind": "cron", "reference": "/schedule/cron"}
    armed = [r for r in await ledger.due_work.entries_of_run(SCOPE, schedule_run_id("nightly")) if r.state == "armed"]
    assert len(armed) == 1 and armed[0].due_at is not None
    assert (armed[0].due_at - row.due_at).total_seconds() == 86_400


async def test_a_schedule_armed_by_an_earlier_release_fires_once_and_moves_to_its_playbooks_partition(
    ledger: Ledger, registry: DefinitionRegistry, reactions: Reactions, fence: LeaseFence, clock: Clock
) -> None:
    """Earlier releases kept a schedule's entries in a pseudo-run that is a UUID (placed by its own hash); such an
    entry is not armed again beside it, fires once, and arms the next due time in the playbook's partition."""
    body = "schedule:\n  cron: '0 6 * * *'\ndo:\n  - first: { set: { a: 1 } }\n"
    await save(registry, "nightly", body)
    await follow_all(reactions, fence)
    (row,) = await ledger.due_work.entries_of_run(SCOPE, schedule_run_id("nightly"))
    earlier = DueEntry(SCOPE, earlier_schedule_run_id("nightly"), row.key, row.due_at, row.payload)
    await ledger.due_work.forget_run(SCOPE, schedule_run_id("nightly"))
    await ledger.due_work.arm([earlier])  # the ledger as an earlier release left it
    count = ledger.partitioning.count
    await save(registry, "nightly", body.replace("a: 1", "a: 2"))  # a new version, the trigger unchanged
    await follow_all(reactions, fence)
    assert await ledger.due_work.entries_of_run(SCOPE, schedule_run_id("nightly")) == []
    clock.ms = int(row.due_at.timestamp() * 1000) + 5
    await reactions.fire(earlier, fence)
    assert len(await started_runs(ledger, "nightly")) == 1
    assert [r.state for r in await ledger.due_work.entries_of_run(SCOPE, earlier.run_id)] == ["fired"]
    (following,) = await ledger.due_work.entries_of_run(SCOPE, schedule_run_id("nightly"))
    assert following.state == "armed" and following.due_at is not None and following.due_at > row.due_at
    home = partition_of(playbook_key(SCOPE.org, SCOPE.playbook), count)
    assert partition_of_due(SCOPE.key, following.run_id, count) == home


async def test_a_partition_without_a_position_starts_from_the_one_position_of_earlier_releases(
    ledger: Ledger, fence: LeaseFence
) -> None:
    """Earlier releases kept one position for the whole feed: every record up to it was reacted to, so each
    partition starts from there until it saved a position of its own, and no partition reads another's."""
    await FollowPosition(ledger).save(FeedPosition(7, 7), fence)  # as an earlier release left it
    assert await FollowPosition(ledger, 5).load() == FeedPosition(7, 7)
    await FollowPosition(ledger, 5).save(FeedPosition(9, 9), fence)
    assert await FollowPosition(ledger, 5).load() == FeedPosition(9, 9)
    assert await FollowPosition(ledger, 6).load() == FeedPosition(7, 7)
    assert await FollowPosition(ledger).load() == FeedPosition(7, 7)
