"""The PostgreSQL ledger's schema migrations (`migrations/`, see `..migrations`), its functions, and the
rebuild of changed projections.

All run under a transaction-level advisory lock, so several servers starting on one database
migrate and rebuild once. `tx_id` is the appending transaction's id (`pg_current_xact_id()`, as a
bigint): oldest-first reads order by `(tx_id, global_position)` behind a horizon (see `statements`).
Data and metadata are kept as JSON *text* (not jsonb, which refuses U+0000 and lone surrogates).
The functions (`ledger_append`, see `statements.APPEND_FUNCTION`, and the others of `FUNCTIONS`) are
replaced on every open, so a server always calls the version it was built with.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final

from ..migrations import VERSION_TABLE, Migration, SchemaReport, load_migrations, next_migration
from ..placeholders import to_numbered
from ..projections import Projection
from ..records import decode_record, to_microseconds
from . import due_work_statements, lease_statements
from .statements import APPEND_FUNCTION, APPEND_GUARDED_FUNCTION, RECORD_COLUMNS, apply_projections

LOCK_KEY = 0x6C6564676572  # "ledger"
_REBUILD_BATCH = 1_000

VERSION_TABLE_SQL = f"""CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at_us bigint NOT NULL
)"""

MIGRATIONS: Final = load_migrations("auto_runtime.ledger.postgres.migrations")

FUNCTIONS: Final = (
    APPEND_FUNCTION,
    lease_statements.CLAIM_FUNCTION,
    lease_statements.CHECK_FENCE_FUNCTION,
    due_work_statements.PARTITION_FUNCTION,
    due_work_statements.CHANGE_FUNCTION,
    due_work_statements.MARK_FIRED_FUNCTION,
    APPEND_GUARDED_FUNCTION,
)
"""Replaced on every open, after the migrations, in the same locked transaction as the last version check."""


async def migrate(conn: Any, migrations: Sequence[Migration] = MIGRATIONS) -> SchemaReport:
    """Bring the ledger's schema to the latest version and replace the ledger's functions (see
    `..migrations`); `SchemaTooNew` for a ledger a newer release migrated.

    Every transaction here first takes the ledger's advisory lock (`pg_advisory_xact_lock(LOCK_KEY)`, held to
    its end), then reads the version: a second server starting at the same time waits on the lock and then
    finds the version already recorded. Each migration commits together with its version row.
    """
    found: int | None = None
    adopted = False
    applied: list[int] = []
    while True:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", LOCK_KEY)
            if found is None:
                adopted = await conn.fetchval(
                    "SELECT to_regclass($1) IS NULL AND to_regclass('ledger_records') IS NOT NULL", VERSION_TABLE
                )
            await conn.execute(VERSION_TABLE_SQL)
            version: int = await conn.fetchval(f"SELECT coalesce(max(version), 0) FROM {VERSION_TABLE}")
            if found is None:
                found = version
            step = next_migration(version, migrations)
            if step is None:
                for function in FUNCTIONS:
                    await conn.execute(function)
            else:
                await conn.execute(step.sql)
                await conn.execute(
                    f"INSERT INTO {VERSION_TABLE} (version, name, applied_at_us) VALUES ($1, $2, $3)",
                    step.number,
                    step.name,
                    to_microseconds(datetime.now(UTC)),
                )
        if step is None:
            return SchemaReport(found, version, adopted, tuple(applied))
        applied.append(step.number)


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


async def fix_partitions(conn: Any, asked: int) -> int:
    """Keep `asked` as the ledger's partition count unless it keeps one, under the ledger's advisory lock (the
    first of several servers starting together decides); answers the count kept (see `..partitions`)."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", LOCK_KEY)
        return await due_work_statements.fix_partitions(conn, asked)
