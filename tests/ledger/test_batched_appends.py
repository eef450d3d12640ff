"""Appends that share one commit: guarded ones (due-work changes, a lease fence) go through the batched path
too, and one that cannot commit (a stale version, a lost lease) fails alone while the others commit.
Real stores; batches are made by holding the store's actor (SQLite) or a stream's row (PostgreSQL), never by
timing."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import trio

from auto_runtime.ledger import (
    DueEntry,
    DueKey,
    DueWorkChanges,
    DuplicateRecordIdError,
    LeaseFence,
    LeaseLost,
    NewRecord,
    PlaybookScope,
    Projection,
    Record,
    StreamWrite,
    TableSpec,
    VersionConflict,
    open_ledger,
)
from auto_runtime.ledger.postgres.store import PostgresLedger
from auto_runtime.ledger.sqlite.store import SqliteLedger
from tests.stored_rows import stored_rows
from tests.supervision.polling import wait_until

from .holding import hold_the_actor

ACME = PlaybookScope("acme", "finance")
T0 = datetime(2026, 12, 1, tzinfo=UTC)
LONG = timedelta(hours=1)


def timer(run: str, key: str) -> DueEntry:
    return DueEntry(ACME, run, key, T0, {"key": key})


async def test_guarded_appends_share_the_batch_and_a_refused_one_fails_alone(tmp_path: Path) -> None:
    async with open_ledger(ledger_file=tmp_path / "ledger.db") as ledger:
        assert isinstance(ledger, SqliteLedger)
        lease = ledger.lease()
        stale = (await lease.claim("host-a", LONG)).fence()
        await lease.release("host-a")
        current = (await lease.claim("host-b", LONG)).fence()
        await ledger.due_work.arm([timer("r3", "waiting")])
        traced: list[str] = []
        await ledger.write(lambda conn: conn.set_trace_callback(traced.append))
        outcomes: dict[str, Any] = {}

        async def append(name: str, run: str, due: DueWorkChanges, fence: LeaseFence | None) -> None:
            write = StreamWrite(ACME.stream("runs", run), 0, [NewRecord("input_applied", {"by": name})])
            try:
                outcomes[name] = await ledger.append([write], due_work=due, fence=fence)
            except (VersionConflict, LeaseLost) as refused:
                outcomes[name] = refused

        gate, entered = threading.Event(), threading.Event()
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(hold_the_actor, ledger, gate, entered)
                await trio.to_thread.run_sync(entered.wait)
                before = ledger.writer.batches
                nursery.start_soon(append, "first", "r1", DueWorkChanges(arm=[timer("r1", "first")]), current)
                nursery.start_soon(append, "second", "r1", DueWorkChanges(arm=[timer("r1", "second")]), current)
                nursery.start_soon(append, "fenced-out", "r2", DueWorkChanges(arm=[timer("r2", "lost")]), stale)
                fire = DueWorkChanges(arm=[timer("r3", "next")], fire=[DueKey(ACME, "r3", "waiting")])
                nursery.start_soon(append, "fired", "r3", fire, current)
                nursery.start_soon(append, "unguarded", "r4", DueWorkChanges(), None)
                await wait_until(lambda: ledger.writer_ref.pending == 6)
                gate.set()
        assert ledger.writer.batches == before + 2  # the held batch, then all five appends in one commit
        await ledger.write(lambda conn: conn.set_trace_callback(None))
        assert not [
            s for s in traced if s.startswith("SELECT coalesce(max(position), 0) FROM ledger_records WHERE stream = ")
        ]
        won = [name for name in ("first", "second") if isinstance(outcomes[name], list)]
        lost = [name for name in ("first", "second") if isinstance(outcomes[name], VersionConflict)]
        assert len(won) == 1 and len(lost) == 1
        assert isinstance(outcomes["fenced-out"], LeaseLost)
        assert [len(outcomes[name]) for name in ("fired", "unguarded")] == [1, 1]
        assert [r.data["by"] for r in await ledger.read_stream(ACME.stream("runs", "r1"))] == won
        assert await ledger.stream_version(ACME.stream("runs", "r2")) == 0
        states = {
            (row.run_id, row.key): row.state
            for run in ("r1", "r2", "r3")
            for row in await ledger.due_work.entries_of_run(ACME, run)
        }
        assert states == {("r1", won[0]): "armed", ("r3", "waiting"): "fired", ("r3", "next"): "armed"}


async def test_a_batch_whose_fast_path_fails_still_commits_every_other_guarded_append(tmp_path: Path) -> None:
    async with open_ledger(ledger_file=tmp_path / "ledger.db") as ledger:
        assert isinstance(ledger, SqliteLedger)
        await ledger.append([StreamWrite(ACME.stream("runs", "taken"), 0, [NewRecord("x", {}, id="fixed-id")])])
        outcomes: dict[str, Any] = {}

        async def append(name: str, record: NewRecord) -> None:
            write = StreamWrite(ACME.stream("runs", name), 0, [record])
            try:
                outcomes[name] = await ledger.append([write], due_work=DueWorkChanges(arm=[timer(name, "t")]))
            except Exception as refused:
                outcomes[name] = refused

        gate, entered = threading.Event(), threading.Event()
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(hold_the_actor, ledger, gate, entered)
                await trio.to_thread.run_sync(entered.wait)
                nursery.start_soon(append, "reused", NewRecord("x", {}, id="fixed-id"))
                for number in range(3):
                    nursery.start_soon(append, f"fresh{number}", NewRecord("x", {}))
                await wait_until(lambda: ledger.writer_ref.pending == 5)
                gate.set()
        assert type(outcomes.pop("reused")).__name__ == "DuplicateRecordIdError"
        assert all(isinstance(records, list) for records in outcomes.values())
        assert await ledger.due_work.entries_of_run(ACME, "reused") == []
        for number in range(3):
            assert [row.key for row in await ledger.due_work.entries_of_run(ACME, f"fresh{number}")] == ["t"]


async def hold_stream_row(ledger: PostgresLedger, stream: str, locked: threading.Event, gate: threading.Event) -> None:
    """Lock a stream's row on a connection of the ledger's own pool until `gate` opens."""

    async def hold(conn: Any) -> None:
        async with conn.transaction():
            await conn.execute("SELECT 1 FROM ledger_streams WHERE stream = $1 FOR UPDATE", stream)
            locked.set()
            await asyncio.get_running_loop().run_in_executor(None, gate.wait, 30)

    await ledger.with_connection(hold)


@pytest.mark.postgres
async def test_postgres_appends_queued_behind_a_batch_share_the_next_and_each_gets_its_own_result(
    postgres_url: str,
) -> None:
    def keys(record: Record) -> list[tuple[Any, ...]]:
        return [(record.type,)]

    def after(row: dict[str, Any] | None, record: Record) -> dict[str, Any] | None:
        if record.data.get("explode"):
            raise RuntimeError("projection bug")
        return {"total": (row["total"] if row else 0) + 1}

    counts = Projection(
        "test_counts", 1, TableSpec("test_counts", {"type": "text", "total": "integer"}, ("type",)), keys, after
    )
    async with open_ledger(database_url=postgres_url, projections=[counts]) as ledger:
        assert isinstance(ledger, PostgresLedger)
        held = ACME.stream("runs", "held")
        await ledger.append([StreamWrite(held, 0, [NewRecord("x", {}, id="fixed-id")])])
        batcher = ledger.loop.batcher
        outcomes: dict[str, Any] = {}

        async def append(name: str, stream: str, version: int, record: NewRecord) -> None:
            try:
                outcomes[name] = await ledger.append([StreamWrite(ACME.stream("runs", stream), version, [record])])
            except Exception as refused:
                outcomes[name] = refused

        locked, gate = threading.Event(), threading.Event()
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(hold_stream_row, ledger, held, locked, gate)
                await trio.to_thread.run_sync(locked.wait)
                nursery.start_soon(append, "held", "held", 1, NewRecord("x", {}))
                await wait_until(lambda: batcher.sent == 1)  # in flight, waiting for the row
                before = batcher.batches
                nursery.start_soon(append, "first", "shared", 0, NewRecord("x", {"by": "first"}))
                nursery.start_soon(append, "second", "shared", 0, NewRecord("x", {"by": "second"}))
                nursery.start_soon(append, "reused", "reused", 0, NewRecord("x", {}, id="fixed-id"))
                nursery.start_soon(append, "fresh", "fresh", 0, NewRecord("x", {}))
                await wait_until(lambda: batcher.queued == 4)
                gate.set()
        assert batcher.batches == before + 2  # the held append's batch, then the four in one statement
        won = [name for name in ("first", "second") if isinstance(outcomes[name], list)]
        assert len(won) == 1
        assert isinstance(outcomes[{"first": "second", "second": "first"}[won[0]]], VersionConflict)
        assert isinstance(outcomes["reused"], DuplicateRecordIdError)
        assert [len(outcomes[name]) for name in ("held", "fresh")] == [1, 1]
        assert [r.data["by"] for r in await ledger.read_stream(ACME.stream("runs", "shared"))] == won
        counted = await stored_rows(ledger, "SELECT total FROM test_counts")
        assert counted == [{"total": 4}]  # fixed-id, held, won, fresh

        locked, gate = threading.Event(), threading.Event()
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(hold_stream_row, ledger, held, locked, gate)
                await trio.to_thread.run_sync(locked.wait)
                nursery.start_soon(append, "held-again", "held", 2, NewRecord("x", {}))
                await wait_until(lambda: batcher.sent == 1)
                nursery.start_soon(append, "exploding", "boom", 0, NewRecord("x", {"explode": 1}))
                nursery.start_soon(append, "calm", "calm", 0, NewRecord("x", {}))
                await wait_until(lambda: batcher.queued == 2)
                gate.set()
        assert isinstance(outcomes["exploding"], RuntimeError)
        assert [len(outcomes[name]) for name in ("held-again", "calm")] == [1, 1]
        assert await ledger.stream_version(ACME.stream("runs", "boom")) == 0
        assert await stored_rows(ledger, "SELECT total FROM test_counts") == [{"total": 6}]


@pytest.mark.postgres
async def test_postgres_guarded_appends_share_a_batch_and_a_refused_one_fails_alone(postgres_url: str) -> None:
    async with open_ledger(database_url=postgres_url) as ledger:
        assert isinstance(ledger, PostgresLedger)
        lease = ledger.lease()
        stale = (await lease.claim("host-a", LONG)).fence()
        await lease.release("host-a")
        current = (await lease.claim("host-b", LONG)).fence()
        await ledger.due_work.arm([timer("r3", "waiting")])
        held = ACME.stream("runs", "held")
        await ledger.append([StreamWrite(held, 0, [NewRecord("x", {})])])
        batcher = ledger.loop.batcher
        outcomes: dict[str, Any] = {}

        async def append(name: str, run: str, due: DueWorkChanges, fence: LeaseFence | None, version: int = 0) -> None:
            write = StreamWrite(ACME.stream("runs", run), version, [NewRecord("input_applied", {"by": name})])
            try:
                outcomes[name] = await ledger.append([write], due_work=due, fence=fence)
            except (VersionConflict, LeaseLost) as refused:
                outcomes[name] = refused

        locked, gate = threading.Event(), threading.Event()
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(hold_stream_row, ledger, held, locked, gate)
                await trio.to_thread.run_sync(locked.wait)
                nursery.start_soon(append, "held", "held", DueWorkChanges(arm=[timer("held", "t")]), current, 1)
                await wait_until(lambda: batcher.sent == 1)
                before = batcher.batches
                nursery.start_soon(append, "first", "r1", DueWorkChanges(arm=[timer("r1", "first")]), current)
                nursery.start_soon(append, "second", "r1", DueWorkChanges(arm=[timer("r1", "second")]), current)
                nursery.start_soon(append, "fenced-out", "r2", DueWorkChanges(arm=[timer("r2", "lost")]), stale)
                fire = DueWorkChanges(arm=[timer("r3", "next")], fire=[DueKey(ACME, "r3", "waiting")])
                nursery.start_soon(append, "fired", "r3", fire, current)
                await wait_until(lambda: batcher.queued == 4)
                gate.set()
        assert batcher.batches == before + 2
        won = [name for name in ("first", "second") if isinstance(outcomes[name], list)]
        assert len(won) == 1
        assert isinstance(outcomes[{"first": "second", "second": "first"}[won[0]]], VersionConflict)
        assert isinstance(outcomes["fenced-out"], LeaseLost)
        assert [len(outcomes[name]) for name in ("held", "fired")] == [1, 1]
        assert [r.data["by"] for r in await ledger.read_stream(ACME.stream("runs", "r1"))] == won
        assert await ledger.stream_version(ACME.stream("runs", "r2")) == 0
        states = {
            (row.run_id, row.key): row.state
            for run in ("held", "r1", "r2", "r3")
            for row in await ledger.due_work.entries_of_run(ACME, run)
        }
        assert states == {
            ("held", "t"): "armed",
            ("r1", won[0]): "armed",
            ("r3", "waiting"): "fired",
            ("r3", "next"): "armed",
        }


@pytest.mark.postgres
async def test_postgres_appends_that_do_not_overlap_go_as_one_and_a_refusal_among_them_stays_alone(
    postgres_url: str,
) -> None:
    async with open_ledger(database_url=postgres_url) as ledger:
        assert isinstance(ledger, PostgresLedger)
        current = (await ledger.lease().claim("host-a", LONG)).fence()
        await ledger.due_work.arm([timer("r0", "waiting")])
        held = ACME.stream("runs", "held")
        await ledger.append([StreamWrite(held, 0, [NewRecord("x", {})])])
        batcher = ledger.loop.batcher
        outcomes: dict[str, Any] = {}

        async def append(name: str, version: int, due: DueWorkChanges, fence: LeaseFence | None) -> None:
            write = StreamWrite(ACME.stream("runs", name), version, [NewRecord("input_applied", {})])
            try:
                outcomes[name] = await ledger.append([write], due_work=due, fence=fence)
            except VersionConflict as refused:
                outcomes[name] = refused

        for stale in (False, True):
            locked, gate = threading.Event(), threading.Event()
            with trio.fail_after(30):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(hold_stream_row, ledger, held, locked, gate)
                    await trio.to_thread.run_sync(locked.wait)
                    version = await ledger.stream_version(held)
                    nursery.start_soon(append, "held", version, DueWorkChanges(), None)
                    await wait_until(lambda: batcher.sent == 1)
                    before = batcher.batches
                    fire = DueWorkChanges(arm=[timer("r0", "next")], fire=[DueKey(ACME, "r0", "waiting")])
                    nursery.start_soon(append, "r0", 0, fire if not stale else DueWorkChanges(), current)
                    later = 1 if stale else 0  # the second time, only r0 states a stale version
                    nursery.start_soon(append, "r1", later, DueWorkChanges(arm=[timer("r1", "t")]), current)
                    nursery.start_soon(append, "r2", later, DueWorkChanges(cancel=[DueKey(ACME, "r2", "t")]), None)
                    await wait_until(lambda: batcher.queued == 3)
                    gate.set()
            assert batcher.batches == before + 2
            if not stale:
                assert all(len(outcomes[name]) == 1 for name in ("held", "r0", "r1", "r2"))
                states = {
                    (row.run_id, row.key): row.state
                    for run in ("r0", "r1", "r2")
                    for row in await ledger.due_work.entries_of_run(ACME, run)
                }
                assert states == {
                    ("r0", "waiting"): "fired",
                    ("r0", "next"): "armed",
                    ("r1", "t"): "armed",
                    ("r2", "t"): "cancelled",
                }
            else:
                assert isinstance(outcomes["r0"], VersionConflict)
                assert all(len(outcomes[name]) == 1 for name in ("held", "r1", "r2"))
                assert [await ledger.stream_version(ACME.stream("runs", n)) for n in ("r0", "r1", "r2")] == [1, 2, 2]
