"""The ledger in the supervision tree (issue 15, point 1): its store's actor (the SQLite writer, the PostgreSQL
loop) is a child of the `ledger` supervisor. A life that crashes (a projection broken beyond an error, raising a
`BaseException`) is restarted with a new connection and the same mailbox, so the appends queued behind the
broken batch land; a crash that repeats exceeds the restart intensity and escalates as OTP's would.
Real SQLite and PostgreSQL; nothing timed (timeouts only bound a failure)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
import trio

from auto_runtime.actors.errors import ActorCrashedError
from auto_runtime.ledger import Ledger, NewRecord, PlaybookScope, Projection, StreamWrite
from auto_runtime.ledger.opening import LedgerStore, ledger_store, postgres_ledger
from auto_runtime.ledger.projections import ProjectionKey, Row, TableSpec
from auto_runtime.ledger.records import Record
from auto_runtime.ledger.serving import ledger_supervisor
from auto_runtime.ledger.sqlite.store import SqliteLedger
from auto_runtime.supervision import Supervisor, SupervisorFailedError, describe_tree
from tests.ledger.conftest import Target, postgres_database, postgres_url, target
from tests.stored_rows import stored_rows
from tests.supervision.polling import wait_until

__all__ = ["postgres_database", "postgres_url", "target"]  # the ledger suite's fixtures: both stores

ACME = PlaybookScope("acme", "finance")


class Breakage(BaseException):
    """A projection broken beyond an error (not an `Exception`): no transaction can go on, the life ends."""


@dataclass
class Breaker:
    """A projection that breaks on records of type `break`, once `entered` is set and `gate` opens."""

    breaks: int = 0
    entered: threading.Event = field(default_factory=threading.Event)
    gate: threading.Event = field(default_factory=threading.Event)

    def keys(self, record: Record) -> Sequence[ProjectionKey]:
        if record.type == "break":
            self.breaks += 1
            self.entered.set()
            self.gate.wait(30)
            raise Breakage(f"broken projection, time {self.breaks}")
        return [(record.stream,)]

    def row_after(self, row: Row | None, record: Record) -> Row | None:
        return {"records": (row or {}).get("records", 0) + 1}

    def projection(self) -> Projection:
        table = TableSpec("test_seen", {"stream": "text", "records": "integer"}, ("stream",))
        return Projection("test_seen", 1, table, self.keys, self.row_after)


def store_of(target: Target, breaker: Breaker) -> LedgerStore:
    return ledger_store(target.ledger_file, target.database_url, [breaker.projection()])


def actor_of(store: LedgerStore) -> Any:
    return store.writer_ref if isinstance(store, SqliteLedger) else store.loop_ref


def one(stream: str, record_type: str = "seen") -> list[StreamWrite]:
    return [StreamWrite(ACME.stream("runs", stream), 0, [NewRecord(record_type, {})])]


async def append_and_expect_breakage(ledger: Ledger, stream: str) -> None:
    with pytest.raises(Breakage):
        await ledger.append(one(stream, "break"))


async def test_the_tree_shows_the_ledger_supervising_its_actor(target: Target) -> None:
    store = store_of(target, Breaker())
    await store.start()
    try:
        tree = ledger_supervisor(store).tree()
    finally:
        await store.stop()
    child = "writer" if target.kind == "sqlite" else "loop"
    assert tree == {"name": "ledger", "strategy": "one_for_one", "children": [{"name": child, "restart": "permanent"}]}
    assert describe_tree(tree) == f"ledger (one_for_one) [{child} permanent]"


async def test_a_crashed_life_is_restarted_and_the_appends_queued_behind_it_land(target: Target) -> None:
    """On SQLite every append queued behind the broken batch lands. On PostgreSQL the loop runs units side by
    side, so those that had begun while the broken one unwound fail with `ActorCrashedError` (their transaction
    rolled back); the others land. Either way each lands once or fails, and nothing hangs."""
    breaker = Breaker()
    crashed: list[str] = []

    async def append_queued(stream: str) -> None:
        try:
            await store.append(one(stream))
        except ActorCrashedError:
            crashed.append(stream)

    store = store_of(target, breaker)
    await store.start()
    supervisor = ledger_supervisor(store)
    ref = actor_of(store)
    try:
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                await nursery.start(supervisor.run)
                await store.append(one("before"))
                nursery.start_soon(append_and_expect_breakage, store, "broken")
                await trio.to_thread.run_sync(breaker.entered.wait)  # the actor is inside the broken batch
                for number in range(10):
                    nursery.start_soon(append_queued, f"queued{number}")
                await wait_until(lambda: ref.pending == 11)
                breaker.gate.set()
                await wait_until(lambda: ref.pending == 0)
                await store.append(one("after"))
                assert supervisor.children == [ref.name]
                await supervisor.stop()
    finally:
        await store.stop()
    assert breaker.breaks == 1
    async with target.open([breaker.projection()]) as ledger:
        versions = {name: await ledger.stream_version(ACME.stream("runs", name)) for name in ("before", "after")}
        versions |= {f"queued{n}": await ledger.stream_version(ACME.stream("runs", f"queued{n}")) for n in range(10)}
        assert versions == {name: 0 if name in crashed else 1 for name in versions}
        assert await ledger.stream_version(ACME.stream("runs", "broken")) == 0  # rolled back with its batch
        rows = await stored_rows(ledger, "SELECT count(*) AS n FROM test_seen", [])
        assert rows == [{"n": 12 - len(crashed)}]
    if target.kind == "sqlite":
        assert crashed == []


async def test_a_crash_that_repeats_exceeds_the_intensity_and_escalates_to_the_root(target: Target) -> None:
    breaker = Breaker()
    breaker.gate.set()
    store = store_of(target, breaker)
    await store.start()
    ledger = ledger_supervisor(store)
    root = Supervisor("root", [ledger.child_spec()])
    failures: list[SupervisorFailedError] = []

    async def run_root(task_status: trio.TaskStatus[None]) -> None:
        try:
            await root.run(task_status=task_status)
        except SupervisorFailedError as failure:
            failures.append(failure)

    try:
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                await nursery.start(run_root)
                for attempt in range(4):  # OTP's default: one restart in 5 s, at each level
                    await append_and_expect_breakage(store, f"broken{attempt}")
                await wait_until(lambda: bool(failures))
    finally:
        await store.stop()
    (failed,) = failures
    assert failed.supervisor == "root" and failed.child == "ledger"
    assert isinstance(failed.error, SupervisorFailedError)
    assert failed.error.supervisor == "ledger" and failed.error.child == actor_of(store).name
    assert breaker.breaks == 4


async def test_a_closed_store_commits_what_is_still_queued_when_no_supervisor_serves_it(target: Target) -> None:
    store = store_of(target, Breaker())
    await store.start()
    supervisor = ledger_supervisor(store)
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        await store.append(one("served"))
        await supervisor.stop()
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(store.append, one("late"))
            await wait_until(lambda: actor_of(store).pending == 1)
            await store.stop()
    async with target.open() as ledger:
        assert await ledger.stream_version(ACME.stream("runs", "late")) == 1


def test_the_postgres_store_is_named_for_its_loop() -> None:
    assert postgres_ledger("postgresql://nobody@127.0.0.1:1/none").loop_ref.name == "loop"
