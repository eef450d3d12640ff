"""The SQLite ledger's schema migrations (`migrations/`, see `..migrations`) and the rebuild of changed
projections.

Runs on the writer's connection before the writer thread starts, so nothing else of this process writes
meanwhile; other processes are kept out by `BEGIN IMMEDIATE`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Final

from ..migrations import VERSION_TABLE, Migration, SchemaReport, load_migrations, next_migration
from ..projections import Projection
from ..records import decode_record, to_microseconds
from . import due_work_statements
from .statements import RECORD_COLUMNS, apply_projections

_REBUILD_BATCH = 1_000


def connect_writer(path: str) -> sqlite3.Connection:
    """The writer's connection: autocommit mode (explicit BEGIN IMMEDIATE), WAL, synchronous=FULL.

    The busy timeout is set first, so that a process starting while another holds the file's lock (turning a
    new file to WAL, or migrating) waits for it rather than failing."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout=10000")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    due_work_statements.register_functions(conn)
    return conn


VERSION_TABLE_SQL = f"""CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at_us INTEGER NOT NULL
)"""

MIGRATIONS: Final = load_migrations("auto_runtime.ledger.sqlite.migrations")


def statements_of(script: str) -> list[str]:
    """The statements of a migration's SQL, each whole (`sqlite3.complete_statement`), comments kept with the
    statement they precede. `sqlite3` runs one statement per `execute`, and `executescript` would commit
    the migration's transaction first."""
    statements: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    left = "\n".join(line for line in pending.splitlines() if not line.lstrip().startswith("--")).strip()
    if left:
        raise ValueError(f"a migration ends inside a statement: {left[:80]!r}")
    return statements


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


def migrate(conn: sqlite3.Connection, migrations: Sequence[Migration] = MIGRATIONS) -> SchemaReport:
    """Bring the ledger's schema to the latest version, one migration per `BEGIN IMMEDIATE` transaction with
    its version row (see `..migrations`); `SchemaTooNew` for a ledger a newer release migrated.

    `BEGIN IMMEDIATE` takes the file's write lock before the version is read, so a second process starting
    at the same time waits (the connection's `busy_timeout`) and then finds the version already recorded.
    """
    found: int | None = None
    adopted = False
    applied: list[int] = []
    while True:
        conn.execute("BEGIN IMMEDIATE")
        try:
            if found is None:
                adopted = not _has_table(conn, VERSION_TABLE) and _has_table(conn, "ledger_records")
            conn.execute(VERSION_TABLE_SQL)
            version: int = conn.execute(f"SELECT coalesce(max(version), 0) FROM {VERSION_TABLE}").fetchone()[0]
            if found is None:
                found = version
            step = next_migration(version, migrations)
            if step is not None:
                for statement in statements_of(step.sql):
                    conn.execute(statement)
                conn.execute(
                    f"INSERT INTO {VERSION_TABLE} (version, name, applied_at_us) VALUES (?, ?, ?)",
                    (step.number, step.name, to_microseconds(datetime.now(UTC))),
                )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if step is None:
            return SchemaReport(found, version, adopted, tuple(applied))
        applied.append(step.number)


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


def fix_partitions(conn: sqlite3.Connection, asked: int) -> int:
    """Keep `asked` as the ledger's partition count unless it keeps one, in one writer transaction; answers the
    count kept (see `..partitions`)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        kept = due_work_statements.fix_partitions(conn, asked)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return kept
