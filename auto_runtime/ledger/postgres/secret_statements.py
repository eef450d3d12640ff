"""The PostgreSQL store's secret-row SQL (`secret_rows`); each statement is its own transaction."""

from __future__ import annotations

from typing import Any

from ..secret_rows import SecretRow


async def put(conn: Any, row: SecretRow) -> None:
    await conn.execute(
        "INSERT INTO ledger_secrets (scope_key, name, sealed, ends_with) VALUES ($1, $2, $3, $4) "
        "ON CONFLICT (scope_key, name) DO UPDATE SET sealed = excluded.sealed, ends_with = excluded.ends_with",
        row.scope_key,
        row.name,
        row.sealed,
        row.ends_with,
    )


async def get(conn: Any, scope_key: str, name: str) -> SecretRow | None:
    found = await conn.fetchrow(
        "SELECT sealed, ends_with FROM ledger_secrets WHERE scope_key = $1 AND name = $2", scope_key, name
    )
    return None if found is None else SecretRow(scope_key, name, bytes(found["sealed"]), found["ends_with"])


async def forget(conn: Any, scope_key: str, name: str) -> bool:
    status = await conn.execute("DELETE FROM ledger_secrets WHERE scope_key = $1 AND name = $2", scope_key, name)
    return str(status) != "DELETE 0"


async def every(conn: Any) -> list[SecretRow]:
    rows = await conn.fetch("SELECT scope_key, name, sealed, ends_with FROM ledger_secrets ORDER BY scope_key, name")
    return [SecretRow(row["scope_key"], row["name"], bytes(row["sealed"]), row["ends_with"]) for row in rows]


async def replace(conn: Any, row: SecretRow, sealed: bytes) -> bool:
    status = await conn.execute(
        "UPDATE ledger_secrets SET sealed = $1 WHERE scope_key = $2 AND name = $3 AND sealed = $4",
        sealed,
        row.scope_key,
        row.name,
        row.sealed,
    )
    return str(status) != "UPDATE 0"
