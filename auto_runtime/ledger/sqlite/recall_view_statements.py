"""The SQLite store's `recall_views` SQL (`..recall_views`): writes on the writer thread inside its transaction,
reads on a reader."""

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


_SELECT = f"SELECT {', '.join(COLUMNS)} FROM recall_views"


def of_playbook(conn: sqlite3.Connection, org: str, playbook: str) -> list[ViewRow]:
    rows = conn.execute(f"{_SELECT} WHERE org = ? AND playbook = ? ORDER BY name", (org, playbook))
    return [ViewRow.of(dict(zip(COLUMNS, row, strict=True))) for row in rows]


def one(conn: sqlite3.Connection, org: str, playbook: str, name: str) -> ViewRow | None:
    row = conn.execute(f"{_SELECT} WHERE org = ? AND playbook = ? AND name = ?", (org, playbook, name)).fetchone()
    return None if row is None else ViewRow.of(dict(zip(COLUMNS, row, strict=True)))


def playbooks(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """Every playbook with a view row or an active recall function."""
    rows = conn.execute(
        "SELECT org, playbook FROM recall_views UNION "
        "SELECT org, playbook FROM definitions WHERE type = 'recall' AND status = 'active'"
    )
    return [(str(org), str(playbook)) for org, playbook in rows]


def keeps_views(conn: sqlite3.Connection, org: str, playbook: str) -> bool:
    """Whether the playbook has a view row or an active recall function."""
    found = conn.execute(
        "SELECT 1 FROM recall_views WHERE org = ? AND playbook = ? UNION "
        "SELECT 1 FROM definitions WHERE org = ? AND playbook = ? AND type = 'recall' AND status = 'active'",
        (org, playbook, org, playbook),
    ).fetchone()
    return found is not None


def write(conn: sqlite3.Connection, row: ViewRow, expected: Expected | None) -> bool:
    values = row.values()
    if expected is None:
        conn.execute(_PUT, values)
        return True
    cursor = conn.execute(_ADVANCE, (*values[3:], *values[:3], expected.version, expected.checkpoint))
    return cursor.rowcount == 1


def drop(conn: sqlite3.Connection, org: str, playbook: str, name: str) -> None:
    conn.execute("DELETE FROM recall_views WHERE org = ? AND playbook = ? AND name = ?", (org, playbook, name))
