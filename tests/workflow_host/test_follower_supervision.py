"""The workflow runtime's followers are supervised one by one (issue 32, point 7): a follower that crashes is
restarted alone, while the timer loop and the other followers keep running, and the restarted one resumes from
what the ledger keeps, applying nothing twice.

In-process, on each ledger, with the real runtime, the real deliveries, reply reads and reactions, and the fake
MCP tool server as a real process (`desk`). The crash is a fault inside the ledger's transaction: a projection
(the ledger's own extension point, as in `tests/supervision/test_ledger_faults.py`) refuses the `delivery_succeeded`
of one run's first attempt, so that append fails and the deliveries follower ends with the error. Due work is
due against a clock the test moves; every wait is for a record or a log line, never a duration."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import trio

from auto_runtime.functions.interaction.interaction_type import InteractionType
from auto_runtime.functions.registry import function_types
from auto_runtime.functions.workflow.workflow_type import WorkflowType
from auto_runtime.interaction_host.interaction_runtime import KEY_PREFIX as INTERACTION_KEY_PREFIX
from auto_runtime.interaction_host.interaction_runtime import InteractionRuntime
from auto_runtime.ledger import Ledger, Projection, Record
from auto_runtime.ledger.projections import ProjectionKey, Row, TableSpec
from auto_runtime.playbooks.definition_registry import DefinitionRegistry
from auto_runtime.playbooks.event_publishing import EventPublishing
from auto_runtime.playbooks.run_service import RunService
from auto_runtime.runs.facts import run_stream
from auto_runtime.sandbox.checker import Checkers
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.server import RUNTIME_PROJECTIONS
from auto_runtime.settings import ToolServer
from auto_runtime.supervision import NO_BACKOFF
from auto_runtime.tools.tool_server_set import ToolServerSet
from auto_runtime.workflow_host.reactions import Reactions
from auto_runtime.workflow_host.schedules import TRIGGER_KEY_PREFIX
from auto_runtime.workflow_host.workflow_runtime import WorkflowRuntime
from tests.fakes.gateway_process import McpToolServerProcess
from tests.interaction_host.clocked import Clock, desk, numbers
from tests.ledger.conftest import Target
from tests.workflow_host.conftest import HEAD, SCOPE, engine, postgres_database, postgres_url, target

__all__ = ["desk", "engine", "postgres_database", "postgres_url", "target"]

BOUND_SECONDS = 60
"""Bounds every wait, so a broken runtime fails the test instead of hanging it; no assertion is timed."""
SWEEP = timedelta(milliseconds=50)
PING = "com.acme.ping"
NOTIFICATION = """---
to: ana
expires: PT1H
deliver:
  server: desk
  tool: say
  with: { text: '{{ message }}' }
