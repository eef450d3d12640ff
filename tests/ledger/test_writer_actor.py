"""The store's actor: the SQLite writer group-commits what is queued behind a busy batch, and a full mailbox
(on either store) refuses work with `LedgerUnavailable` instead of holding it. Real stores; nothing timed."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import trio

from auto_runtime.actors.thread_actor import BatchFill
from auto_runtime.ledger import Ledger, LedgerUnavailable, NewRecord, PlaybookScope, StreamWrite, open_ledger
from auto_runtime.ledger.errors import OVERLOADED_DETAIL
from auto_runtime.ledger.postgres.store import PostgresLedger
from auto_runtime.ledger.sqlite.store import SqliteLedger
from auto_runtime.ledger.sqlite.writer import FILL_FROM, FILL_SECONDS
from tests.supervision.polling import wait_until

from .holding import hold_the_actor

ACME = PlaybookScope("acme", "finance")


def pending_of(ledger: Ledger) -> int:
    if isinstance(ledger, SqliteLedger):
        return ledger.writer_ref.pending
    assert isinstance(ledger, PostgresLedger)
    return ledger.loop_ref.pending


async def test_appends_queued_behind_a_busy_batch_commit_together(tmp_path: Path) -> None:
    async with open_ledger(ledger_file=tmp_path / "ledger.db") as ledger:
        assert isinstance(ledger, SqliteLedger)
        gate, entered = threading.Event(), threading.Event()
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(hold_the_actor, ledger, gate, entered)
                await trio.to_thread.run_sync(entered.wait)
                before = ledger.writer.batches
                for number in range(40):
                    stream = ACME.stream("runs", f"r{number}")
                    nursery.start_soon(ledger.append, [StreamWrite(stream, 0, [NewRecord("started", {})])])
                await wait_until(lambda: ledger.writer_ref.pending == 41)
                gate.set()
        assert ledger.writer.batches == before + 2  # the held batch, then all 40 appends in one commit
        for number in range(40):
            assert await ledger.stream_version(ACME.stream("runs", f"r{number}")) == 1


async def test_a_full_mailbox_refuses_work_with_ledger_unavailable(ledger: Ledger) -> None:
    ref = ledger.writer_ref if isinstance(ledger, SqliteLedger) else ledger.loop_ref  # type: ignore[attr-defined]
    ref.capacity = 3
    gate, entered = threading.Event(), threading.Event()
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(hold_the_actor, ledger, gate, entered)
            await trio.to_thread.run_sync(entered.wait)
            for number in range(2):
                stream = ACME.stream("runs", f"q{number}")
                nursery.start_soon(ledger.append, [StreamWrite(stream, 0, [NewRecord("started", {})])])
            await wait_until(lambda: pending_of(ledger) == 3)
            with pytest.raises(LedgerUnavailable) as refused:
                await ledger.append([StreamWrite(ACME.stream("runs", "over"), 0, [NewRecord("started", {})])])
            gate.set()
    assert refused.value.detail == OVERLOADED_DETAIL
    assert "mailbox holds 3" in str(refused.value)
    assert await ledger.stream_version(ACME.stream("runs", "over")) == 0
    assert [await ledger.stream_version(ACME.stream("runs", f"q{n}")) for n in range(2)] == [1, 1]


async def test_the_writer_waits_to_fill_a_batch_only_after_a_large_one(tmp_path: Path) -> None:
    async with open_ledger(ledger_file=tmp_path / "ledger.db") as ledger:
        assert isinstance(ledger, SqliteLedger)
        await ledger.append([StreamWrite(ACME.stream("runs", "lone"), 0, [NewRecord("started", {})])])
        assert ledger.writer.batch_fill(1) is None  # one appender at a time: never a wait
        gate, entered = threading.Event(), threading.Event()
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(hold_the_actor, ledger, gate, entered)
                await trio.to_thread.run_sync(entered.wait)
                for number in range(FILL_FROM + 2):
                    stream = ACME.stream("runs", f"r{number}")
                    nursery.start_soon(ledger.append, [StreamWrite(stream, 0, [NewRecord("started", {})])])
                await wait_until(lambda: ledger.writer_ref.pending == FILL_FROM + 3)
                gate.set()
        assert ledger.writer.batch_fill(1) == BatchFill(FILL_FROM + 2, FILL_SECONDS)
        assert ledger.writer.batch_fill(FILL_FROM + 2) is None
        await ledger.append([StreamWrite(ACME.stream("runs", "lone"), 1, [NewRecord("again", {})])])
        assert ledger.writer.batch_fill(1) is None  # the load fell back to one append at a time
