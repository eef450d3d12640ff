"""Reading a ledger's tables on purpose, in tests that check what its store keeps (a projection's row, a count of
content chunks, a query plan), where no query object answers or the test is about the storage itself.

Code above the ledger runs no SQL (design §3): it reads through `ledger.queries`. A test may: `stored_rows` runs
one statement on the store's own connection, as the other storage tests reach it (`holding.py`): a SQLite
store's reader pool (`query_only` connections) or the PostgreSQL store's loop (a read-only transaction), through
the same statement each store's reads use, so a write is refused here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from auto_runtime.ledger import Ledger
from auto_runtime.ledger.postgres import statements as postgres_statements
from auto_runtime.ledger.postgres.store import PostgresLedger
from auto_runtime.ledger.sqlite import statements as sqlite_statements
from auto_runtime.ledger.sqlite.store import SqliteLedger


async def stored_rows(ledger: Ledger, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """The rows of one read-only statement written with `?` placeholders, as dicts of column to value as
    stored."""
    if isinstance(ledger, SqliteLedger):
        return await ledger.readers.run(lambda conn: sqlite_statements.fetch(conn, sql, params))
    assert isinstance(ledger, PostgresLedger), f"no store of {type(ledger).__name__} is known here"
    return await ledger.with_connection(lambda conn: postgres_statements.fetch(conn, sql, params))
