"""`PostgresLeases`: the lease port (`..lease`) on the PostgreSQL database, judged by the database's clock after
the lease row's lock (`lease_statements`), so servers sharing the database agree."""

from __future__ import annotations

from datetime import timedelta

from ..lease import Leases, LeaseState
from ..open_state import OpenState
from . import lease_statements
from .connections import PostgresConnections


class PostgresLeases(Leases):
    def __init__(self, connections: PostgresConnections, open_state: OpenState) -> None:
        super().__init__(open_state)
        self._connections = connections

    async def _claim(self, name: str, holder: str, lapse: timedelta) -> LeaseState:
        return await self._connections.with_connection(lambda conn: lease_statements.claim(conn, name, holder, lapse))

    async def _release(self, name: str, holder: str) -> bool:
        return await self._connections.with_connection(lambda conn: lease_statements.release(conn, name, holder))

    async def _read(self, name: str) -> LeaseState:
        return await self._connections.with_connection(lambda conn: lease_statements.read(conn, name))

    async def _claim_many(self, names: list[str], holder: str, lapse: timedelta) -> list[LeaseState]:
        return await self._connections.with_connection(
            lambda conn: lease_statements.claim_many(conn, names, holder, lapse)
        )

    async def _release_many(self, names: list[str], holder: str) -> int:
        return await self._connections.with_connection(lambda conn: lease_statements.release_many(conn, names, holder))

    async def _forget(self, name: str, holder: str) -> bool:
        return await self._connections.with_connection(lambda conn: lease_statements.forget(conn, name, holder))

    async def _forget_lapsed(self, prefix: str, lapsed_for: timedelta) -> int:
        return await self._connections.with_connection(
            lambda conn: lease_statements.forget_lapsed(conn, prefix, lapsed_for)
        )

    async def _read_all(self, prefix: str) -> list[LeaseState]:
        return await self._connections.with_connection(lambda conn: lease_statements.read_all(conn, prefix))
