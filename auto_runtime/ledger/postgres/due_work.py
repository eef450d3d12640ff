"""`PostgresDueWork`: the due-work port (`..due_work`) on the PostgreSQL database: each change, mark and removal
in one transaction of its own with the fence checked inside it (`due_work_statements`); a change that arms work
due soon for a partition held by another server wakes the servers once it committed (`..due_wake`)."""

from __future__ import annotations

from ..due_wake import DueWake
from ..due_work import DueEntry, DueRow, DueWork, EncodedChanges, EncodedKey
from ..lease import LeaseFence
from ..open_state import OpenState
from . import due_work_statements
from .connections import PostgresConnections, Unit


class PostgresDueWork(DueWork):
    def __init__(self, connections: PostgresConnections, open_state: OpenState, due_wake: DueWake) -> None:
        super().__init__(open_state)
        self._connections = connections
        self._due_wake = due_wake

    async def _change(self, changes: EncodedChanges, fence: LeaseFence | None) -> None:
        work = Unit(
            lambda conn: due_work_statements.change(conn, changes, fence), due_recorded=self._due_wake.wakes(changes)
        )
        await self._connections.ask(work)

    async def _due(self, now_us: int, limit: int, partitions: list[int] | None) -> list[DueEntry]:
        return await self._connections.with_connection(
            lambda conn: due_work_statements.due(conn, now_us, limit, partitions)
        )

    async def _next_due(self, partitions: list[int] | None) -> int | None:
        return await self._connections.with_connection(lambda conn: due_work_statements.next_due(conn, partitions))

    async def _mark_fired(self, keys: list[EncodedKey], fence: LeaseFence | None) -> int:
        return await self._connections.with_connection(lambda conn: due_work_statements.mark_fired(conn, keys, fence))

    async def _rows_of_run(self, scope_key: str, run_id: str) -> list[DueRow]:
        return await self._connections.with_connection(
            lambda conn: due_work_statements.rows_of_run(conn, scope_key, run_id)
        )

    async def _forget_run(self, scope_key: str, run_id: str, fence: LeaseFence | None) -> int:
        return await self._connections.with_connection(
            lambda conn: due_work_statements.forget_run(conn, scope_key, run_id, fence)
        )
