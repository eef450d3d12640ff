"""A real ledger with the `runs` projection, on SQLite and on the PostgreSQL server at 127.0.0.1:5432.

PostgreSQL: `LEDGER_TEST_POSTGRES_URL` (default `postgresql://postgres@127.0.0.1:5432/test`, trust auth) must
answer, or the PostgreSQL cases fail. Each test gets a schema of its own with a random name (through
`search_path`), dropped after it, so tests that share the server never see each other.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest

from auto_runtime.ledger import Ledger, open_ledger
from auto_runtime.runs.facts import RUNS_PROJECTION

POSTGRES_URL = os.environ.get("LEDGER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


async def _execute(statement: str) -> None:
    connection = await asyncpg.connect(POSTGRES_URL, timeout=10)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@pytest.fixture
def postgres_schema_url() -> Iterator[str]:
    schema = f"analytics_{secrets.token_hex(6)}"
    try:
        asyncio.run(_execute(f"CREATE SCHEMA {schema}"))
    except (OSError, asyncpg.PostgresError) as error:
        pytest.fail(f"PostgreSQL at {POSTGRES_URL} is required by the analytics tests: {error!r}")
    try:
        yield f"{POSTGRES_URL}?search_path={schema}"
    finally:
        asyncio.run(_execute(f"DROP SCHEMA {schema} CASCADE"))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def ledger_place(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path | None, str | None]:
    """Where the test's ledger lives: a SQLite file, or a PostgreSQL URL with a schema of its own."""
    if request.param == "postgres":
        return None, request.getfixturevalue("postgres_schema_url")
    return tmp_path / "ledger.db", None


@pytest.fixture
async def runs_ledger(ledger_place: tuple[Path | None, str | None]) -> AsyncIterator[Ledger]:
    """An open ledger that keeps the `runs` projection, as the server opens it."""
    ledger_file, database_url = ledger_place
    async with open_ledger(ledger_file=ledger_file, database_url=database_url, projections=[RUNS_PROJECTION]) as ledger:
        yield ledger
