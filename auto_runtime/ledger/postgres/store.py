"""`PostgresLedger`: the store for `DATABASE_URL`, which several server processes may share.

All asyncpg work runs on the ledger's `LoopThread` (one per process): the pool is created there, and
each Trio call submits one coroutine holding a whole unit of work (one transaction). Appends are
correct across processes through row locks on `ledger_streams` and unique constraints; other
processes' appends wake this process's followers through LISTEN/NOTIFY (`notifier`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any, TypeVar

import asyncpg
import trio

from ..content import chunks_of, digest_of
from ..due_work import DueEntry, DueRow, EncodedChanges, EncodedKey
from ..faults import FaultLog
from ..lease import LeaseFence, LeaseState
from ..ledger import EncodedWrite, Ledger, SqlValue
from ..paging import Order, ScanRow, SortKey
from ..projections import Projection
from ..records import Record
from . import due_work_statements, lease_statements, statements
from .faults import full_disk_cause, server_of, start_error
from .loop_thread import LoopThread
from .notifier import Notifier
from .schema import ensure_projections, migrate

T = TypeVar("T")
POOL_SIZE = 10


async def _keep_session(conn: Any) -> None:
    """Return a connection to the pool without asyncpg's reset query (a round trip per release).

    asyncpg still rolls back a transaction left open. The ledger changes no session state on its
    pooled connections: no session advisory locks (only transaction-level ones), no cursors outside
    transactions, no LISTEN (the listener has a connection of its own), no SET.
    """


class PostgresContentStore:
    """Content kept in the ledger's PostgreSQL database (the `ContentStore` port)."""

    def __init__(self, ledger: PostgresLedger) -> None:
        self._ledger = ledger

    async def put(self, scope_key: str, data: bytes) -> str:
        digest = digest_of(data)
        chunks = chunks_of(data)
        await self._ledger.with_connection(lambda conn: statements.put_content(conn, scope_key, digest, chunks))
        return digest

    async def get(self, scope_key: str, sha256: str) -> bytes | None:
        return await self._ledger.with_connection(lambda conn: statements.get_content(conn, scope_key, sha256))


