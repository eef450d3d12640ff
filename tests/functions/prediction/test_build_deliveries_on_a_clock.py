"""prediction-format §8.5: a build's request goes to a trainer that delivers through a tool by the interaction
format's attempts (interaction-format §4), driven in-process by a clock the test moves, on each ledger: the
interaction host's deliveries and timer loop, the builds' start, and the fake MCP tool server as a real process
(`desk`). The test sweeps itself after moving the clock and waits for what is recorded, never for a time."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import trio

from auto_runtime.functions.interaction.delivery_decisions import LOST_AFTER, next_attempt_wait
from auto_runtime.functions.interaction.interaction_type import InteractionType
from auto_runtime.functions.prediction.brief import request_message
from auto_runtime.functions.prediction.build_facts import is_build_input
from auto_runtime.functions.prediction.build_requests import BUILD_REQUEST_SOURCE, BuildRequests
from auto_runtime.functions.prediction.builds import Builds
from auto_runtime.functions.prediction.cache_folder import CacheFolder
from auto_runtime.functions.prediction.datasets import Datasets
from auto_runtime.functions.prediction.model_pool import ModelPool
from auto_runtime.functions.prediction.prediction_type import PredictionType
from auto_runtime.functions.prediction.questions import Questions
from auto_runtime.functions.prediction.run_handlers import serve_builds
from auto_runtime.functions.registry import function_types
from auto_runtime.interaction_host.interaction_runtime import KEY_PREFIX, InteractionRuntime
from auto_runtime.interaction_host.open_requests import OPEN_REQUESTS_TABLE
from auto_runtime.ledger import Ledger
from auto_runtime.playbooks.definition_registry import DefinitionRegistry
from auto_runtime.playbooks.run_service import RunService
from auto_runtime.settings import ToolServer
from auto_runtime.supervision import NO_BACKOFF
from auto_runtime.tools.tool_server_set import ToolServerSet
from auto_runtime.workflow_host.run_store import RunStore
from auto_runtime.workflow_host.timer_loop import TimerLoop
from tests.fakes.gateway_process import McpToolServerProcess
from tests.functions.prediction.test_cycle_on_sqlite import DATA, SOURCE, _chunks
from tests.interaction_host.clocked import Clock, Host, desk, numbers
from tests.stored_rows import stored_rows
from tests.workflow_host.conftest import SCOPE, engine, ledger, postgres_database, postgres_url, store, target

__all__ = ["desk", "engine", "ledger", "postgres_database", "postgres_url", "store", "target"]

TRAINER = """---
to: '{{ input.function }}-trainers'
expires: P2D
deliver:
  server: desk
  tool: TOOL
  with: { text: '{{ message }}', build: '{{ run_id }}', function: '{{ function }}' }
output:
  schema:
    type: object
---
Train it.
"""


@asynccontextmanager
async def hosted(ledger: Ledger, store: RunStore, desk: McpToolServerProcess, tmp_path: Path) -> AsyncIterator[Host]:
    """The interaction host of `tests.interaction_host.clocked` with builds served beside it, on one clock."""
    clock = Clock(datetime.now(UTC))
    tools = ToolServerSet(
        {"desk": ToolServer.model_validate({"url": desk.url, "org": "*"})}, secrets=set(), reconnect_backoff=NO_BACKOFF
    )
    datasets = Datasets(ledger)
    builds = Builds(ledger, datasets, 4, 1, tools=tools, clock=clock)
    pool = ModelPool(processes=2, builds_at_once=1, memory_mib=1280)
    questions = Questions(builds, datasets, pool, CacheFolder(tmp_path / "cache"))
    types = function_types(InteractionType(tools), PredictionType(ledger, datasets, questions))
    definitions = DefinitionRegistry(ledger, types)
    runs = RunService(ledger, definitions, types)
    interactions = InteractionRuntime(ledger, runs, open_limit=10, tools=tools, clock=clock)
    runs.serve_waiting("interaction", interactions)
    runs.serve_waiting("prediction", builds, is_build_input)
    serve_builds(builds, definitions.actors)
    interactions.answer_for("prediction", BuildRequests(builds, definitions.actors.runs), BUILD_REQUEST_SOURCE)
    loop = TimerLoop(store, "server-a", timedelta(hours=1), handlers={KEY_PREFIX: interactions.fire}, clock=clock)
    builds.wake_with(loop.wake)
    try:
        async with definitions.actors.serving(), trio.open_nursery() as nursery:
            await nursery.start(tools.run)
            nursery.start_soon(interactions.deliveries.follow, None)
            nursery.start_soon(interactions.deliveries.reads.follow, None)
            try:
                yield Host(ledger, runs, interactions, loop, clock)
            finally:
                nursery.cancel_scope.cancel()
    finally:
        await tools.aclose()


async def build(host: Host, tool: str) -> str:
    """A build of `units` whose trainer delivers through the fake's `tool`; its run id."""
    await host.runs.definitions.create(SCOPE, "interaction", "train-forecasts", TRAINER.replace("TOOL", tool), "t")
    digest = hashlib.sha256(DATA).hexdigest()
    await Datasets(host.ledger).upload(SCOPE, digest, _chunks(DATA))
    await host.runs.definitions.create(SCOPE, "prediction", "units", SOURCE.format(digest=digest), "t")
    run_id = str(uuid.uuid4())
    started: dict[str, Any] = await host.runs.run_definition(SCOPE, "prediction", "units", {"build": {}}, run_id, "t")
    assert started["status"] == "started", started
    return run_id


