"""PostgreSQL: a record that commits late (a lower global position committing after a higher one)
is never skipped by oldest-first readers."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from auto_runtime.ledger import NewRecord, PlaybookScope, StreamWrite

from .conftest import Target
from .side_loop import side_loop

pytestmark = pytest.mark.postgres
ACME = PlaybookScope("acme", "finance")


async def test_oldest_first_readers_wait_for_a_record_committed_late(postgres_url: str) -> None:
    late_stream = ACME.stream("runs", "late")
    async with side_loop() as thread:
        holder: dict[str, Any] = {}

        async def begin_late_insert() -> int:
            conn = await asyncpg.connect(postgres_url)
            transaction = conn.transaction()
            await transaction.start()
            holder.update(conn=conn, transaction=transaction)
            position = await conn.fetchval(
                "INSERT INTO ledger_records (id, stream, position, scope_key, type, data, metadata, "
                "correlation_id, size, recorded_at) VALUES ('late-1', $1, 1, $2, 'late', '{}', '{}', NULL, 4, 0) "
                "RETURNING global_position",
                late_stream,
                ACME.key,
            )
            return int(position)

        async def commit_late_insert() -> None:
            await holder["transaction"].commit()
            await holder["conn"].close()

        try:
            async with Target("postgres", None, postgres_url).open() as ledger:
                late_position = await thread.run(begin_late_insert())
                [early] = await ledger.append([StreamWrite(ACME.stream("runs", "early"), 0, [NewRecord("early", {})])])
                assert early.global_position > late_position

                assert await ledger.read_forward(None) == ([], None)
                assert (await ledger.read_playbook(ACME, order="asc")).records == []
                assert [r.id for r in (await ledger.read_playbook(ACME, order="desc")).records] == [early.id]

                await thread.run(commit_late_insert())
                records, _ = await ledger.read_forward(None)
                assert [r.id for r in records] == ["late-1", early.id]
                page = await ledger.read_playbook(ACME, order="asc")
                assert [r.id for r in page.records] == ["late-1", early.id]
        finally:
            if "conn" in holder and not holder["conn"].is_closed():
                await thread.run(holder["conn"].close())


async def test_a_follower_positioned_before_a_late_commit_still_reads_it(postgres_url: str) -> None:
    async with side_loop() as thread:
        holder: dict[str, Any] = {}

        async def hold_append() -> None:
            conn = await asyncpg.connect(postgres_url)
            transaction = conn.transaction()
            await transaction.start()
            holder.update(conn=conn, transaction=transaction)
            await conn.execute(
                "INSERT INTO ledger_records (id, stream, position, scope_key, type, data, metadata, "
                "correlation_id, size, recorded_at) VALUES ('late-2', $1, 1, $2, 'late', '{}', '{}', NULL, 4, 0)",
                ACME.stream("runs", "late"),
                ACME.key,
            )

        async def finish() -> None:
            await holder["transaction"].commit()
            await holder["conn"].close()

        try:
            async with Target("postgres", None, postgres_url).open() as ledger:
                [first] = await ledger.append([StreamWrite(ACME.stream("a"), 0, [NewRecord("x", {})])])
                records, position = await ledger.read_forward(None)
                assert records == [first]
                await thread.run(hold_append())
                [second] = await ledger.append([StreamWrite(ACME.stream("b"), 0, [NewRecord("x", {})])])
                assert await ledger.read_forward(position) == ([], position)
                await thread.run(finish())
                records, _ = await ledger.read_forward(position)
                assert [r.id for r in records] == ["late-2", second.id]
        finally:
            if "conn" in holder and not holder["conn"].is_closed():
                await thread.run(holder["conn"].close())
