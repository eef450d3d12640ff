"""The real PostgreSQL the tests use: `LEDGER_TEST_POSTGRES_URL`, by default the local server's `test` database.

A test run makes databases of its own with random names and drops them at the end, so runs sharing the server
never see each other. An unreachable server fails the tests that need it; it never skips them.
"""

from __future__ import annotations

import asyncio
import base64
import os
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager

import asyncpg
import pytest

ADMIN_URL = os.environ.get("LEDGER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def with_database(url: str, database: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{database}"


async def admin(url: str, *statements: str) -> None:
    conn = await asyncpg.connect(url, timeout=10)
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


@contextmanager
def fresh_database(prefix: str) -> Iterator[str]:
    """The URL of a new database, dropped at the end; fails loudly when PostgreSQL does not answer."""
    name = f"{prefix}_{secrets.token_hex(6)}"
    try:
        asyncio.run(admin(ADMIN_URL, f"CREATE DATABASE {name}"))
    except (OSError, asyncpg.PostgresError) as error:
        pytest.fail(f"PostgreSQL at {ADMIN_URL} is required by these tests: {error!r}")
    try:
        yield with_database(ADMIN_URL, name)
    finally:
        drop_database(name)


DROP_TRIES = 300
DROP_PAUSE_SECONDS = 0.2


def drop_database(name: str) -> None:
    """`DROP DATABASE`, tried again while the cluster cannot checkpoint.

    A drop makes PostgreSQL checkpoint, and a checkpoint fails ("checkpoint request failed") while any of the
    cluster's tablespaces is full: `tests/security/test_full_disk.py` fills one on purpose, and another worker's
    drop at that moment failed. The drop is tried again until that test has freed its disk (within a minute)."""
    for tried in range(1, DROP_TRIES + 1):
        try:
            asyncio.run(admin(ADMIN_URL, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            return
        except asyncpg.InternalServerError as error:
            if "checkpoint request failed" not in str(error) or tried == DROP_TRIES:
                raise
        time.sleep(DROP_PAUSE_SECONDS)


def server_on(database_url: str) -> dict[str, str]:
    """A server's settings for the PostgreSQL ledger at `database_url`: the URL, and the `SECRETS_KEY` a server
    on PostgreSQL needs (a new random key)."""
    return {"DATABASE_URL": database_url, "SECRETS_KEY": base64.b64encode(secrets.token_bytes(32)).decode()}
