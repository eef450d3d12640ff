"""Reactions spread over servers by partition (issue 33): each playbook's triggers and listens are carried by the
holder of the partition of `org/playbook`, and every input they make is written under its run's partition's fence.

Two servers in one process on one ledger (each store), each the workflow runtime and reactions follower that
`server.compose_services` builds, balance the partitions between them with real leases. The evidence of who
applied what is in the ledger: a start or offer the playbook's holder makes for a run of the other server's
partition is a `workflow-start:` or `workflow-offer:` entry (armed under the playbook partition's fence, so only
its holder could arm it), fired by the other server in the run's own append; one for a run of its own partition
leaves no such entry. Balance and hand-over are polled for within a bound (their leases are judged by the
ledger's clock); every other wait is for an append. Nothing is timed.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import trio

from auto_runtime.functions.registry import function_types
from auto_runtime.functions.workflow.workflow_type import WorkflowType
from auto_runtime.ledger import Ledger, Record, partition_of, playbook_key
from auto_runtime.playbooks.definition_registry import DefinitionRegistry
from auto_runtime.playbooks.event_publishing import EventPublishing
from auto_runtime.playbooks.run_service import RunService
from auto_runtime.runs.facts import run_stream
from auto_runtime.sandbox.checker import Checkers
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.server import RUNTIME_PROJECTIONS
from auto_runtime.workflow_host.forwarded import OFFER_PREFIX, START_KEY
from auto_runtime.workflow_host.reactions import REACTION_PROJECTIONS, Reactions
from auto_runtime.workflow_host.schedules import TRIGGER_KEY_PREFIX
from auto_runtime.workflow_host.workflow_runtime import WorkflowRuntime
from tests.ledger.conftest import Target
from tests.workflow_host.conftest import HEAD, SCOPE
from tests.workflow_host.test_runtime import runtime_of

BOUND_SECONDS = 60
"""Bounds every wait, so a broken runtime fails the test instead of hanging it; no assertion is timed."""
SWEEP = timedelta(milliseconds=50)
MONTH_CLOSED = "com.acme.ledger.month-closed"
ON_EU = (
    "schedule:\n"
    f'  on: {{ one: {{ with: {{ type: {MONTH_CLOSED}, data: \'${{ data["region"] == "eu" }}\' }} }} }}\n'
    "do:\n  - first: { set: { seen: true } }\n"
)
HEAR = f"do:\n  - hear: {{ listen: {{ to: {{ one: {{ with: {{ type: {MONTH_CLOSED} }} }} }} }} }}\n"
MOST_EVENTS = 40
"""The most events published to see triggered runs in both servers' partitions (each lands in either at even odds)."""


@dataclass
class Server:
    runtime: WorkflowRuntime
    runs: RunService

    def held(self) -> frozenset[int]:
        return self.runtime.loop.partitions.held()


@asynccontextmanager
async def serving(ledger: Ledger, engine: SandboxEngine, server_id: str) -> AsyncIterator[Server]:
    """One server's workflow runtime with its reactions follower, as `server.compose_services` wires them; stopped
    cleanly (its partitions released) when the block ends."""
    checkers: Checkers[Any] = Checkers()
    try:
        types = function_types(WorkflowType(engine, checkers))
        definitions = DefinitionRegistry(ledger, types)
        runs = RunService(ledger, definitions, types)
        runtime = runtime_of(ledger, engine, runs, server_id, SWEEP)
        reactions = Reactions(
            runtime.store, definitions, engine, on_applied=runtime.after_applied, fences=runtime.fences
        )
        runtime.add_due_handler(TRIGGER_KEY_PREFIX, reactions.fire)
        runtime.add_follower("reactions", reactions.follow)
        async with definitions.actors.serving(), trio.open_nursery() as nursery:
            await nursery.start(runtime.run)
            try:
                yield Server(runtime, runs)
            finally:
                nursery.cancel_scope.cancel()
    finally:
        checkers.close()


