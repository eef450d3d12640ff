"""The SQLite store's lease SQL, run on the writer thread (claims and releases) or a reader (reads).

The writer thread is the only writer of the file and runs one unit at a time, so a claim's read of
the row, its reading of the host's clock and its write cannot interleave with another claim.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta

from ..lease import LeaseFence, LeaseLost, LeaseState
from ..records import from_microseconds, to_microseconds


def _now_us() -> int:
    return to_microseconds(datetime.now(UTC))


def _state(name: str, holder: str | None, until_us: int | None, fencing: int, now_us: int) -> LeaseState:
    live = holder is not None and until_us is not None and until_us > now_us
    return LeaseState(
        name=name,
        holder=holder if live else None,
        until=from_microseconds(until_us) if live and until_us is not None else None,
        fencing=fencing,
        now=from_microseconds(now_us),
    )


def claim(conn: sqlite3.Connection, name: str, holder: str, lapse: timedelta) -> LeaseState:
    """Take, renew or leave the lease (see `lease`); the host's clock is read here, on the writer."""
    now_us = _now_us()
    until_us = now_us + lapse // timedelta(microseconds=1)
    row = conn.execute("SELECT holder, until_us, fencing FROM ledger_leases WHERE name = ?", (name,)).fetchone()
    if row is None:
        conn.execute(
            "INSERT INTO ledger_leases (name, holder, until_us, fencing) VALUES (?, ?, ?, 1)", (name, holder, until_us)
        )
        return _state(name, holder, until_us, 1, now_us)
    current, current_until, fencing = row[0], row[1], int(row[2])
    live = current is not None and current_until is not None and current_until > now_us
    if live and current != holder:
        return _state(name, current, current_until, fencing, now_us)
    if current != holder:
        fencing += 1
    conn.execute(
        "UPDATE ledger_leases SET holder = ?, until_us = ?, fencing = ? WHERE name = ?",
        (holder, until_us, fencing, name),
    )
    return _state(name, holder, until_us, fencing, now_us)


def release(conn: sqlite3.Connection, name: str, holder: str) -> bool:
    cursor = conn.execute(
        "UPDATE ledger_leases SET holder = NULL, until_us = NULL WHERE name = ? AND holder = ?", (name, holder)
    )
    return cursor.rowcount > 0


def read(conn: sqlite3.Connection, name: str) -> LeaseState:
    now_us = _now_us()
    row = conn.execute("SELECT holder, until_us, fencing FROM ledger_leases WHERE name = ?", (name,)).fetchone()
    if row is None:
        return _state(name, None, None, 0, now_us)
    return _state(name, row[0], row[1], int(row[2]), now_us)


def check_fence(conn: sqlite3.Connection, fence: LeaseFence) -> None:
    """Raise `LeaseLost` unless the lease still has the fence's holder and fencing number."""
    row = conn.execute(
        "SELECT 1 FROM ledger_leases WHERE name = ? AND holder = ? AND fencing = ?",
        (fence.name, fence.holder, fence.fencing),
    ).fetchone()
    if row is None:
        raise LeaseLost(fence.name, fence.holder, fence.fencing)


def claim_many(conn: sqlite3.Connection, names: list[str], holder: str, lapse: timedelta) -> list[LeaseState]:
    """`claim` of each name, in the writer's one transaction."""
    return [claim(conn, name, holder, lapse) for name in names]


def release_many(conn: sqlite3.Connection, names: list[str], holder: str) -> int:
    return sum(release(conn, name, holder) for name in names)


def read_all(conn: sqlite3.Connection, prefix: str) -> list[LeaseState]:
    now_us = _now_us()
    rows = conn.execute(
        "SELECT name, holder, until_us, fencing FROM ledger_leases WHERE substr(name, 1, ?) = ? ORDER BY name",
        (len(prefix), prefix),
    ).fetchall()
    return [_state(row[0], row[1], row[2], int(row[3]), now_us) for row in rows]


def forget(conn: sqlite3.Connection, name: str, holder: str) -> bool:
    cursor = conn.execute("DELETE FROM ledger_leases WHERE name = ? AND holder = ?", (name, holder))
    return cursor.rowcount > 0


def forget_lapsed(conn: sqlite3.Connection, prefix: str, lapsed_for: timedelta) -> int:
    """Delete the released rows of `prefix` and those lapsed before now minus `lapsed_for` (host's clock)."""
    before_us = _now_us() - lapsed_for // timedelta(microseconds=1)
    cursor = conn.execute(
        "DELETE FROM ledger_leases WHERE substr(name, 1, ?) = ? AND (holder IS NULL OR until_us < ?)",
        (len(prefix), prefix, before_us),
    )
    return cursor.rowcount
