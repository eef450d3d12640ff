"""`PostgresSecretRows`: the secret-row port (`..secret_rows`) on the PostgreSQL database (`secret_statements`)."""

from __future__ import annotations

from ..open_state import OpenState
from ..secret_rows import SecretRow, SecretRows
from . import secret_statements
from .connections import PostgresConnections


class PostgresSecretRows(SecretRows):
    def __init__(self, connections: PostgresConnections, open_state: OpenState) -> None:
        super().__init__(open_state)
        self._connections = connections

    async def _put(self, row: SecretRow) -> None:
        await self._connections.with_connection(lambda conn: secret_statements.put(conn, row))

    async def _get(self, scope_key: str, name: str) -> SecretRow | None:
        return await self._connections.with_connection(lambda conn: secret_statements.get(conn, scope_key, name))

    async def _forget(self, scope_key: str, name: str) -> bool:
        return await self._connections.with_connection(lambda conn: secret_statements.forget(conn, scope_key, name))

    async def _every(self) -> list[SecretRow]:
        return await self._connections.with_connection(secret_statements.every)

    async def _replace(self, row: SecretRow, sealed: bytes) -> bool:
        return await self._connections.with_connection(lambda conn: secret_statements.replace(conn, row, sealed))
