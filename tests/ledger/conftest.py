"""The ledger behaviour suite runs every test against each store: SQLite, and the real PostgreSQL.

PostgreSQL: `LEDGER_TEST_POSTGRES_URL` (default `postgresql://postgres@127.0.0.1:5432/test`) must
answer, or every PostgreSQL test fails. The session creates a database of its own with a random name
(dropped at the end), and each test gets a fresh schema in it (through `search_path`), so runs that
share the server never see each other.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path

import pytest

from auto_runtime.ledger import DEFAULT_PARTITIONS, Ledger, Projection, open_ledger
from tests.postgres_support import admin, fresh_database


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """A database of this session's own; fails loudly when PostgreSQL does not answer."""
    with fresh_database("ledger_test") as url:
        yield url


@pytest.fixture
def postgres_url(postgres_database: str) -> Iterator[str]:
    """A URL whose `search_path` is a fresh schema, dropped after the test."""
    schema = f"t_{secrets.token_hex(6)}"
    asyncio.run(admin(postgres_database, f"CREATE SCHEMA {schema}"))
    try:
        yield f"{postgres_database}?search_path={schema}"
    finally:
        asyncio.run(admin(postgres_database, f"DROP SCHEMA {schema} CASCADE"))


@dataclass(frozen=True)
class Target:
    """Where a test's ledger lives; `open` may be called again to reopen the same store."""

    kind: str
    ledger_file: Path | None
    database_url: str | None

    def open(
        self, projections: Sequence[Projection] = (), partitions: int = DEFAULT_PARTITIONS
    ) -> AbstractAsyncContextManager[Ledger]:
        return open_ledger(self.ledger_file, self.database_url, projections, partitions=partitions)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    if request.param == "postgres":
        return Target("postgres", None, request.getfixturevalue("postgres_url"))
    return Target("sqlite", tmp_path / "folder" / "ledger.db", None)


@pytest.fixture
async def ledger(target: Target) -> AsyncIterator[Ledger]:
    """An open ledger without projections."""
    async with target.open() as opened:
        yield opened
