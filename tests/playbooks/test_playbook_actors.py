"""Issue 15 point 2: a playbook actor per (org, playbook) owns its definitions' commands and keeps their
current versions; the ledger's stream version still guards changes between servers (design §4)."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from auto_runtime.actors import ActorStoppedError
from auto_runtime.ledger import Ledger, LedgerStartError
from auto_runtime.playbooks.actor_limits import ActorLimits
from auto_runtime.playbooks.definition_registry import DefinitionRegistry, definitions_stream
from auto_runtime.server import RUNTIME_PROJECTIONS
from auto_runtime.supervision import NO_BACKOFF, RestartIntensity, Supervisor, SupervisorFailedError
from tests.ledger.conftest import Target
from tests.playbooks.conftest import OTHER, SCOPE, run_sql, workflow

KEY = (SCOPE.org, SCOPE.playbook)
OTHER_KEY = (OTHER.org, OTHER.playbook)
TABLE_AWAY = "ALTER TABLE definitions RENAME TO definitions_away"
TABLE_BACK = "ALTER TABLE definitions_away RENAME TO definitions"


async def test_concurrent_saves_of_one_playbook_take_turns_and_make_consecutive_versions(
    ledger: Ledger, definitions: DefinitionRegistry
) -> None:
    await definitions.create(SCOPE, "workflow", "flow", workflow(0), "tester")
    versions: list[int] = []

    async def save(n: int) -> None:
        versions.append((await definitions.update(SCOPE, "workflow", "flow", workflow(n), "tester")).version)

    for pair in range(10):  # two at a time: the save-time checkers take two documents at once
        async with trio.open_nursery() as nursery:
            nursery.start_soon(save, 2 * pair + 1)
            nursery.start_soon(save, 2 * pair + 2)
    assert sorted(versions) == list(range(2, 22))
    assert await ledger.stream_version(definitions_stream(SCOPE, "workflow")) == 21
    assert (await definitions.latest(SCOPE, "workflow", "flow")).version == 21
    assert definitions.actors.spawns == 1


async def test_a_change_made_by_another_server_is_read_before_the_next_decision(
    target: Target, definitions: DefinitionRegistry, types: dict[str, Any]
) -> None:
    if target.kind == "sqlite":
        pytest.skip("servers share a PostgreSQL ledger only: a SQLite file has one server (its lock, below)")
    async with target.open(RUNTIME_PROJECTIONS) as other_ledger:
        other = DefinitionRegistry(other_ledger, types)
        async with other.actors.serving():
            assert (await definitions.create(SCOPE, "workflow", "flow", workflow(0), "a")).version == 1
            assert (await other.update(SCOPE, "workflow", "flow", workflow(1), "b")).version == 2
            assert (await definitions.update(SCOPE, "workflow", "flow", workflow(2), "a")).version == 3
            unchanged = await other.update(SCOPE, "workflow", "flow", workflow(2), "b")
            assert (unchanged.version, unchanged.created_by) == (3, "a")
            versions: list[int] = []

            async def save(registry: DefinitionRegistry, n: int) -> None:
                versions.append((await registry.update(SCOPE, "workflow", "flow", workflow(n), "x")).version)

            for n in range(3):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(save, definitions, 10 + n)
                    nursery.start_soon(save, other, 20 + n)
            assert sorted(versions) == list(range(4, 10))
            assert (await definitions.latest(SCOPE, "workflow", "flow")).version == 9


async def test_a_playbook_actor_whose_start_fails_answers_that_save_and_its_next_save_starts_it_again(
    target: Target, definitions: DefinitionRegistry
) -> None:
    await definitions.create(OTHER, "workflow", "flow", workflow(0), "tester")
    assert definitions.actors.is_live(OTHER_KEY)
    await run_sql(target, TABLE_AWAY)
    with pytest.raises(Exception, match="definitions") as failed:
        await definitions.create(SCOPE, "workflow", "flow", workflow(0), "tester")
    assert not isinstance(failed.value, ActorStoppedError)
    assert not definitions.actors.is_live(KEY)
    assert definitions.actors.is_live(OTHER_KEY)
    await run_sql(target, TABLE_BACK)
    assert (await definitions.create(SCOPE, "workflow", "flow", workflow(0), "tester")).version == 1
    assert (await definitions.update(OTHER, "workflow", "flow", workflow(1), "tester")).version == 2
    assert definitions.actors.restarts == 1
    assert definitions.actors.spawns == 3  # the other playbook's actor lived on through the fault


async def test_start_failures_that_repeat_escalate_from_the_registry_to_its_supervisor(
    target: Target, ledger: Ledger, types: dict[str, Any]
) -> None:
    """OTP's rule twice: 1 restart allowed per window (the window is far longer than the test), so the second
    failed start makes the registry fail; its supervisor restarts it once, and its second failure makes the
    supervisor fail in turn."""
    once = RestartIntensity(max_restarts=1, period=3600.0)
    definitions = DefinitionRegistry(ledger, types, ActorLimits(intensity=once))
    supervisor = Supervisor("playbooks", [definitions.actors.child_spec()], intensity=once, backoff=NO_BACKOFF)
    await run_sql(target, TABLE_AWAY)
    ended: list[BaseException] = []

    async def supervise(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            await supervisor.run(task_status=task_status)
        except SupervisorFailedError as failure:
            ended.append(failure)

    refusals: list[str] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(supervise)
        for _ in range(1000):
            if ended:
                break
            if not definitions.actors.running:
                await trio.lowlevel.checkpoint()
                continue
            try:
                await definitions.create(SCOPE, "workflow", "flow", workflow(0), "tester")
            except ActorStoppedError:
                refusals.append("stopped")
            except Exception:
                refusals.append("failed start")
    (failure,) = ended
    assert failure.child == "playbook-actors"
    assert definitions.actors.restarts == 4
    assert refusals.count("failed start") == 4
    await run_sql(target, TABLE_BACK)


async def test_a_sqlite_ledger_file_has_one_server_so_its_definitions_are_answered_from_memory(
    target: Target, ledger: Ledger, definitions: DefinitionRegistry
) -> None:
    if target.kind != "sqlite":
        pytest.skip("PostgreSQL is shared by servers, so every read asks the database")
    with pytest.raises(LedgerStartError, match="is in use by another process"):
        async with target.open(RUNTIME_PROJECTIONS):
            pass
    assert ledger.sole_writer
    await definitions.create(SCOPE, "workflow", "flow", workflow(0), "tester")
    assert (await definitions.latest(SCOPE, "workflow", "flow")).version == 1
    await run_sql(target, TABLE_AWAY)  # what the registry and the actor know, they answer without a read
    assert (await definitions.latest(SCOPE, "workflow", "flow")).version == 1
    await run_sql(target, TABLE_BACK)
    assert (await definitions.update(SCOPE, "workflow", "flow", workflow(1), "tester")).version == 2
    assert (await definitions.latest(SCOPE, "workflow", "flow")).version == 2  # a save forgets what was known
