"""The PostgreSQL store's lease SQL. Every judgement of time uses the database's clock.

A claim is one call of `ledger_claim_lease` (one statement, its own transaction): it makes sure the
row exists, locks it `FOR UPDATE`, and only then reads `clock_timestamp()` and decides. Concurrent
claims in any number of processes therefore run one after the other on the row, each seeing the
previous one's commit (in PL/pgSQL every statement takes a fresh snapshot under READ COMMITTED).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import asyncpg

from ..lease import LeaseFence, LeaseLost, LeaseState

CLAIM_FUNCTION = """CREATE OR REPLACE FUNCTION ledger_claim_lease(p_name text, p_holder text, p_lapse interval)
RETURNS TABLE (lease_holder text, lease_lapses_at timestamptz, lease_fencing bigint, judged_at timestamptz)
LANGUAGE plpgsql AS $fn$
DECLARE
    v_holder text;
    v_lapses_at timestamptz;
    v_fencing bigint;
    v_now timestamptz;
BEGIN
    INSERT INTO ledger_leases AS l (name, holder, lapses_at, fencing) VALUES (p_name, NULL, NULL, 0)
    ON CONFLICT (name) DO NOTHING;
    SELECT l.holder, l.lapses_at, l.fencing INTO v_holder, v_lapses_at, v_fencing
    FROM ledger_leases AS l WHERE l.name = p_name FOR UPDATE;
    v_now := clock_timestamp();
    IF v_holder IS NOT NULL AND v_lapses_at > v_now AND v_holder <> p_holder THEN
        RETURN QUERY SELECT v_holder, v_lapses_at, v_fencing, v_now;
        RETURN;
    END IF;
    IF v_holder IS DISTINCT FROM p_holder THEN
        v_fencing := v_fencing + 1;
    END IF;
    UPDATE ledger_leases AS l SET holder = p_holder, lapses_at = v_now + p_lapse, fencing = v_fencing
    WHERE l.name = p_name;
    RETURN QUERY SELECT p_holder, v_now + p_lapse, v_fencing, v_now;
END
$fn$"""
"""Take, renew or leave a lease (see `lease`): the decision and the clock are the database's."""

LEASE_LOST_SQLSTATE = "LV002"

CHECK_FENCE_FUNCTION = f"""CREATE OR REPLACE FUNCTION ledger_check_fence(p_name text, p_holder text, p_fencing bigint)
RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
    IF p_name IS NULL THEN
        RETURN;
    END IF;
    PERFORM 1 FROM ledger_leases AS l
    WHERE l.name = p_name AND l.holder = p_holder AND l.fencing = p_fencing FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = '{LEASE_LOST_SQLSTATE}', MESSAGE = p_name;
    END IF;
END
$fn$"""
"""Inside the caller's transaction: share-lock the lease row when it still has the fence's holder and
fencing number (a claim taking the lease then waits for that transaction), else raise
`LEASE_LOST_SQLSTATE`. A NULL name checks nothing (an unfenced write)."""


def fence_arguments(fence: LeaseFence | None) -> list[Any]:
    """The three arguments of `ledger_check_fence` (all NULL without a fence)."""
    if fence is None:
        return [None, None, None]
    return [fence.name, fence.holder, fence.fencing]


def lease_lost(error: Exception, fence: LeaseFence | None) -> LeaseLost | None:
    """The `LeaseLost` a database error stands for, or None when it is another error."""
    if fence is None or getattr(error, "sqlstate", None) != LEASE_LOST_SQLSTATE:
        return None
    return LeaseLost(fence.name, fence.holder, fence.fencing)


def _state(name: str, holder: str | None, lapses_at: Any, fencing: int, now: Any) -> LeaseState:
    live = holder is not None and lapses_at is not None and lapses_at > now
    return LeaseState(
        name=name,
        holder=holder if live else None,
        until=lapses_at if live else None,
        fencing=fencing,
        now=now,
    )


def _claimed(name: str, row: Any) -> LeaseState:
    """A claim's answer. A NULL fencing number means the row was deleted (`forget_lapsed`) between the claim's
    insert and its lock: nothing was claimed, and the next claim makes the row again."""
    if row["lease_fencing"] is None:
        return _state(name, None, None, 0, row["judged_at"])
    return _state(name, row["lease_holder"], row["lease_lapses_at"], int(row["lease_fencing"]), row["judged_at"])


