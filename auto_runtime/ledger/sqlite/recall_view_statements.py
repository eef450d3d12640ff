"""The SQLite store's `recall_views` writes, on the writer thread inside its transaction (`..recall_views`)."""

from __future__ import annotations

import sqlite3

from ..recall_views import COLUMNS, Expected, ViewRow

_PUT = (
    f"INSERT INTO recall_views ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)}) "
    "ON CONFLICT (org, playbook, name) DO UPDATE SET "
    + ", ".join(f"{column} = excluded.{column}" for column in COLUMNS[3:])
)
_ADVANCE = (
    "UPDATE recall_views SET "
    + ", ".join(f"{column} = ?" for column in COLUMNS[3:])
    + " WHERE org = ? AND playbook = ? AND name = ? AND version = ? AND checkpoint IS ?"
)


def write(conn: sqlite3.Connection, row: ViewRow, expected: Expected | None) -> bool:
    values = row.values()
    if expected is None:
        conn.execute(_PUT, values)
        return True
    cursor = conn.execute(_ADVANCE, (*values[3:], *values[:3], expected.version, expected.checkpoint))
    return cursor.rowcount == 1


def drop(conn: sqlite3.Connection, org: str, playbook: str, name: str) -> None:
    conn.execute("DELETE FROM recall_views WHERE org = ? AND playbook = ? AND name = ?", (org, playbook, name))
