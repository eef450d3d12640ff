"""The SQLite store's due-work SQL: changes on the writer thread, reads on reader connections.

`ledger_due_work` has one row per `(scope_key, run_id, key)`. Armed rows are indexed by due time in a
partial index (`ledger_due_work_armed`), which `due` and `next_due` read in order.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ..due_work import DueEntry, DueRow, EncodedChanges, EncodedKey, decode_entry, decode_row

_COLUMNS = "scope_key, run_id, key, due_us, payload"

DUE_SQL = (
    f"SELECT {_COLUMNS} FROM ledger_due_work INDEXED BY ledger_due_work_armed "
    "WHERE state = 'armed' AND due_us <= ? ORDER BY due_us, scope_key, run_id, key LIMIT ?"
)
"""Armed entries due by a time, oldest first; `INDEXED BY` makes SQLite refuse any plan without the index."""

NEXT_DUE_SQL = (
    "SELECT due_us FROM ledger_due_work INDEXED BY ledger_due_work_armed WHERE state = 'armed' ORDER BY due_us LIMIT 1"
)
"""The earliest armed due time, the first entry of the armed index."""


def apply_changes(conn: sqlite3.Connection, changes: EncodedChanges) -> None:
    """Arm (unless the key has a row), cancel (tombstone when it has none), then mark armed entries fired, in
    the caller's transaction."""
    conn.executemany(
        "INSERT INTO ledger_due_work (scope_key, run_id, key, due_us, payload, state) "
        "VALUES (?, ?, ?, ?, ?, 'armed') ON CONFLICT DO NOTHING",
        [(e.scope_key, e.run_id, e.key, e.due_us, e.payload) for e in changes.arm],
    )
    conn.executemany(
        "INSERT INTO ledger_due_work (scope_key, run_id, key, due_us, payload, state) "
        "VALUES (?, ?, ?, NULL, NULL, 'cancelled') "
        "ON CONFLICT (scope_key, run_id, key) DO UPDATE SET state = 'cancelled' WHERE state = 'armed'",
        [(k.scope_key, k.run_id, k.key) for k in changes.cancel],
    )
    if changes.fire:
        mark_fired(conn, changes.fire)


def mark_fired(conn: sqlite3.Connection, keys: Sequence[EncodedKey]) -> int:
    changed = 0
    for k in keys:
        cursor = conn.execute(
            "UPDATE ledger_due_work SET state = 'fired' "
            "WHERE scope_key = ? AND run_id = ? AND key = ? AND state = 'armed'",
            (k.scope_key, k.run_id, k.key),
        )
        changed += cursor.rowcount
    return changed


def forget_run(conn: sqlite3.Connection, scope_key: str, run_id: str) -> int:
    cursor = conn.execute("DELETE FROM ledger_due_work WHERE scope_key = ? AND run_id = ?", (scope_key, run_id))
    return cursor.rowcount


def due(conn: sqlite3.Connection, now_us: int, limit: int) -> list[DueEntry]:
    rows = conn.execute(DUE_SQL, (now_us, limit)).fetchall()
    return [decode_entry(*row) for row in rows]


def next_due(conn: sqlite3.Connection) -> int | None:
    row = conn.execute(NEXT_DUE_SQL).fetchone()
    return None if row is None else int(row[0])


def rows_of_run(conn: sqlite3.Connection, scope_key: str, run_id: str) -> list[DueRow]:
    rows = conn.execute(
        f"SELECT {_COLUMNS}, state FROM ledger_due_work WHERE scope_key = ? AND run_id = ? ORDER BY key",
        (scope_key, run_id),
    ).fetchall()
    return [decode_row(*row) for row in rows]