async def claim(conn: Any, name: str, holder: str, lapse: timedelta) -> LeaseState:
    return _claimed(name, await conn.fetchrow("SELECT * FROM ledger_claim_lease($1, $2, $3)", name, holder, lapse))


async def release(conn: Any, name: str, holder: str) -> bool:
    status = await conn.execute(
        "UPDATE ledger_leases SET holder = NULL, lapses_at = NULL WHERE name = $1 AND holder = $2", name, holder
    )
    return str(status) != "UPDATE 0"


async def read(conn: Any, name: str) -> LeaseState:
    row = await conn.fetchrow(
        "SELECT l.holder, l.lapses_at, l.fencing, c.now FROM (SELECT clock_timestamp() AS now) AS c "
        "LEFT JOIN ledger_leases AS l ON l.name = $1",
        name,
    )
    fencing = 0 if row["fencing"] is None else int(row["fencing"])
    return _state(name, row["holder"], row["lapses_at"], fencing, row["now"])


async def check_fence(conn: Any, fence: LeaseFence) -> None:
    """`ledger_check_fence` in the caller's transaction; `LeaseLost` when the fence no longer holds."""
    try:
        await conn.execute("SELECT ledger_check_fence($1, $2, $3)", *fence_arguments(fence))
    except asyncpg.PostgresError as error:
        lost = lease_lost(error, fence)
        if lost is None:
            raise
        raise lost from error


async def claim_many(conn: Any, names: list[str], holder: str, lapse: timedelta) -> list[LeaseState]:
    """`ledger_claim_lease` of each name (sorted by the caller) in one statement: one transaction, whose row
    locks are taken in name order."""
    rows = await conn.fetch(
        "SELECT n.name, c.* FROM unnest($1::text[]) WITH ORDINALITY AS n(name, i) "
        "CROSS JOIN LATERAL ledger_claim_lease(n.name, $2, $3) AS c ORDER BY n.i",
        names,
        holder,
        lapse,
    )
    return [_claimed(r["name"], r) for r in rows]


async def release_many(conn: Any, names: list[str], holder: str) -> int:
    """Release the rows in name order (their locks taken by the subquery in that order, as `claim_many` takes
    them), so a release and another server's claims of overlapping rows never deadlock."""
    status = await conn.execute(
        "UPDATE ledger_leases SET holder = NULL, lapses_at = NULL WHERE name IN ("
        "SELECT name FROM ledger_leases WHERE name = ANY($1::text[]) AND holder = $2 "
        'ORDER BY name COLLATE "C" FOR UPDATE)',
        names,
        holder,
    )
    return int(str(status).rsplit(" ", 1)[-1])


async def read_all(conn: Any, prefix: str) -> list[LeaseState]:
    rows = await conn.fetch(
        "SELECT l.name, l.holder, l.lapses_at, l.fencing, c.now FROM (SELECT clock_timestamp() AS now) AS c "
        "JOIN ledger_leases AS l ON starts_with(l.name, $1) ORDER BY l.name",
        prefix,
    )
    return [_state(r["name"], r["holder"], r["lapses_at"], int(r["fencing"]), r["now"]) for r in rows]


async def forget(conn: Any, name: str, holder: str) -> bool:
    status = await conn.execute("DELETE FROM ledger_leases WHERE name = $1 AND holder = $2", name, holder)
    return str(status) != "DELETE 0"


async def forget_lapsed(conn: Any, prefix: str, lapsed_for: timedelta) -> int:
    """Delete the released rows of `prefix` and those lapsed before the database's now minus `lapsed_for`. A row
    a claim renews meanwhile is re-checked after its lock (READ COMMITTED) and kept."""
    status = await conn.execute(
        "DELETE FROM ledger_leases WHERE starts_with(name, $1) "
        "AND (holder IS NULL OR lapses_at < clock_timestamp() - $2::interval)",
        prefix,
        lapsed_for,
    )
    return int(str(status).rsplit(" ", 1)[-1])
