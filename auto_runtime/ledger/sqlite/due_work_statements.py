"""The SQLite store's due-work SQL: changes on the writer thread, reads on reader connections.

`ledger_due_work` has one row per `(scope_key, run_id, key)`. Armed rows are indexed by due time in a
partial index (`ledger_due_work_armed`), which `due` and `next_due` read in order.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from ..due_work import DueEntry, DueRow, EncodedChanges, EncodedKey, decode_entry, decode_row
from ..partitions import partition_of_due

_COLUMNS = "scope_key, run_id, key, due_us, payload"

_DUE = (
    f"SELECT {_COLUMNS} FROM ledger_due_work INDEXED BY ledger_due_work_armed "
    "WHERE state = 'armed' AND due_us <= ? {partitions}ORDER BY due_us, scope_key, run_id, key LIMIT ?"
)
_NEXT_DUE = (
    "SELECT due_us FROM ledger_due_work INDEXED BY ledger_due_work_armed WHERE state = 'armed' {partitions}"
    "ORDER BY due_us LIMIT 1"
)
_OF_PARTITIONS = "AND partition_no IN (SELECT value FROM json_each(?)) "

DUE_SQL = _DUE.format(partitions="")
"""Armed entries due by a time, oldest first; `INDEXED BY` makes SQLite refuse any plan without the index."""

DUE_OF_PARTITIONS_SQL = _DUE.format(partitions=_OF_PARTITIONS)
"""`DUE_SQL` of the partitions in a JSON array (its second parameter)."""

NEXT_DUE_SQL = _NEXT_DUE.format(partitions="")
"""The earliest armed due time, the first entry of the armed index."""

NEXT_DUE_OF_PARTITIONS_SQL = _NEXT_DUE.format(partitions=_OF_PARTITIONS)
"""`NEXT_DUE_SQL` of the partitions in a JSON array."""

PARTITION_OF = "ledger_partition_of(?, ?, (SELECT partitions FROM ledger_partitioning))"
"""The partition of a due entry (`partitions.partition_of_due`, a function of the writer's connection,
`register_functions`)."""


def register_functions(conn: sqlite3.Connection) -> None:
    """Give a writer's connection the functions its statements call (`ledger_partition_of`)."""

    def partition(scope_key: str, run_id: str, partitions: int | None) -> int | None:
        return None if partitions is None else partition_of_due(scope_key, run_id, partitions)

    conn.create_function("ledger_partition_of", 3, partition, deterministic=True)


def fix_partitions(conn: sqlite3.Connection, asked: int) -> int:
    """Keep `asked` as the ledger's partition count unless it keeps one (then give the entries armed before
    their partitions); answers the count kept. In the caller's transaction on the writer's connection."""
    row = conn.execute("SELECT partitions FROM ledger_partitioning").fetchone()
    if row is not None:
        return int(row[0])
    conn.execute("INSERT INTO ledger_partitioning (only_row, partitions) VALUES (1, ?)", (asked,))
    conn.execute(
        "UPDATE ledger_due_work SET partition_no = ledger_partition_of(scope_key, run_id, ?) "
        "WHERE partition_no IS NULL",
        (asked,),
    )
    return asked


def apply_changes(conn: sqlite3.Connection, changes: EncodedChanges) -> None:
    """Arm (unless the key has a row), cancel (tombstone when it has none), then mark armed entries fired, in
    the caller's transaction."""
    conn.executemany(
        "INSERT INTO ledger_due_work (scope_key, run_id, key, due_us, payload, state, partition_no) "
        f"VALUES (?, ?, ?, ?, ?, 'armed', {PARTITION_OF}) ON CONFLICT DO NOTHING",
        [(e.scope_key, e.run_id, e.key, e.due_us, e.payload, e.scope_key, e.run_id) for e in changes.arm],
    )
    conn.executemany(
        "INSERT INTO ledger_due_work (scope_key, run_id, key, due_us, payload, state, partition_no) "
        f"VALUES (?, ?, ?, NULL, NULL, 'cancelled', {PARTITION_OF}) "
        "ON CONFLICT (scope_key, run_id, key) DO UPDATE SET state = 'cancelled' WHERE state = 'armed'",
        [(k.scope_key, k.run_id, k.key, k.scope_key, k.run_id) for k in changes.cancel],
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


def due(conn: sqlite3.Connection, now_us: int, limit: int, partitions: list[int] | None) -> list[DueEntry]:
    if partitions is None:
        rows = conn.execute(DUE_SQL, (now_us, limit)).fetchall()
    else:
        rows = conn.execute(DUE_OF_PARTITIONS_SQL, (now_us, json.dumps(partitions), limit)).fetchall()
    return [decode_entry(*row) for row in rows]


def next_due(conn: sqlite3.Connection, partitions: list[int] | None) -> int | None:
    if partitions is None:
        row = conn.execute(NEXT_DUE_SQL).fetchone()
    else:
        row = conn.execute(NEXT_DUE_OF_PARTITIONS_SQL, (json.dumps(partitions),)).fetchone()
    return None if row is None else int(row[0])


def rows_of_run(conn: sqlite3.Connection, scope_key: str, run_id: str) -> list[DueRow]:
    rows = conn.execute(
        f"SELECT {_COLUMNS}, state FROM ledger_due_work WHERE scope_key = ? AND run_id = ? ORDER BY key",
        (scope_key, run_id),
    ).fetchall()
    return [decode_row(*row) for row in rows]
