"""The PostgreSQL store's due-work SQL, as coroutines over one asyncpg connection.

`ledger_due_work` has one row per `(scope_key, run_id, key)`; its text columns use the "C" collation
so ties order by bytes, as on SQLite. Armed rows are indexed by due time in a partial index
(`ledger_due_work_armed`), which `due` and `next_due` read in order. Changes go in sorted key order
(see `due_work.encode_changes`), so concurrent writers of overlapping keys lock rows in one order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg

from ..due_work import DueEntry, DueRow, EncodedChanges, EncodedKey, decode_entry, decode_row
from ..lease import LeaseFence
from .lease_statements import check_fence, fence_arguments, lease_lost

_COLUMNS = "scope_key, run_id, key, due_us, payload"

DUE_SQL = (
    f"SELECT {_COLUMNS} FROM ledger_due_work WHERE state = 'armed' AND due_us <= $1 "
    "AND ($3::integer[] IS NULL OR partition_no = ANY($3::integer[])) "
    "ORDER BY due_us, scope_key, run_id, key LIMIT $2"
)
"""Armed entries due by a time (of some partitions, or of all when `$3` is NULL), oldest first, read in the
order of `ledger_due_work_armed`."""

NEXT_DUE_SQL = (
    "SELECT due_us FROM ledger_due_work WHERE state = 'armed' "
    "AND ($1::integer[] IS NULL OR partition_no = ANY($1::integer[])) ORDER BY due_us LIMIT 1"
)
"""The earliest armed due time (of some partitions, or of all), from the start of the armed index."""

PARTITION_FUNCTION = """CREATE OR REPLACE FUNCTION ledger_partition_of(p_scope text, p_run text)
RETURNS integer LANGUAGE plpgsql STABLE AS $fn$
BEGIN
RETURN (('x' || substr(md5(convert_to(
    CASE
        WHEN p_run ~ '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' THEN lower(p_run)
        WHEN p_scope LIKE 'playbook/%' THEN substr(p_scope, 10)
        ELSE p_scope
    END, 'UTF8')), 1, 8))::bit(32)::bigint % (SELECT g.partitions FROM ledger_partitioning AS g))::integer;
