"""The SQLite ledger's tables (created with sqlite-utils) and the rebuild of changed projections.

Runs on the writer's connection before the writer thread starts, so nothing else writes meanwhile.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import sqlite_utils

from ..projections import Projection
from ..records import decode_record
from . import due_work_statements, lease_statements, secret_statements
from .statements import RECORD_COLUMNS, apply_projections

_REBUILD_BATCH = 1_000


def connect_writer(path: str) -> sqlite3.Connection:
    """The writer's connection: autocommit mode (explicit BEGIN IMMEDIATE), WAL, synchronous=FULL."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA busy_timeout=10000")
    return conn


def migrate(conn: sqlite3.Connection) -> None:
    """Create the ledger's own tables and indexes when they are missing."""
    db = sqlite_utils.Database(conn)
    db.table("ledger_records").create(
        {
            "global_position": int,
            "id": str,
            "stream": str,
            "position": int,
            "scope_key": str,
            "type": str,
            "data": str,
            "metadata": str,
            "correlation_id": str,
            "size": int,
            "recorded_at": int,
        },
        pk="global_position",
        not_null={"id", "stream", "position", "scope_key", "type", "data", "metadata", "size", "recorded_at"},
        if_not_exists=True,
    )
    records = db.table("ledger_records")
    records.create_index(["id"], index_name="ledger_records_id", unique=True, if_not_exists=True)
    records.create_index(["stream", "position"], index_name="ledger_records_stream", unique=True, if_not_exists=True)
    records.create_index(["scope_key", "global_position"], index_name="ledger_records_scope", if_not_exists=True)
    records.create_index(
        ["scope_key", "correlation_id", "global_position"],
        index_name="ledger_records_correlation",
        if_not_exists=True,
    )
    db.table("ledger_streams").create(
        {"stream": str, "version": int}, pk="stream", not_null={"version"}, if_not_exists=True
    )
    db.table("ledger_projections").create(
        {"name": str, "version": int}, pk="name", not_null={"version"}, if_not_exists=True
    )
    db.table("ledger_content").create(
        {"scope_key": str, "sha256": str, "size": int, "location": str},
        pk=("scope_key", "sha256"),
        not_null={"size", "location"},
        if_not_exists=True,
    )
    db.table("ledger_content_chunks").create(
        {"scope_key": str, "sha256": str, "chunk": int, "bytes": bytes},
        pk=("scope_key", "sha256", "chunk"),
        not_null={"bytes"},
        if_not_exists=True,
    )
    for statement in (lease_statements.TABLE, secret_statements.TABLE, *due_work_statements.TABLES):
        conn.execute(statement)


def ensure_projections(conn: sqlite3.Connection, projections: Sequence[Projection]) -> list[str]:
    """Rebuild, each in one transaction, every projection whose table is new or whose version changed.

    Returns the names of the projections rebuilt.
    """
    rebuilt: list[str] = []
    for projection in projections:
        stored = conn.execute("SELECT version FROM ledger_projections WHERE name = ?", (projection.name,)).fetchone()
        exists = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (projection.table.name,)
        ).fetchone()
        if stored is not None and stored[0] == projection.version and exists is not None:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(f"DROP TABLE IF EXISTS {projection.table.name}")
            for statement in projection.table.create_statements("sqlite"):
                conn.execute(statement)
            cursor = conn.execute(f"SELECT {RECORD_COLUMNS} FROM ledger_records ORDER BY global_position")
            while batch := cursor.fetchmany(_REBUILD_BATCH):
                apply_projections(conn, [projection], [decode_record(*row) for row in batch])
            conn.execute(
                "INSERT INTO ledger_projections (name, version) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET version = excluded.version",
                (projection.name, projection.version),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        rebuilt.append(projection.name)
    return rebuilt
