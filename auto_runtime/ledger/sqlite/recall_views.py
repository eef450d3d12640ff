"""`SqliteRecallViewRows`: the recall views' port (`..recall_views`) on the SQLite file: writes on the writer
thread, each in its writer transaction with the fence checked first; reads on a reader."""

from __future__ import annotations

import sqlite3

from ..lease import LeaseFence
from ..open_state import OpenState
from ..recall_views import Expected, RecallViewRows, ViewRow
from . import lease_statements, recall_view_statements
from .connections import SqliteConnections


class SqliteRecallViewRows(RecallViewRows):
    def __init__(self, connections: SqliteConnections, open_state: OpenState) -> None:
        super().__init__(open_state)
        self._connections = connections

    async def _of_playbook(self, org: str, playbook: str) -> list[ViewRow]:
        return await self._connections.read(lambda conn: recall_view_statements.of_playbook(conn, org, playbook))

    async def _one(self, org: str, playbook: str, name: str) -> ViewRow | None:
        return await self._connections.read(lambda conn: recall_view_statements.one(conn, org, playbook, name))

    async def _playbooks(self) -> list[tuple[str, str]]:
        return await self._connections.read(recall_view_statements.playbooks)

    async def _keeps_views(self, org: str, playbook: str) -> bool:
        return await self._connections.read(lambda conn: recall_view_statements.keeps_views(conn, org, playbook))

    async def _write(self, row: ViewRow, expected: Expected | None, fence: LeaseFence | None) -> bool:
        def work(conn: sqlite3.Connection) -> bool:
            if fence is not None:
                lease_statements.check_fence(conn, fence)
            return recall_view_statements.write(conn, row, expected)

        return await self._connections.write(work)

    async def _drop(self, org: str, playbook: str, name: str, fence: LeaseFence | None) -> None:
        def work(conn: sqlite3.Connection) -> None:
            if fence is not None:
                lease_statements.check_fence(conn, fence)
            recall_view_statements.drop(conn, org, playbook, name)

        await self._connections.write(work)
