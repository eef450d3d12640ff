"""PostgreSQL: a claim that would take the lease waits for a fenced write in flight, so the new holder
sees every write its predecessor's fence let through."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
import trio

from auto_runtime.ledger import DueEntry, DueWorkChanges, LeaseLost, NewRecord, PlaybookScope, StreamWrite
from auto_runtime.ledger.due_work import encode_changes
from auto_runtime.ledger.lease import LeaseState
from auto_runtime.ledger.postgres import due_work_statements
from tests.stored_rows import stored_rows

from .conftest import Target
from .side_loop import side_loop

pytestmark = pytest.mark.postgres
ACME = PlaybookScope("acme", "finance")
TIMER = DueEntry(ACME, "r1", "t1", datetime(2030, 1, 1, tzinfo=UTC), {"n": 1})


async def test_a_take_over_waits_for_the_old_holders_fenced_write(postgres_url: str) -> None:
    async with side_loop() as thread:
        held: dict[str, Any] = {}

        async def begin_fenced_write(state: LeaseState) -> None:
            conn = await asyncpg.connect(postgres_url)
            transaction = conn.transaction()
            await transaction.start()
            held.update(conn=conn, transaction=transaction)
            await due_work_statements.change(conn, encode_changes(DueWorkChanges(arm=[TIMER])), state.fence())

        async def commit() -> None:
            await held["transaction"].commit()
            await held["conn"].close()

        try:
            async with Target("postgres", None, postgres_url).open() as ledger:
                lease = ledger.lease()
                first = await lease.claim("host-a", timedelta(milliseconds=50))
                with trio.fail_after(30):
                    while True:
                        if (await lease.holder()).holder is None:
                            break
                        await trio.sleep(0.01)
                # host-a's claim lapsed, nobody took it: its fence still holds, and its write begins.
                await thread.run(begin_fenced_write(first))
                answers: list[LeaseState] = []

                async def take_over() -> None:
                    answers.append(await lease.claim("host-b", timedelta(seconds=60)))

                with trio.fail_after(30):
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(take_over)
                        while True:
                            [waiting] = await stored_rows(
                                ledger,
                                "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() "
                                "AND wait_event_type = 'Lock' AND query LIKE '%ledger_claim_lease%'",
                            )
                            if waiting["n"]:
                                break
                            await trio.sleep(0.01)
                        assert answers == []
                        await thread.run(commit())
                [taken] = answers
                assert taken.held_by("host-b") and taken.fencing == 2
                assert [row.state for row in await ledger.due_work.entries_of_run(ACME, "r1")] == ["armed"]
                late = StreamWrite(ACME.stream("run-logs", "r1"), 0, [NewRecord("x", {})])
                with pytest.raises(LeaseLost):
                    await ledger.append([late], fence=first.fence())
        finally:
            if "conn" in held and not held["conn"].is_closed():
                await thread.run(held["conn"].close())