async def standing(host: Host, run_id: str) -> tuple[str, int]:
    rows = await stored_rows(
        host.ledger,
        f"SELECT standing, attempts FROM {OPEN_REQUESTS_TABLE} WHERE org = ? AND playbook = ? AND run_id = ?",
        (SCOPE.org, SCOPE.playbook, run_id),
    )
    return str(rows[0]["standing"]), int(rows[0]["attempts"])


async def test_a_failing_tool_is_attempted_five_times_on_the_schedule_then_the_trainer_answers(
    ledger: Ledger, store: RunStore, desk: McpToolServerProcess, tmp_path: Path
) -> None:
    async with hosted(ledger, store, desk, tmp_path) as host:
        run_id = await build(host, "crash")
        assert await standing(host, run_id) == ("to_deliver", 0)
        await host.sweep_at(host.clock())
        await host.until(run_id, "delivery_failed")
        assert await standing(host, run_id) == ("retrying", 1)
        history = await host.failing_on_schedule(run_id)
        assert numbers(history, "delivery_started") == [1, 2, 3, 4, 5]
        assert {record.data["because"] for record in history if record.type == "delivery_failed"} == {"server_failure"}
        asked = next(record for record in history if record.type == "build_asked")
        started = [record for record in history if record.type == "delivery_started"]
        assert all(record.metadata["causation_id"] == asked.id for record in started)
        assert started[0].data["arguments"] == {
            "text": request_message(SCOPE.org, SCOPE.playbook, run_id, "units"),
            "build": run_id,
            "function": "units",
        }
        assert await standing(host, run_id) == ("undelivered", 5)
        await host.sweep_at(host.clock() + timedelta(days=1))
        history = await host.history(run_id)
        assert numbers(history, "delivery_started") == [1, 2, 3, 4, 5]
        assert history[-1].type == "delivery_failed", "the build stays open after its attempts are spent"
        answered = await host.interactions.answer(SCOPE, run_id, {"candidates": []}, None, "key:trainer")
        assert answered["answer"] == {"candidates": []}
        assert (await host.history(run_id))[-1].type == "request_answered"


async def test_an_attempt_unfinished_a_minute_after_it_started_is_lost_and_the_next_is_armed(
    ledger: Ledger, store: RunStore, desk: McpToolServerProcess, tmp_path: Path
) -> None:
    """The fake's `hang` never answers: the attempt is still in flight when the clock passes its minute."""
    async with hosted(ledger, store, desk, tmp_path) as host:
        run_id = await build(host, "hang")
        started_at = host.clock()
        await host.sweep_at(started_at)
        assert numbers(await host.history(run_id), "delivery_started") == [1]
        assert await standing(host, run_id) == ("delivering", 1)
        await host.sweep_at(started_at + LOST_AFTER - timedelta(milliseconds=1))
        assert numbers(await host.history(run_id), "delivery_failed") == []
        await host.sweep_at(started_at + LOST_AFTER)
        history = await host.until(run_id, "delivery_failed")
        (lost,) = [record for record in history if record.type == "delivery_failed"]
        assert lost.data["because"] == "lost" and lost.data["number"] == 1
        assert await standing(host, run_id) == ("retrying", 1)
        lost_at = host.clock()
        await host.sweep_at(lost_at + next_attempt_wait(1, None) - timedelta(milliseconds=1))
        assert numbers(await host.history(run_id), "delivery_started") == [1]
        await host.sweep_at(lost_at + next_attempt_wait(1, None))
        assert numbers(await host.history(run_id), "delivery_started") == [1, 2]


async def test_a_builds_first_attempt_wakes_the_timer_loop_instead_of_waiting_for_its_sweep(
    ledger: Ledger, store: RunStore, desk: McpToolServerProcess, tmp_path: Path
) -> None:
    """The loop runs on its own here and sweeps once an hour: the attempt starts because the build's append woke
    it (without the wake, `until` meets its bound)."""
    async with hosted(ledger, store, desk, tmp_path) as host, trio.open_nursery() as nursery:
        await nursery.start(host.loop.run)
        run_id = await build(host, "say")
        history = await host.until(run_id, "delivery_succeeded")
        assert numbers(history, "delivery_started") == [1]
        nursery.cancel_scope.cancel()
