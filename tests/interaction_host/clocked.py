"""An in-process interaction host on a clock the test moves: the real runtime, deliveries, reply reads and timer
loop on one ledger, against the fake MCP tool server as a real process (`desk`). The test sweeps itself after
moving the clock, and waits for what is recorded, never for a time."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import trio

from auto_runtime.functions.interaction.delivery_decisions import next_attempt_wait
from auto_runtime.functions.interaction.interaction_type import InteractionType
from auto_runtime.functions.interaction.request_sources import MAX_ATTEMPTS
from auto_runtime.functions.registry import function_types
from auto_runtime.interaction_host.interaction_runtime import KEY_PREFIX, InteractionRuntime
from auto_runtime.ledger import Ledger, Record
from auto_runtime.playbooks.definition_registry import DefinitionRegistry
from auto_runtime.playbooks.run_service import RunService
from auto_runtime.runs.facts import run_stream
from auto_runtime.settings import ToolServer
from auto_runtime.supervision import NO_BACKOFF
from auto_runtime.tools.tool_server_set import ToolServerSet
from auto_runtime.workflow_host.run_store import RunStore
from auto_runtime.workflow_host.timer_loop import TimerLoop
from tests.fakes.gateway_process import McpToolServerProcess, start_mcp_tool_server
from tests.workflow_host.conftest import SCOPE

BOUND_SECONDS = 60


def numbers(history: list[Record], kind: str) -> list[int]:
    """The attempt numbers of the history's records of `kind` (`delivery_started`, `delivery_failed`)."""
    return [int(record.data["number"]) for record in history if record.type == kind]


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
    interactions: InteractionRuntime
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

    async def failing_on_schedule(self, run_id: str) -> list[Record]:
        """Once attempt 1 failed: attempts 2 to 5, each swept a millisecond before its wait (1, 2, 4 or 8 minutes
        after the last failure), where it must not start, then at it, until it failed; the history then."""
        history = await self.history(run_id)
        for number in range(2, MAX_ATTEMPTS + 1):
            failed_at = self.clock()
            wait = next_attempt_wait(number - 1, None)
            await self.sweep_at(failed_at + wait - timedelta(milliseconds=1))
            assert numbers(await self.history(run_id), "delivery_started") == list(range(1, number)), number
            await self.sweep_at(failed_at + wait)
            history = await self.until(run_id, "delivery_failed", number)
        return history

    async def settle_reads(self) -> None:
        """Until the reads the last sweep started have ended; the bound only keeps a broken read from hanging."""
        with trio.fail_after(BOUND_SECONDS):
            await self.interactions.deliveries.reads.wait_idle()

    async def playbook_events(self, *types: str) -> list[Record]:
        page = await self.ledger.read_playbook(SCOPE, order="asc", types=set(types), limit=100)
        return page.records

    async def until_playbook(self, kind: str, count: int = 1) -> list[Record]:
        """The playbook's records of `kind` once there are `count` (reads and tellings run in tasks of their own);
        the bound only keeps a broken runtime from hanging the suite."""
        with trio.fail_after(BOUND_SECONDS):
            while True:
                seen = self.ledger.appended.generation
                found = await self.playbook_events(kind)
                if len(found) >= count:
                    return found
                await self.ledger.appended.wait_beyond(seen)


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
    try:
        async with definitions.actors.serving(), trio.open_nursery() as nursery:
            await nursery.start(tools.run)
            nursery.start_soon(interactions.deliveries.follow, None)
            nursery.start_soon(interactions.deliveries.reads.follow, None)
            host = Host(ledger, runs, interactions, loop, clock)
            try:
                yield host
                await host.settle_reads()
            finally:
                nursery.cancel_scope.cancel()
    finally:
        await tools.aclose()  # once nothing that calls a tool runs
