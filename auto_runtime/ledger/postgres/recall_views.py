"""`PostgresRecallViewRows`: the recall views' port (`..recall_views`) on the PostgreSQL database: each write in
one transaction with its fence check (`recall_view_statements`)."""

from __future__ import annotations

from ..lease import LeaseFence
from ..open_state import OpenState
from ..recall_views import Expected, RecallViewRows, ViewRow
from . import recall_view_statements
from .connections import PostgresConnections


class PostgresRecallViewRows(RecallViewRows):
    def __init__(self, connections: PostgresConnections, open_state: OpenState) -> None:
        super().__init__(open_state)
        self._connections = connections

    async def _of_playbook(self, org: str, playbook: str) -> list[ViewRow]:
        return await self._connections.with_connection(
            lambda conn: recall_view_statements.of_playbook(conn, org, playbook)
        )

    async def _one(self, org: str, playbook: str, name: str) -> ViewRow | None:
        return await self._connections.with_connection(
            lambda conn: recall_view_statements.one(conn, org, playbook, name)
        )

    async def _playbooks(self) -> list[tuple[str, str]]:
        return await self._connections.with_connection(recall_view_statements.playbooks)

    async def _keeps_views(self, org: str, playbook: str) -> bool:
        return await self._connections.with_connection(
            lambda conn: recall_view_statements.keeps_views(conn, org, playbook)
        )

    async def _write(self, row: ViewRow, expected: Expected | None, fence: LeaseFence | None) -> bool:
        return await self._connections.with_connection(
            lambda conn: recall_view_statements.write(conn, row, expected, fence)
        )

    async def _drop(self, org: str, playbook: str, name: str, fence: LeaseFence | None) -> None:
        await self._connections.with_connection(
            lambda conn: recall_view_statements.drop(conn, org, playbook, name, fence)
        )