class PostgresLedger(Ledger):
    """The PostgreSQL store. Create with `open_ledger`; `start` and `stop` bracket its loop thread."""

    def __init__(self, database_url: str, projections: Sequence[Projection], pool_size: int = POOL_SIZE) -> None:
        super().__init__(projections, PostgresContentStore(self))
        self._url = database_url
        self._pool_size = pool_size
        self._thread: LoopThread | None = None
        self._pool: Any = None
        self._notifier = Notifier(self._wake_followers)
        self._token: trio.lowlevel.TrioToken | None = None
        self.faults = FaultLog(f"DATABASE_URL {server_of(database_url)}")

    async def start(self) -> None:
        """Start the loop thread, create the pool on it, migrate, rebuild changed projections, listen.

        A database that cannot be reached or used raises `LedgerStartError`, whose one line names
        `DATABASE_URL` and the cause, never the URL's password."""
        self._token = trio.lowlevel.current_trio_token()
        thread = LoopThread()
        thread.start()
        self._thread = thread

        async def prepare() -> None:
            self._pool = await asyncpg.create_pool(self._url, min_size=1, max_size=self._pool_size, reset=_keep_session)
            async with self._pool.acquire() as conn:
                await migrate(conn)
                self.rebuilt = await ensure_projections(conn, self.projections)
            await self._notifier.start(self._url)

        try:
            await thread.run(prepare())
        except BaseException as error:
            await self.stop()
            line = start_error(error, self._url)
            if line is not None:
                raise line from error
            raise

    async def stop(self) -> None:
        """Close the listener and the pool on the loop thread, then stop the thread."""
        self._closed = True
        thread, self._thread = self._thread, None
        if thread is None:
            return

        async def close() -> None:
            await self._notifier.close()
            if self._pool is not None:
                await self._pool.close()

        try:
            with trio.CancelScope(shield=True):
                await thread.run(close())
        finally:
            await trio.to_thread.run_sync(thread.stop)

    def _wake_followers(self) -> None:
        """A notification arrived (on the loop thread): wake this process's followers."""
        if self._token is not None:
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(self.appended.notify)

    async def with_connection(self, work: Callable[[Any], Awaitable[T]]) -> T:
        """Run `work(connection)` on the loop thread with a pooled connection (cancellable).

        The server's `disk_full` is a passing fault: `LedgerUnavailable` (nothing of the transaction was kept)."""
        thread = self._thread
        if thread is None:
            raise RuntimeError("the PostgreSQL ledger is not started")
        pool = self._pool

        async def unit() -> T:
            async with pool.acquire() as conn:
                return await work(conn)

        try:
            return await thread.run(unit())
        except asyncpg.PostgresError as error:
            cause = full_disk_cause(error)
            if cause is None:
                raise
            raise self.faults.refused(cause) from error

    async def _append(self, writes: list[EncodedWrite]) -> list[Record]:
        projections = self.projections

        async def work(conn: Any) -> list[Record]:
            appended = await statements.append_with_retry(conn, writes, projections)
            self._notifier.request()
            return appended

        records = await self.with_connection(work)
        self.faults.took()
        self.appended.notify()
        return records

    async def _read_stream(self, stream: str, from_position: int, limit: int | None) -> list[Record]:
        return await self.with_connection(lambda conn: statements.read_stream(conn, stream, from_position, limit))

    async def _stream_version(self, stream: str) -> int:
        return await self.with_connection(lambda conn: statements.stream_version(conn, stream))

    async def _read_record(self, scope_key: str, record_id: str) -> Record | None:
        return await self.with_connection(lambda conn: statements.read_record(conn, scope_key, record_id))

    async def _scan(
        self,
        scope_key: str,
        order: Order,
        after: SortKey | None,
        correlation_id: str | None,
        types: list[str] | None,
        since_us: int | None,
        size: int,
    ) -> list[ScanRow]:
        return await self.with_connection(
            lambda conn: statements.scan(conn, scope_key, order, after, correlation_id, types, since_us, size)
        )

    async def _load(self, keys: list[SortKey]) -> list[Record]:
        return await self.with_connection(lambda conn: statements.load(conn, keys))

    async def _read_forward(self, after: SortKey | None, limit: int) -> list[tuple[SortKey, Record]]:
        return await self.with_connection(lambda conn: statements.read_forward(conn, after, limit))

    async def _fetch(self, sql: str, params: tuple[SqlValue, ...]) -> list[dict[str, Any]]:
        return await self.with_connection(lambda conn: statements.fetch(conn, sql, params))

    async def _append_guarded(
        self, writes: list[EncodedWrite], changes: EncodedChanges, fence: LeaseFence | None
    ) -> list[Record]:
        projections = self.projections

        async def work(conn: Any) -> list[Record]:
            appended = await statements.append_with_retry(conn, writes, projections, changes, fence)
            self._notifier.request()
            return appended

        records = await self.with_connection(work)
        self.faults.took()
        self.appended.notify()
        return records

    async def _claim_lease(self, name: str, holder: str, lapse: timedelta) -> LeaseState:
        return await self.with_connection(lambda conn: lease_statements.claim(conn, name, holder, lapse))

    async def _release_lease(self, name: str, holder: str) -> bool:
        return await self.with_connection(lambda conn: lease_statements.release(conn, name, holder))

    async def _read_lease(self, name: str) -> LeaseState:
        return await self.with_connection(lambda conn: lease_statements.read(conn, name))

    async def _change_due_work(self, changes: EncodedChanges, fence: LeaseFence | None) -> None:
        await self.with_connection(lambda conn: due_work_statements.change(conn, changes, fence))

    async def _due(self, now_us: int, limit: int) -> list[DueEntry]:
        return await self.with_connection(lambda conn: due_work_statements.due(conn, now_us, limit))

    async def _next_due(self) -> int | None:
        return await self.with_connection(due_work_statements.next_due)

    async def _mark_fired(self, keys: list[EncodedKey], fence: LeaseFence | None) -> int:
        return await self.with_connection(lambda conn: due_work_statements.mark_fired(conn, keys, fence))

    async def _due_rows_of_run(self, scope_key: str, run_id: str) -> list[DueRow]:
        return await self.with_connection(lambda conn: due_work_statements.rows_of_run(conn, scope_key, run_id))

    async def _forget_due_run(self, scope_key: str, run_id: str, fence: LeaseFence | None) -> int:
        return await self.with_connection(lambda conn: due_work_statements.forget_run(conn, scope_key, run_id, fence))
