"""Looking for secrets where they must not be: every encoding the scrubber removes (`encodings_of`), searched in
texts and in everything a ledger keeps (the SQLite files under a server's folder, or every row in PostgreSQL)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path

import asyncpg

from auto_runtime.tools.scrubbing import encodings_of


def forms_of(secrets: Iterable[str]) -> set[str]:
    return {form for secret in secrets for form in encodings_of(secret)}


def found_in(text: str, secrets: Iterable[str]) -> list[str]:
    """The forms of `secrets` that `text` holds (none, when all is well)."""
    return [form for form in forms_of(secrets) if form in text]


def found_in_bytes(data: bytes, secrets: Iterable[str]) -> list[str]:
    return [form for form in forms_of(secrets) if form.encode() in data]


async def _every_row(database_url: str) -> str:
    connection = await asyncpg.connect(database_url, timeout=10)
    try:
        tables = await connection.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        )
        rows = [await connection.fetch(f'SELECT * FROM "{table["table_name"]}"') for table in tables]
    finally:
        await connection.close()
    return repr(rows)


def stored(folder: Path, database_url: str | None) -> list[bytes]:
    """Everything the ledger keeps: the SQLite files under the server's folder, or every row in PostgreSQL."""
    if database_url is not None:
        return [asyncio.run(_every_row(database_url)).encode()]
    files = [path for path in folder.rglob("ledger.db*") if path.is_file()]
    assert files, "the server keeps its ledger in SQLite under its folder"
    return [path.read_bytes() for path in files]
