"""The PostgreSQL store's due-work SQL, as coroutines over one asyncpg connection.

`ledger_due_work` has one row per `(scope_key, run_id, key)`; its text columns use the "C" collation
so ties order by bytes, as on SQLite. Armed rows are indexed by due time in a partial index
(`ledger_due_work_armed`), which `due` and `next_due` read in order. Changes go in sorted key order
(see `due_work.encode_changes`), so concurrent writers of overlapping keys lock rows in one order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..due_work import DueEntry, DueRow, EncodedChanges, EncodedKey, decode_entry, decode_row
from ..lease import LeaseFence
from .lease_statements import check_fence

TABLES = [
    """CREATE TABLE IF NOT EXISTS ledger_due_work (
        scope_key text COLLATE "C" NOT NULL,
        run_id text COLLATE "C" NOT NULL,
        key text COLLATE "C" NOT NULL,
        due_us bigint,
        payload text,
        state text NOT NULL CHECK (state IN ('armed', 'fired', 'cancelled')),
        PRIMARY KEY (scope_key, run_id, key)
    )""",
    "CREATE INDEX IF NOT EXISTS ledger_due_work_armed "
    "ON ledger_due_work (due_us, scope_key, run_id, key) WHERE state = 'armed'",
]

_COLUMNS = "scope_key, run_id, key, due_us, payload"

DUE_SQL = (
    f"SELECT {_COLUMNS} FROM ledger_due_work WHERE state = 'armed' AND due_us <= $1 "
    "ORDER BY due_us, scope_key, run_id, key LIMIT $2"
)
"""Armed entries due by a time, oldest first, read in the order of `ledger_due_work_armed`."""

NEXT_DUE_SQL = "SELECT due_us FROM ledger_due_work WHERE state = 'armed' ORDER BY due_us LIMIT 1"
"""The earliest armed due time, the first entry of the armed index."""


async def apply_changes(conn: Any, changes: EncodedChanges) -> None:
    """Arm (unless the key has a row) and cancel (tombstone when it has none), in the caller's transaction."""
    if changes.arm:
        await conn.execute(
            "INSERT INTO ledger_due_work (scope_key, run_id, key, due_us, payload, state) "
            "SELECT s, r, k, d, p, 'armed' FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[]) "
            "AS u(s, r, k, d, p) ON CONFLICT DO NOTHING",
            [e.scope_key for e in changes.arm],
            [e.run_id for e in changes.arm],
            [e.key for e in changes.arm],
            [e.due_us for e in changes.arm],
            [e.payload for e in changes.arm],
        )
    if changes.cancel:
        await conn.execute(
            "INSERT INTO ledger_due_work AS d (scope_key, run_id, key, due_us, payload, state) "
            "SELECT s, r, k, NULL, NULL, 'cancelled' FROM unnest($1::text[], $2::text[], $3::text[]) AS u(s, r, k) "
            "ON CONFLICT (scope_key, run_id, key) DO UPDATE SET state = 'cancelled' WHERE d.state = 'armed'",
            [k.scope_key for k in changes.cancel],
            [k.run_id for k in changes.cancel],
            [k.key for k in changes.cancel],
        )


async def change(conn: Any, changes: EncodedChanges, fence: LeaseFence | None) -> None:
    async with conn.transaction():
        if fence is not None:
            await check_fence(conn, fence)
        await apply_changes(conn, changes)


def _count(status: Any) -> int:
    return int(str(status).rsplit(" ", 1)[-1])


async def mark_fired(conn: Any, keys: Sequence[EncodedKey], fence: LeaseFence | None) -> int:
    async with conn.transaction():
        if fence is not None:
            await check_fence(conn, fence)
        if not keys:
            return 0
        status = await conn.execute(
            "UPDATE ledger_due_work AS d SET state = 'fired' "
            "FROM unnest($1::text[], $2::text[], $3::text[]) AS u(s, r, k) "
            "WHERE d.scope_key = u.s AND d.run_id = u.r AND d.key = u.k AND d.state = 'armed'",
            [k.scope_key for k in keys],
            [k.run_id for k in keys],
            [k.key for k in keys],
        )
    return _count(status)


async def forget_run(conn: Any, scope_key: str, run_id: str, fence: LeaseFence | None) -> int:
    async with conn.transaction():
        if fence is not None:
            await check_fence(conn, fence)
        status = await conn.execute(
            "DELETE FROM ledger_due_work WHERE scope_key = $1 AND run_id = $2", scope_key, run_id
        )
    return _count(status)


async def due(conn: Any, now_us: int, limit: int) -> list[DueEntry]:
    rows = await conn.fetch(DUE_SQL, now_us, limit)
    return [decode_entry(r["scope_key"], r["run_id"], r["key"], int(r["due_us"]), r["payload"]) for r in rows]


async def next_due(conn: Any) -> int | None:
    found = await conn.fetchval(NEXT_DUE_SQL)
    return None if found is None else int(found)


async def rows_of_run(conn: Any, scope_key: str, run_id: str) -> list[DueRow]:
    rows = await conn.fetch(
        f"SELECT {_COLUMNS}, state FROM ledger_due_work WHERE scope_key = $1 AND run_id = $2 ORDER BY key",
        scope_key,
        run_id,
    )
    return [decode_row(r["scope_key"], r["run_id"], r["key"], r["due_us"], r["payload"], r["state"]) for r in rows]
