"""`PostgresContentRows`: the content table of the ledger's PostgreSQL database (the `ContentRows` of its
`LedgerContent`, see `..content`)."""

from __future__ import annotations

from ..content import KeptContent, SpooledContent, chunks_of
from . import statements
from .connections import PostgresConnections


class PostgresContentRows:
    def __init__(self, connections: PostgresConnections) -> None:
        self._connections = connections

    async def find(self, scope_key: str, sha256: str) -> KeptContent | None:
        return await self._connections.with_connection(lambda conn: statements.get_content(conn, scope_key, sha256))

    async def keep_in_ledger(self, scope_key: str, sha256: str, data: bytes) -> None:
        chunks = chunks_of(data)
        await self._connections.with_connection(lambda conn: statements.put_content(conn, scope_key, sha256, chunks))

    async def keep_spooled_in_ledger(self, scope_key: str, spooled: SpooledContent) -> None:
        await self._connections.with_connection(lambda conn: statements.put_spooled_content(conn, scope_key, spooled))

    async def drop_scope(self, scope_key: str) -> list[str]:
        return await self._connections.with_connection(lambda conn: statements.drop_content(conn, scope_key))

    async def keep_elsewhere(self, scope_key: str, sha256: str, size: int, location: str) -> None:
        await self._connections.with_connection(
            lambda conn: statements.put_content_reference(conn, scope_key, sha256, size, location)
        )
