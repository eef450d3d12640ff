"""Delivery attempts on their schedule, driven in-process by a clock the test moves (interaction-format §4): the
real runtime, deliveries and timer loop, on each ledger, against the fake MCP tool server as a real process. The
test sweeps itself after moving the clock, and waits for the attempt's recorded end, never for a time."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import trio

from auto_runtime.functions.interaction.interaction_type import InteractionType
from auto_runtime.functions.registry import function_types
from auto_runtime.interaction_host.deliveries import MAX_ATTEMPTS, next_attempt_wait
from auto_runtime.interaction_host.runtime import KEY_PREFIX, InteractionRuntime
from auto_runtime.ledger import Ledger, Record
from auto_runtime.playbooks.definition_registry import DefinitionRegistry
from auto_runtime.playbooks.run_facts import run_stream
from auto_runtime.playbooks.run_service import RunService
from auto_runtime.settings import ToolServer
from auto_runtime.supervision import NO_BACKOFF
from auto_runtime.tools.tool_server_set import ToolServerSet
from auto_runtime.workflow_host.run_store import RunStore
from auto_runtime.workflow_host.timer_loop import TimerLoop
from tests.fakes.gateway_process import McpToolServerProcess, start_mcp_tool_server
from tests.workflow_host.conftest import SCOPE, engine, ledger, postgres_database, postgres_url, store, target

__all__ = ["engine", "ledger", "postgres_database", "postgres_url", "store", "target"]

BOUND_SECONDS = 60
NOTIFICATION = """---
to: ana
expires: PT1H
deliver:
  server: desk
  tool: TOOL
  with: { text: '{{ message }}', to: '{{ to }}' }
---
Shipped.
"""


@dataclass
class Clock:
    """The time the runtime arms and fires due work at; only the test moves it."""

    now: datetime

    def __call__(self) -> datetime:
        return self.now

    def advance(self, by: timedelta) -> None:
        self.now += by


@dataclass
class Host:
    ledger: Ledger
    runs: RunService
    loop: TimerLoop
    clock: Clock

    async def history(self, run_id: str) -> list[Record]:
        return await self.ledger.read_stream(run_stream(SCOPE, run_id))

    async def until(self, run_id: str, kind: str, count: int = 1) -> list[Record]:
        """The run's history once it holds `count` records of `kind` (an attempt ends in a task of its own); the
        bound only keeps a broken runtime from hanging the suite."""
        with trio.fail_after(BOUND_SECONDS):
            while True:
                seen = self.ledger.appended.generation
                history = await self.history(run_id)
                if sum(record.type == kind for record in history) >= count:
                    return history
                await self.ledger.appended.wait_beyond(seen)

    async def sweep_at(self, moment: datetime) -> None:
        self.clock.now = moment
        await self.loop.sweep_once()


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpToolServerProcess]:
    process = start_mcp_tool_server(Path(tmp_path_factory.mktemp("desk")), "--interaction-tools")
    yield process
    process.stop()


@asynccontextmanager
async def hosted(ledger: Ledger, store: RunStore, desk: McpToolServerProcess) -> AsyncIterator[Host]:
    clock = Clock(datetime.now(UTC))
    tools = ToolServerSet(
        {"desk": ToolServer.model_validate({"url": desk.url, "org": "*"})}, secrets=set(), reconnect_backoff=NO_BACKOFF
    )
    types = function_types(InteractionType(tools))
    definitions = DefinitionRegistry(ledger, types)
    runs = RunService(ledger, definitions, types)
    interactions = InteractionRuntime(ledger, runs, open_limit=10, tools=tools, clock=clock)
    runs.serve_waiting("interaction", interactions)
    loop = TimerLoop(store, "server-a", timedelta(hours=1), handlers={KEY_PREFIX: interactions.fire}, clock=clock)
    async with definitions.actors.serving(), trio.open_nursery() as nursery:
        await nursery.start(tools.run)
        nursery.start_soon(interactions.deliveries.follow, None)
        try:
            yield Host(ledger, runs, loop, clock)
        finally:
            nursery.cancel_scope.cancel()
            await tools.aclose()


async def notify(host: Host, tool: str) -> str:
    source = NOTIFICATION.replace("TOOL", tool)
    await host.runs.definitions.create(SCOPE, "interaction", "shipped", source, "tester")
    run_id = str(uuid.uuid4())
    started: dict[str, Any] = await host.runs.run_definition(SCOPE, "interaction", "shipped", {}, run_id, "tester")
    assert started["status"] == "started", started
    return run_id


def numbers(history: list[Record], kind: str) -> list[int]:
    return [int(record.data["number"]) for record in history if record.type == kind]


async def test_a_failing_tool_is_attempted_five_times_on_the_schedule_then_the_notification_is_undelivered(
    ledger: Ledger, store: RunStore, desk: McpToolServerProcess
) -> None:
    async with hosted(ledger, store, desk) as host:
        run_id = await notify(host, "crash")
        start = host.clock()
        await host.sweep_at(start)
        history = await host.until(run_id, "delivery_failed")
        for number in range(2, MAX_ATTEMPTS + 1):
            failed_at = host.clock()
            wait = next_attempt_wait(number - 1, None)
            await host.sweep_at(failed_at + wait - timedelta(milliseconds=1))
            assert numbers(await host.history(run_id), "delivery_started") == list(range(1, number)), number
            await host.sweep_at(failed_at + wait)
            history = await host.until(run_id, "delivery_failed", number)
        assert numbers(history, "delivery_started") == [1, 2, 3, 4, 5]
        assert {record.data["because"] for record in history if record.type == "delivery_failed"} == {"server_failure"}
        history = await host.until(run_id, "run_rejected")
        rejected = history[-1]
        assert (rejected.data["reason"], rejected.data["kind"]) == ("unanswered", "undelivered")
        assert rejected.metadata["causation_id"] == history[-2].id and history[-2].type == "delivery_failed"
        await host.sweep_at(host.clock() + timedelta(days=1))
        assert numbers(await host.history(run_id), "delivery_started") == [1, 2, 3, 4, 5]


async def test_a_retry_after_longer_than_the_schedule_sets_the_next_attempt(
    ledger: Ledger, store: RunStore, desk: McpToolServerProcess
) -> None:
    async with hosted(ledger, store, desk) as host:
        run_id = await notify(host, "swamped")
        await host.sweep_at(host.clock())
        history = await host.until(run_id, "delivery_failed")
        (failed,) = [record for record in history if record.type == "delivery_failed"]
        assert failed.data["retry_after_ms"] == 60_000
        wait = next_attempt_wait(1, 60_000)
        assert wait == timedelta(seconds=60) > next_attempt_wait(1, None)
        failed_at = host.clock()
        await host.sweep_at(failed_at + next_attempt_wait(1, None))
        assert numbers(await host.history(run_id), "delivery_started") == [1]
        await host.sweep_at(failed_at + wait - timedelta(milliseconds=1))
        assert numbers(await host.history(run_id), "delivery_started") == [1]
        await host.sweep_at(failed_at + wait)
        history = await host.until(run_id, "delivery_failed", 2)
        assert numbers(history, "delivery_started") == [1, 2]
