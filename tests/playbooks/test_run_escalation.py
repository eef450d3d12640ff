"""Run actors under their playbook's actor (design §4): a run actor that keeps crashing escalates to its
playbook's actor, which restarts from the ledger with fresh run actors and, when the faults go on, gives up;
another playbook's actor and its runs are untouched, and nothing climbs past the playbook's actor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import trio
import trio.testing

from auto_runtime.playbooks.definition_registry import DefinitionRegistry
from auto_runtime.playbooks.playbook_host import PLAYBOOK_ESCALATIONS, RUN_ACTORS_INTENSITY, PlaybookActors
from auto_runtime.runs import RunMessage, RunWriter
from auto_runtime.server import RUNTIME_PROJECTIONS
from tests.ledger.conftest import Target
from tests.playbooks.conftest import OTHER, SCOPE, workflow

KEY = (SCOPE.org, SCOPE.playbook)
OTHER_KEY = (OTHER.org, OTHER.playbook)


class RuntimeFault(RuntimeError):
    """A fault inside the runtime while a run's message is in hand."""


@dataclass(frozen=True)
class BreakDown(RunMessage[dict[str, Any]]):
    """A message whose handler meets a fault inside the runtime."""


@dataclass(frozen=True)
class Answer(RunMessage[dict[str, Any]]):
    """A message whose handler answers."""


async def breaks_down(writer: RunWriter, message: BreakDown) -> dict[str, Any]:
    raise RuntimeFault(f"a fault inside the runtime, in the run {writer.run_id}")


async def answers(writer: RunWriter, message: Answer) -> dict[str, Any]:
    return {"status": "succeeded"}


@pytest.fixture
async def handled(definitions: DefinitionRegistry) -> DefinitionRegistry:
    """The two test messages, handled by every run actor of the definitions' playbooks."""
    definitions.actors.runs.handlers.add(BreakDown, breaks_down)
    definitions.actors.runs.handlers.add(Answer, answers)
    return definitions


async def settled(host: PlaybookActors) -> None:
    """Until the playbook's run actors run again, or its actor gave up. Waiting for all tasks to block is not
    enough alone: a restarting actor reading the ledger waits on the store's thread."""
    for _ in range(10_000):
        await trio.testing.wait_all_tasks_blocked()
        runs = host.hosted(KEY)
        if runs is None or runs.runs.running:
            return
    raise AssertionError("the playbook's actor neither restarted nor gave up")


async def run_elsewhere(definitions: DefinitionRegistry, run_id: str) -> None:
    answer = await definitions.actors.runs.ask(OTHER, run_id, Answer())
    assert answer == {"status": "succeeded"}


async def crash_once(definitions: DefinitionRegistry, run_id: str) -> None:
    with pytest.raises(RuntimeFault):
        await definitions.actors.runs.ask(SCOPE, run_id, BreakDown())
    await settled(definitions.actors)


async def test_run_faults_escalate_to_the_playbook_actor_which_restarts_from_the_ledger_then_gives_up(
    target: Target, handled: DefinitionRegistry, types: dict[str, Any], mock_clock: trio.testing.MockClock
) -> None:
    definitions = handled
    host = definitions.actors
    await definitions.create(SCOPE, "workflow", "flow", workflow(0), "a")
    await definitions.create(OTHER, "workflow", "flow", workflow(0), "a")
    await run_elsewhere(definitions, "before")
    other_runs = host.hosted(OTHER_KEY)
    assert other_runs is not None
    crashes = RUN_ACTORS_INTENSITY.max_restarts + 1  # the window stands still: the last one escalates
    for n in range(crashes):
        await crash_once(definitions, f"run-{n}")
    assert (host.escalated, host.gave_up, host.restarts) == (1, 0, 0)
    assert host.spawns == 3, "the playbook's actor restarted once; the other's lived on"
    assert host.is_live(KEY) and host.hosted(OTHER_KEY) is other_runs

    saved = 2
    if target.kind == "postgres":  # servers share a PostgreSQL ledger only (a SQLite file has one server)
        async with target.open(RUNTIME_PROJECTIONS) as other_ledger:
            elsewhere = DefinitionRegistry(other_ledger, types)
            async with elsewhere.actors.serving():
                assert (await elsewhere.update(SCOPE, "workflow", "flow", workflow(1), "b")).version == 2
        saved = 3
    assert (await definitions.update(SCOPE, "workflow", "flow", workflow(2), "a")).version == saved

    for escalation in range(PLAYBOOK_ESCALATIONS.max_restarts):
        for n in range(crashes):
            await crash_once(definitions, f"again-{escalation}-{n}")
    assert (host.escalated, host.gave_up, host.restarts) == (PLAYBOOK_ESCALATIONS.max_restarts + 1, 1, 0)
    assert not host.is_live(KEY), "past its escalations the playbook's actor gave up"
    assert host.running, "and nothing above it saw the faults"
    assert host.hosted(OTHER_KEY) is other_runs
    await run_elsewhere(definitions, "after")
    assert (await definitions.update(OTHER, "workflow", "flow", workflow(3), "a")).version == 2
    assert (await definitions.update(SCOPE, "workflow", "flow", workflow(4), "a")).version == saved + 1, "afresh"