---
Shipped.
"""
PAUSES = "do:\n  - pause: { wait: PT1S }\n  - done: { set: { done: true } }\n"
ON_PING = f"schedule:\n  on: {{ one: {{ with: {{ type: {PING} }} }} }}\ndo:\n  - seen: {{ set: {{ seen: true }} }}\n"
SUPERVISOR_LOG = "auto_runtime.supervision.supervisor"


@dataclass
class RefusedEnding:
    """A projection that refuses (raises inside the append's transaction) the `delivery_succeeded` of attempt 1 on
    `stream`, every time it is asked, and projects nothing else. Called on the ledger's writer thread (SQLite) or
    loop thread (PostgreSQL)."""

    stream: str
    refused: threading.Event = field(default_factory=threading.Event)

    def keys(self, record: Record) -> Sequence[ProjectionKey]:
        if record.stream == self.stream and record.type == "delivery_succeeded" and record.data["number"] == 1:
            self.refused.set()
            raise RuntimeError("the test's projection refuses this delivery's ending")
        return []

    @staticmethod
    def row_after(row: Row | None, record: Record) -> Row | None:
        return row

    def projection(self) -> Projection:
        table = TableSpec("test_refused_endings", {"stream": "text"}, ("stream",))
        return Projection("test_refused_endings", 1, table, self.keys, self.row_after)


class Heard(logging.Handler):
    """Sets `event` when a record whose message starts with `prefix` is logged (the supervisor logs on the Trio
    thread, so setting a Trio event here is safe)."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix
        self.event = trio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith(self.prefix):
            self.event.set()


@dataclass
class Host:
    ledger: Ledger
    runtime: WorkflowRuntime
    runs: RunService
    clock: Clock

    async def history(self, run_id: str) -> list[Record]:
        return await self.ledger.read_stream(run_stream(SCOPE, run_id))

    async def until(self, run_id: str, kind: str) -> list[Record]:
        """The run's history once it holds a record of `kind`."""
        with trio.fail_after(BOUND_SECONDS):
            while True:
                seen = self.ledger.appended.generation
                history = await self.history(run_id)
                if any(record.type == kind for record in history):
                    return history
                await self.ledger.appended.wait_beyond(seen)

    async def started_runs(self, name: str) -> list[Record]:
        page = await self.ledger.read_playbook(SCOPE, order="asc", types={"run_started"}, limit=100)
        return [r for r in page.records if r.metadata.get("definition", {}).get("name") == name]

    async def until_started(self, name: str) -> list[Record]:
        with trio.fail_after(BOUND_SECONDS):
            while True:
                seen = self.ledger.appended.generation
                if started := await self.started_runs(name):
                    return started
                await self.ledger.appended.wait_beyond(seen)

    async def fire_next(self, run_id: str, key_prefix: str = "") -> None:
        """Move the clock to the due time of the run's next armed entry under `key_prefix` (never back) and wake
        the loop, which fires it."""
        rows = await self.ledger.due_work.entries_of_run(SCOPE, run_id)
        due = [row.due_at for row in rows if row.state == "armed" and row.key.startswith(key_prefix)]
        due_at = min(moment for moment in due if moment is not None)
        self.clock.now = max(self.clock.now, due_at)
        self.runtime.loop.wake()


@asynccontextmanager
async def hosted(ledger: Ledger, engine: SandboxEngine, desk: McpToolServerProcess) -> AsyncIterator[Host]:
    """The runtime as `server.compose_services` builds it (its timer loop, then the deliveries, reply reads and
    reactions followers), run until the block ends; its due work is due against the test's clock."""
    clock = Clock(datetime.now(UTC))
    tools = ToolServerSet(
        {"desk": ToolServer.model_validate({"url": desk.url, "org": "*"})}, secrets=set(), reconnect_backoff=NO_BACKOFF
    )
    checkers: Checkers[Any] = Checkers()
    types = function_types(WorkflowType(engine, checkers), InteractionType(tools))
    definitions = DefinitionRegistry(ledger, types)
    runs = RunService(ledger, definitions, types)
    runtime = WorkflowRuntime(
        ledger,
        engine,
        runs,
        server_id="server-a",
        runtime_version="0.1.0",
        max_duration=timedelta(days=30),
        sweep=SWEEP,
        nested_runs=4,
    )
    runtime.loop.clock = clock
    runs.serve_waiting("workflow", runtime)
    interactions = InteractionRuntime(ledger, runs, open_limit=10, tools=tools, wake=runtime.loop.wake, clock=clock)
    runs.serve_waiting("interaction", interactions)
    runtime.add_due_handler(INTERACTION_KEY_PREFIX, interactions.fire)
    runtime.add_follower("deliveries", interactions.deliveries.follow)
    runtime.add_follower("reply-reads", interactions.deliveries.reads.follow)
    reactions = Reactions(runtime.store, definitions, engine, on_applied=runtime.after_applied)
    runtime.add_due_handler(TRIGGER_KEY_PREFIX, reactions.fire)
    runtime.add_follower("reactions", reactions.follow)
    try:
        async with definitions.actors.serving(), trio.open_nursery() as nursery:
            await nursery.start(tools.run)
            await nursery.start(runtime.run)
            try:
                yield Host(ledger, runtime, runs, clock)
            finally:
                nursery.cancel_scope.cancel()
    finally:
        await tools.aclose()
        checkers.close()


async def workflow(host: Host, name: str, body: str) -> None:
    source = HEAD.replace("name: host", f"name: {name}") + body
    await host.runs.definitions.create(SCOPE, "workflow", name, source, "tester")


async def test_a_crashed_follower_is_restarted_alone_while_the_timer_loop_and_the_others_run_on(
    target: Target, engine: SandboxEngine, desk: McpToolServerProcess, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=SUPERVISOR_LOG)
    restarting = Heard("supervisor workflows: restarting child deliveries after error")
    logging.getLogger(SUPERVISOR_LOG).addHandler(restarting)
    notified = str(uuid.uuid4())
    refusing = RefusedEnding(str(run_stream(SCOPE, notified)))
    try:
        async with (
            target.open([*RUNTIME_PROJECTIONS, refusing.projection()]) as ledger,
            hosted(ledger, engine, desk) as host,
        ):
            assert host.runtime.supervisor.children == ["timer-loop", "deliveries", "reply-reads", "reactions"]
            await workflow(host, "pauses", PAUSES)
            await workflow(host, "on-ping", ON_PING)
            await host.runs.definitions.create(SCOPE, "interaction", "shipped", NOTIFICATION, "tester")
            started = await host.runs.run_definition(SCOPE, "interaction", "shipped", {}, notified, "tester")
            assert started["status"] == "started", started

            # Attempt 1 is delivered, its ending refused: the deliveries follower ends with the error.
            await host.until(notified, "delivery_started")
            with trio.fail_after(BOUND_SECONDS):
                await restarting.event.wait()

            # The timer loop fires a timer, and the reactions follower reacts to an event.
            pausing = (await host.runs.run_definition(SCOPE, "workflow", "pauses", {}, None, "tester"))["run_id"]
            await host.fire_next(pausing)  # its pause, due before its deadline
            paused = await host.until(pausing, "run_succeeded")
            await EventPublishing(ledger).publish(SCOPE, {"source": "/tests", "type": PING}, "tester")
            (pinged,) = await host.until_started("on-ping")
            await host.until(pinged.metadata["run_id"], "run_succeeded")

            # The restarted deliveries follower resumes from the due work: the attempt the crash cut short is
            # ended by its `lost` entry, and attempt 2 is delivered.
            await host.fire_next(notified, "interaction:lost:")
            await host.until(notified, "delivery_failed")
            await host.fire_next(notified, "interaction:attempt:")
            history = await host.until(notified, "run_succeeded")
            assert host.runtime.supervisor.children == ["timer-loop", "deliveries", "reply-reads", "reactions"]
    finally:
        logging.getLogger(SUPERVISOR_LOG).removeHandler(restarting)

    assert refusing.refused.is_set()
    assert numbers(history, "delivery_started") == [1, 2]
    assert [(r.data["number"], r.data["because"]) for r in history if r.type == "delivery_failed"] == [(1, "lost")]
    assert numbers(history, "delivery_succeeded") == [2]
    assert [r.type for r in history].count("run_succeeded") == 1
    assert paused[-1].data["output"] == {"done": True}
    restarts = [r.getMessage() for r in caplog.records if "restarting child" in r.getMessage()]
    assert len(restarts) == 1, restarts
    assert restarts[0].startswith("supervisor workflows: restarting child deliveries after error")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "no supervisor gave up"