@dataclass
class Life:
    """A server run in a task of its own, so that either of two can stop first (`stop` returns once it stopped)."""

    ledger: Ledger
    engine: SandboxEngine
    server_id: str
    stopping: trio.Event
    stopped: trio.Event

    async def run(self, *, task_status: trio.TaskStatus[Server] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            async with serving(self.ledger, self.engine, self.server_id) as server:
                task_status.started(server)
                await self.stopping.wait()
        finally:
            self.stopped.set()

    async def stop(self) -> None:
        self.stopping.set()
        await self.stopped.wait()


async def until(check: Callable[[], bool]) -> None:
    """Polls `check` once a sweep (leases change only at sweeps, judged by the ledger's clock), within the bound."""
    with trio.fail_after(BOUND_SECONDS):
        while not check():  # noqa: ASYNC110
            await trio.sleep(SWEEP.total_seconds())


async def until_appended(ledger: Ledger, holds: Callable[[], Any]) -> None:
    with trio.fail_after(BOUND_SECONDS):
        while True:
            seen = ledger.appended.generation
            if await holds():
                return
            await ledger.appended.wait_beyond(seen)


async def runs_of(ledger: Ledger, name: str, kind: str = "run_started") -> list[Record]:
    found: list[Record] = []
    cursor = None
    while True:
        page = await ledger.read_playbook(SCOPE, order="asc", types={kind}, limit=100, cursor=cursor)
        found += [r for r in page.records if r.metadata.get("definition", {}).get("name") == name]
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor


async def publish(ledger: Ledger, region: str) -> None:
    await EventPublishing(ledger).publish(
        SCOPE, {"source": "/ledger", "type": MONTH_CLOSED, "data": {"region": region}}, "tester"
    )


async def save(server: Server, name: str, body: str) -> None:
    source = HEAD.replace("name: host", f"name: {name}") + body
    await server.runs.definitions.create(SCOPE, "workflow", name, source, "tester")


async def fired(ledger: Ledger, run_id: str, prefix: str) -> list[str]:
    """The states of the run's due entries under `prefix` (handed-over starts and offers)."""
    return [row.state for row in await ledger.due_work.entries_of_run(SCOPE, run_id) if row.key.startswith(prefix)]


def run_id_in(partitions: frozenset[int], count: int) -> str:
    while partition_of(run_id := str(uuid.uuid4()), count) not in partitions:
        pass
    return run_id


async def balanced(ledger: Ledger, servers: list[Server]) -> None:
    count = ledger.partitioning.count
    await until(
        lambda: (
            all(server.held() for server in servers)
            and sum(len(server.held()) for server in servers) == count
            and frozenset().union(*(server.held() for server in servers)) == frozenset(range(count))
        )
    )


async def test_a_playbooks_triggers_and_listens_run_on_its_partitions_holder_and_hand_inputs_over(
    target: Target, engine: SandboxEngine
) -> None:
    wanted = {p.name: p for p in (*RUNTIME_PROJECTIONS, *REACTION_PROJECTIONS)}
    async with target.open(list(wanted.values())) as ledger, AsyncExitStack() as first, AsyncExitStack() as second:
        servers = [
            await first.enter_async_context(serving(ledger, engine, "server-a")),
            await second.enter_async_context(serving(ledger, engine, "server-b")),
        ]
        await balanced(ledger, servers)
        count = ledger.partitioning.count
        home = partition_of(playbook_key(SCOPE.org, SCOPE.playbook), count)
        holder, other = servers if home in servers[0].held() else servers[::-1]
        await save(holder, "digest", ON_EU)
        await save(holder, "hear", HEAR)

        # A listening run in each server's partitions, each started on the server that holds it.
        listeners = {}
        for server in (holder, other):
            run_id = run_id_in(server.held(), count)
            started = await server.runs.run_definition(SCOPE, "workflow", "hear", {}, run_id, "tester")
            assert started["status"] == "started", started
            listeners[run_id] = server

        # Events until triggered runs landed in both servers' partitions.
        published = 0
        while published < MOST_EVENTS:
            await publish(ledger, "eu")
            published += 1
            await until_appended(ledger, lambda n=published: _succeeded_at_least(ledger, "digest", n))
            placed = {
                partition_of(r.metadata["run_id"], count) in other.held() for r in await runs_of(ledger, "digest")
            }
            if placed == {True, False}:
                break
        assert placed == {True, False}, "triggered runs in both servers' partitions"
        await until_appended(ledger, lambda: _succeeded_at_least(ledger, "hear", 2))
        assert holder.held() | other.held() == frozenset(range(count)) and home in holder.held(), "no partition moved"

        triggered = await runs_of(ledger, "digest")
        assert len(triggered) == published, "one run per event, none twice"
        for record in triggered:
            run_id = record.metadata["run_id"]
            handed = partition_of(run_id, count) in other.held()
            assert await fired(ledger, run_id, START_KEY) == (["fired"] if handed else []), run_id
            history = await ledger.read_stream(run_stream(SCOPE, run_id))
            assert [r.type for r in history].count("run_succeeded") == 1
        for run_id, server in listeners.items():
            if server is holder:
                assert await fired(ledger, run_id, OFFER_PREFIX) == [], "offered here, under the run's own fence"
            else:  # handed over: every offer is fired by the run's holder (those after the first stale)
                with trio.fail_after(BOUND_SECONDS):
                    while set(await fired(ledger, run_id, OFFER_PREFIX)) != {"fired"}:  # noqa: ASYNC110
                        await trio.sleep(SWEEP.total_seconds())
            history = await ledger.read_stream(run_stream(SCOPE, run_id))
            assert [r.type for r in history].count("run_succeeded") == 1


async def test_a_hand_over_of_the_playbooks_partition_starts_nothing_twice_and_loses_nothing(
    target: Target, engine: SandboxEngine
) -> None:
    """The holder of the playbook's partition stops cleanly while its events are being reacted to; the other
    server takes the partition and goes on from the saved position: one run per event, each once."""
    wanted = {p.name: p for p in (*RUNTIME_PROJECTIONS, *REACTION_PROJECTIONS)}
    async with target.open(list(wanted.values())) as ledger, trio.open_nursery() as nursery:
        lives = [Life(ledger, engine, name, trio.Event(), trio.Event()) for name in ("server-a", "server-b")]
        servers: list[Server] = [await nursery.start(life.run) for life in lives]
        await balanced(ledger, servers)
        count = ledger.partitioning.count
        home = partition_of(playbook_key(SCOPE.org, SCOPE.playbook), count)
        index = 0 if home in servers[0].held() else 1
        holder, other = servers[index], servers[1 - index]
        await save(holder, "digest", ON_EU)
        for _ in range(3):
            await publish(ledger, "eu")
        await until_appended(ledger, lambda: _succeeded_at_least(ledger, "digest", 1))
        for _ in range(3):  # published while the holder may still be reacting, then it stops
            await publish(ledger, "eu")
        await lives[index].stop()
        await until(lambda: len(other.held()) == count)
        for _ in range(2):
            await publish(ledger, "eu")
        await until_appended(ledger, lambda: _succeeded_at_least(ledger, "digest", 8))
        triggered = await runs_of(ledger, "digest")
        assert len(triggered) == 8 and len({r.metadata["run_id"] for r in triggered}) == 8
        causes = {r.metadata.get("causation_id") for r in triggered}
        assert len(causes) == 8, "each event started its own run"
        for record in triggered:
            history = await ledger.read_stream(run_stream(SCOPE, record.metadata["run_id"]))
            assert [r.type for r in history].count("run_started") == 1
            assert [r.type for r in history].count("run_succeeded") == 1
        await lives[1 - index].stop()


async def _succeeded_at_least(ledger: Ledger, name: str, count: int) -> bool:
    return len(await runs_of(ledger, name, "run_succeeded")) >= count
