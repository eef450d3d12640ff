"""The SQLite store's secret-row SQL (`secret_rows`): writes on the writer thread, reads on a reader."""

from __future__ import annotations

import sqlite3

from ..secret_rows import SecretRow


def put(conn: sqlite3.Connection, row: SecretRow) -> None:
    conn.execute(
        "INSERT INTO ledger_secrets (scope_key, name, sealed, ends_with) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (scope_key, name) DO UPDATE SET sealed = excluded.sealed, ends_with = excluded.ends_with",
        (row.scope_key, row.name, row.sealed, row.ends_with),
    )


def get(conn: sqlite3.Connection, scope_key: str, name: str) -> SecretRow | None:
    found = conn.execute(
        "SELECT sealed, ends_with FROM ledger_secrets WHERE scope_key = ? AND name = ?", (scope_key, name)
    ).fetchone()
    return None if found is None else SecretRow(scope_key, name, bytes(found[0]), found[1])


def forget(conn: sqlite3.Connection, scope_key: str, name: str) -> bool:
    cursor = conn.execute("DELETE FROM ledger_secrets WHERE scope_key = ? AND name = ?", (scope_key, name))
    return cursor.rowcount > 0


def every(conn: sqlite3.Connection) -> list[SecretRow]:
    rows = conn.execute("SELECT scope_key, name, sealed, ends_with FROM ledger_secrets ORDER BY scope_key, name")
    return [SecretRow(row[0], row[1], bytes(row[2]), row[3]) for row in rows]


def replace(conn: sqlite3.Connection, row: SecretRow, sealed: bytes) -> bool:
    cursor = conn.execute(
        "UPDATE ledger_secrets SET sealed = ? WHERE scope_key = ? AND name = ? AND sealed = ?",
        (sealed, row.scope_key, row.name, row.sealed),
    )
    return cursor.rowcount > 0
