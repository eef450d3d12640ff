"""`SqliteDueWork`: the due-work port (`..due_work`) on the SQLite file: changes and marks on the writer thread,
each in its writer transaction with the fence checked first; reads on a reader."""

from __future__ import annotations

import sqlite3

from ..due_work import DueEntry, DueRow, DueWork, EncodedChanges, EncodedKey
from ..lease import LeaseFence
from ..open_state import OpenState
from . import due_work_statements, lease_statements
from .connections import SqliteConnections


class SqliteDueWork(DueWork):
    def __init__(self, connections: SqliteConnections, open_state: OpenState) -> None:
        super().__init__(open_state)
        self._connections = connections

    async def _change(self, changes: EncodedChanges, fence: LeaseFence | None) -> None:
        def work(conn: sqlite3.Connection) -> None:
            if fence is not None:
                lease_statements.check_fence(conn, fence)
            due_work_statements.apply_changes(conn, changes)

        await self._connections.write(work)

    async def _due(self, now_us: int, limit: int, partitions: list[int] | None) -> list[DueEntry]:
        return await self._connections.read(lambda conn: due_work_statements.due(conn, now_us, limit, partitions))

    async def _next_due(self, partitions: list[int] | None) -> int | None:
        return await self._connections.read(lambda conn: due_work_statements.next_due(conn, partitions))

    async def _mark_fired(self, keys: list[EncodedKey], fence: LeaseFence | None) -> int:
        def work(conn: sqlite3.Connection) -> int:
            if fence is not None:
                lease_statements.check_fence(conn, fence)
            return due_work_statements.mark_fired(conn, keys)

        return await self._connections.write(work)

    async def _rows_of_run(self, scope_key: str, run_id: str) -> list[DueRow]:
        return await self._connections.read(lambda conn: due_work_statements.rows_of_run(conn, scope_key, run_id))

    async def _forget_run(self, scope_key: str, run_id: str, fence: LeaseFence | None) -> int:
        def work(conn: sqlite3.Connection) -> int:
            if fence is not None:
                lease_statements.check_fence(conn, fence)
            return due_work_statements.forget_run(conn, scope_key, run_id)

        return await self._connections.write(work)
