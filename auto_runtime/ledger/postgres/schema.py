"""The PostgreSQL ledger's tables and the rebuild of changed projections.

Both run under a transaction-level advisory lock, so several servers starting on one database
migrate and rebuild once. `tx_id` is the appending transaction's id (`pg_current_xact_id()`, as a
bigint): oldest-first reads order by `(tx_id, global_position)` behind a horizon (see `statements`).
Data and metadata are kept as JSON *text* (not jsonb, which refuses U+0000 and lone surrogates).
The `ledger_append` function (see `statements.APPEND_FUNCTION`) is replaced on every open, so a
server always calls the version it was built with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..placeholders import to_numbered
from ..projections import Projection
from ..records import decode_record
from . import due_work_statements, lease_statements, secret_statements
from .statements import APPEND_FUNCTION, APPEND_GUARDED_FUNCTION, RECORD_COLUMNS, apply_projections

LOCK_KEY = 0x6C6564676572  # "ledger"
_REBUILD_BATCH = 1_000

_TABLES = [
    """CREATE TABLE IF NOT EXISTS ledger_records (
        global_position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        tx_id bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint),
        id text NOT NULL,
        stream text NOT NULL,
        position bigint NOT NULL,
        scope_key text NOT NULL,
        type text NOT NULL,
        data text NOT NULL,
        metadata text NOT NULL,
        correlation_id text,
        size bigint NOT NULL,
        recorded_at bigint NOT NULL,
        CONSTRAINT ledger_records_id UNIQUE (id),
        CONSTRAINT ledger_records_stream UNIQUE (stream, position)
    )""",
    "CREATE INDEX IF NOT EXISTS ledger_records_scope ON ledger_records (scope_key, tx_id, global_position)",
    "CREATE INDEX IF NOT EXISTS ledger_records_correlation "
    "ON ledger_records (scope_key, correlation_id, tx_id, global_position)",
    "CREATE INDEX IF NOT EXISTS ledger_records_feed ON ledger_records (tx_id, global_position)",
    "CREATE TABLE IF NOT EXISTS ledger_streams (stream text PRIMARY KEY, version bigint NOT NULL)",
    "CREATE TABLE IF NOT EXISTS ledger_projections (name text PRIMARY KEY, version bigint NOT NULL)",
    """CREATE TABLE IF NOT EXISTS ledger_content (
        scope_key text NOT NULL, sha256 text NOT NULL, size bigint NOT NULL, location text NOT NULL,
        PRIMARY KEY (scope_key, sha256))""",
    """CREATE TABLE IF NOT EXISTS ledger_content_chunks (
        scope_key text NOT NULL, sha256 text NOT NULL, chunk integer NOT NULL, bytes bytea NOT NULL,
        PRIMARY KEY (scope_key, sha256, chunk))""",
]


async def migrate(conn: Any) -> None:
    """Create the ledger's own tables and indexes when they are missing."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", LOCK_KEY)
        for statement in (*_TABLES, lease_statements.TABLE, secret_statements.TABLE, *due_work_statements.TABLES):
            await conn.execute(statement)
        for function in (
            APPEND_FUNCTION,
            lease_statements.CLAIM_FUNCTION,
            lease_statements.CHECK_FENCE_FUNCTION,
            due_work_statements.CHANGE_FUNCTION,
            due_work_statements.MARK_FIRED_FUNCTION,
            APPEND_GUARDED_FUNCTION,
        ):
            await conn.execute(function)


async def ensure_projections(conn: Any, projections: Sequence[Projection]) -> list[str]:
    """Rebuild, each in one transaction, every projection whose table is new or whose version changed."""
    rebuilt: list[str] = []
    for projection in projections:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", LOCK_KEY)
            stored = await conn.fetchval("SELECT version FROM ledger_projections WHERE name = $1", projection.name)
            exists = await conn.fetchval("SELECT to_regclass($1) IS NOT NULL", projection.table.name)
            if stored == projection.version and exists:
                continue
            await conn.execute(f"DROP TABLE IF EXISTS {projection.table.name}")
            for statement in projection.table.create_statements("postgres"):
                await conn.execute(statement)
            cursor = await conn.cursor(f"SELECT {RECORD_COLUMNS} FROM ledger_records ORDER BY tx_id, global_position")
            while batch := await cursor.fetch(_REBUILD_BATCH):
                await apply_projections(conn, [projection], [decode_record(*row) for row in batch], lock_rows=False)
            await conn.execute(
                to_numbered(
                    "INSERT INTO ledger_projections (name, version) VALUES (?, ?) "
                    "ON CONFLICT (name) DO UPDATE SET version = excluded.version"
                ),
                projection.name,
                projection.version,
            )
            rebuilt.append(projection.name)
    return rebuilt