END
$fn$"""
"""The partition of a due entry, as `partitions.partition_of_due` computes it (MD5's first 32 bits of its run
id, or of its playbook's `org/playbook`, modulo the ledger's count); NULL before the count is kept. PL/pgSQL,
so replacing it on a ledger migrated only part of the way (a test's) does not need the table yet."""

FIX_PARTITIONS_SQL = (
    "WITH made AS (INSERT INTO ledger_partitioning (only_row, partitions) VALUES (1, $1) "
    "ON CONFLICT (only_row) DO NOTHING RETURNING partitions) "
    "SELECT (SELECT partitions FROM made) AS made, (SELECT partitions FROM ledger_partitioning) AS kept"
)
"""Keep the asked count unless the ledger keeps one; answers whether this call made it, and the count kept."""

FILL_PARTITIONS_SQL = (
    "UPDATE ledger_due_work SET partition_no = ledger_partition_of(scope_key, run_id) WHERE partition_no IS NULL"
)
"""Give the entries armed before the count was kept their partitions."""


CHANGE_FUNCTION = """CREATE OR REPLACE FUNCTION ledger_change_due_work(
    p_fence_name text, p_fence_holder text, p_fence_number bigint,
    p_arm_scopes text[], p_arm_runs text[], p_arm_keys text[], p_arm_due bigint[], p_arm_payloads text[],
    p_cancel_scopes text[], p_cancel_runs text[], p_cancel_keys text[]
) RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM ledger_check_fence(p_fence_name, p_fence_holder, p_fence_number);
    INSERT INTO ledger_due_work (scope_key, run_id, key, due_us, payload, state, partition_no)
    SELECT u.s, u.r, u.k, u.d, u.p, 'armed', ledger_partition_of(u.s, u.r)
    FROM unnest(p_arm_scopes, p_arm_runs, p_arm_keys, p_arm_due, p_arm_payloads) AS u(s, r, k, d, p)
    ON CONFLICT DO NOTHING;
    INSERT INTO ledger_due_work AS d (scope_key, run_id, key, due_us, payload, state, partition_no)
    SELECT u.s, u.r, u.k, NULL, NULL, 'cancelled', ledger_partition_of(u.s, u.r)
    FROM unnest(p_cancel_scopes, p_cancel_runs, p_cancel_keys) AS u(s, r, k)
    ON CONFLICT (scope_key, run_id, key) DO UPDATE SET state = 'cancelled' WHERE d.state = 'armed';
END
$fn$"""
"""Check the fence (`ledger_check_fence`; none when its name is NULL), then arm (unless the key has a
row) and cancel (a tombstone when it has none), all in the caller's transaction."""


def change_arguments(changes: EncodedChanges, fence: LeaseFence | None) -> list[Any]:
    """The eleven arguments of `ledger_change_due_work`."""
    return [
        *fence_arguments(fence),
        [e.scope_key for e in changes.arm],
        [e.run_id for e in changes.arm],
        [e.key for e in changes.arm],
        [e.due_us for e in changes.arm],
        [e.payload for e in changes.arm],
        [k.scope_key for k in changes.cancel],
        [k.run_id for k in changes.cancel],
        [k.key for k in changes.cancel],
    ]


async def change(conn: Any, changes: EncodedChanges, fence: LeaseFence | None) -> None:
    """Check the fence and apply the changes: one statement, so one transaction and one round trip (two
    statements in one transaction when the changes mark entries fired, see `mark_in_transaction`)."""
    try:
        if not changes.fire:
            await conn.execute(
                "SELECT ledger_change_due_work($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
                *change_arguments(changes, fence),
            )
            return
        async with conn.transaction():
            await conn.execute(
                "SELECT ledger_change_due_work($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
                *change_arguments(changes, fence),
            )
            await mark_in_transaction(conn, changes.fire)
    except asyncpg.PostgresError as error:
        lost = lease_lost(error, fence)
        if lost is None:
            raise
        raise lost from error


async def mark_in_transaction(conn: Any, keys: Sequence[EncodedKey]) -> None:
    """Mark armed entries fired inside the caller's transaction, whose statement before checked the fence
    (and holds the lease row's share lock until the commit): the marks of an append's `DueWorkChanges.fire`,
    after its arms and cancels."""
    await conn.execute(
        "SELECT ledger_mark_fired(NULL, NULL, NULL, $1, $2, $3)",
        [k.scope_key for k in keys],
        [k.run_id for k in keys],
        [k.key for k in keys],
    )


def _count(status: Any) -> int:
    return int(str(status).rsplit(" ", 1)[-1])


MARK_FIRED_FUNCTION = """CREATE OR REPLACE FUNCTION ledger_mark_fired(
    p_fence_name text, p_fence_holder text, p_fence_number bigint,
    p_scopes text[], p_runs text[], p_keys text[]
) RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
    changed bigint;
BEGIN
    PERFORM ledger_check_fence(p_fence_name, p_fence_holder, p_fence_number);
    UPDATE ledger_due_work AS d SET state = 'fired'
    FROM unnest(p_scopes, p_runs, p_keys) AS u(s, r, k)
    WHERE d.scope_key = u.s AND d.run_id = u.r AND d.key = u.k AND d.state = 'armed';
    GET DIAGNOSTICS changed = ROW_COUNT;
    RETURN changed;
END
$fn$"""
"""Check the fence, then move the armed entries among the keys to `fired`; returns how many moved."""


async def mark_fired(conn: Any, keys: Sequence[EncodedKey], fence: LeaseFence | None) -> int:
    """`ledger_mark_fired`: one statement, so one transaction and one round trip."""
    try:
        changed = await conn.fetchval(
            "SELECT ledger_mark_fired($1, $2, $3, $4, $5, $6)",
            *fence_arguments(fence),
            [k.scope_key for k in keys],
            [k.run_id for k in keys],
            [k.key for k in keys],
        )
    except asyncpg.PostgresError as error:
        lost = lease_lost(error, fence)
        if lost is None:
            raise
        raise lost from error
    return int(changed)


async def forget_run(conn: Any, scope_key: str, run_id: str, fence: LeaseFence | None) -> int:
    async with conn.transaction():
        if fence is not None:
            await check_fence(conn, fence)
        status = await conn.execute(
            "DELETE FROM ledger_due_work WHERE scope_key = $1 AND run_id = $2", scope_key, run_id
        )
    return _count(status)


async def due(conn: Any, now_us: int, limit: int, partitions: list[int] | None) -> list[DueEntry]:
    rows = await conn.fetch(DUE_SQL, now_us, limit, partitions)
    return [decode_entry(r["scope_key"], r["run_id"], r["key"], int(r["due_us"]), r["payload"]) for r in rows]


async def next_due(conn: Any, partitions: list[int] | None) -> int | None:
    found = await conn.fetchval(NEXT_DUE_SQL, partitions)
    return None if found is None else int(found)


async def fix_partitions(conn: Any, asked: int) -> int:
    """Keep `asked` as the ledger's partition count unless it keeps one (then give the entries armed before
    their partitions); answers the count kept. Runs in the opening's locked transaction."""
    row = await conn.fetchrow(FIX_PARTITIONS_SQL, asked)
    if row["made"] is not None:
        await conn.execute(FILL_PARTITIONS_SQL)
        return int(row["made"])
    return int(row["kept"])


async def rows_of_run(conn: Any, scope_key: str, run_id: str) -> list[DueRow]:
    rows = await conn.fetch(
        f"SELECT {_COLUMNS}, state FROM ledger_due_work WHERE scope_key = $1 AND run_id = $2 ORDER BY key",
        scope_key,
        run_id,
    )
    return [decode_row(r["scope_key"], r["run_id"], r["key"], r["due_us"], r["payload"], r["state"]) for r in rows]
