"""`SqliteLedger`: the default store, one SQLite file (`LEDGER_FILE`) per server process.

Writes go through the one writer, a thread actor (`writer`) whose lives the ledger's supervisor serves
(`actor_spec`, see `serving`); reads run on a small pool of reader connections (`query_only`, WAL lets them
read while the writer commits) in Trio worker threads. Only one process may use a file at a time, and the
store holds the file's lock (`file_lock`) from start to stop to make sure of it.
"""

from __future__ import annotations

import os
import queue
import sqlite3
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import trio

from auto_runtime.actors.thread_actor import ThreadActorRef
from auto_runtime.actors.thread_bridge import TrioPort
from auto_runtime.metrics import reader_waits
from auto_runtime.supervision.child_spec import ChildSpec

from ..content import ContentObjects, KeptContent, LedgerContent, SpooledContent, chunks_of
from ..due_work import DueEntry, DueRow, EncodedChanges, EncodedKey
from ..faults import FaultLog
from ..files import private_sqlite_file
from ..lease import LeaseFence, LeaseState
from ..ledger import EncodedWrite, Ledger, SqlValue
from ..migrations import SchemaTooNew
from ..paging import Order, ScanRow, SortKey
from ..projections import Projection
from ..recall_views import Expected, ViewRow
from ..records import Record
from ..secret_rows import SecretRow
from ..serving import ACTOR_MAILBOX, ACTOR_SHUTDOWN_SECONDS, ask_store_actor
from . import due_work_statements, lease_statements, recall_view_statements, secret_statements, statements
from .file_lock import LedgerFileInUse, hold_ledger_file
from .schema import connect_writer, ensure_projections, migrate
from .start_errors import in_use, start_error
from .statements import Append
from .writer import SqliteWriter, Write, WriterMessage

T = TypeVar("T")
READERS = 4


class _ReaderPool:
    """Up to `READERS` read-only connections, each used by one worker thread at a time."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._idle: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self._all: list[sqlite3.Connection] = []
        self._limiter = trio.CapacityLimiter(READERS)

    def _connection(self) -> sqlite3.Connection:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA query_only=ON")
            conn.execute("PRAGMA busy_timeout=10000")
            self._all.append(conn)
            return conn

    def _call(self, work: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._connection()
        try:
            return work(conn)
        finally:
            self._idle.put(conn)

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        reader_waits("sqlite", self._limiter.available_tokens)
        return await trio.to_thread.run_sync(self._call, work, limiter=self._limiter)

    def close(self) -> None:
        for conn in self._all:
            conn.close()


class SqliteContentRows:
    """The content table of the ledger's SQLite file (the `ContentRows` of its `LedgerContent`)."""

    def __init__(self, ledger: SqliteLedger) -> None:
        self._ledger = ledger

    async def find(self, scope_key: str, sha256: str) -> KeptContent | None:
        return await self._ledger.readers.run(lambda conn: statements.get_content(conn, scope_key, sha256))

    async def keep_in_ledger(self, scope_key: str, sha256: str, data: bytes) -> None:
        chunks = chunks_of(data)
        await self._ledger.write(lambda conn: statements.put_content(conn, scope_key, sha256, chunks))

    async def keep_spooled_in_ledger(self, scope_key: str, spooled: SpooledContent) -> None:
        await self._ledger.write(lambda conn: statements.put_spooled_content(conn, scope_key, spooled))

    async def drop_scope(self, scope_key: str) -> list[str]:
        return await self._ledger.write(lambda conn: statements.drop_content(conn, scope_key))

    async def keep_elsewhere(self, scope_key: str, sha256: str, size: int, location: str) -> None:
        await self._ledger.write(lambda conn: statements.put_content_reference(conn, scope_key, sha256, size, location))


class SqliteLedger(Ledger):
    """The SQLite store. Create with `open_ledger`; `start` opens the file, the ledger's supervisor serves the
    writer (`actor_spec`), `stop` commits what is still queued and closes every connection."""

    sole_writer = True

    def __init__(
        self, path: Path, projections: Sequence[Projection], content_objects: ContentObjects | None = None
    ) -> None:
        super().__init__(projections, LedgerContent(SqliteContentRows(self), content_objects))
        self.path = path
        self.readers = _ReaderPool(str(path))
        self.faults = FaultLog(f"LEDGER_FILE {path}")
        self.writer_ref = ThreadActorRef[WriterMessage, Any]("writer", ACTOR_MAILBOX, stack_size=0)
        self._opened: list[sqlite3.Connection] = []
        self._port: TrioPort | None = None
        self._writer: SqliteWriter | None = None
        self._lock: int | None = None
        """The descriptor holding the file's lock, from `start` to `stop`."""

    async def start(self) -> None:
        """Create the folder, migrate the schema (see `migrations`) and rebuild changed projections, on a
        connection the writer's first life then takes.

        The folder and files are made private (`files`). A file that cannot be made or opened, or whose schema
        a newer release migrated, raises `LedgerStartError`, whose one line names `LEDGER_FILE` and the cause."""
        self._port = TrioPort()
        path = self.path

        def opened() -> sqlite3.Connection:
            try:
                private_sqlite_file(path)
                if self._lock is None:
                    self._lock = hold_ledger_file(path)
                conn = connect_writer(str(path))
            except LedgerFileInUse:
                raise in_use(path) from None
            except (OSError, sqlite3.Error) as error:
                raise start_error(error, path) from error
            try:
                self.schema = migrate(conn)
            except (sqlite3.Error, SchemaTooNew) as error:
                conn.close()
                raise start_error(error, path) from error
            return conn

        def prepare() -> sqlite3.Connection:
            conn = opened()
            try:
                self.rebuilt = ensure_projections(conn, self.projections)
            except sqlite3.Error as error:
                conn.close()
                raise start_error(error, path) from error
            except BaseException:
                conn.close()
                raise
            return conn

        try:
            self._opened.append(await trio.to_thread.run_sync(prepare))
        except BaseException:
            self._let_go_of_the_file()  # a start that failed leaves the file to the next one
            raise

    def actor_spec(self) -> ChildSpec:
        """The ledger supervisor's child: one writer life at a time (see `writer`)."""
        return self.writer_ref.child_spec(self._new_writer, shutdown=ACTOR_SHUTDOWN_SECONDS)

    def _new_writer(self) -> SqliteWriter:
        """A writer life (built in its thread): the first takes the opened connection, later ones open their own."""
        if self._port is None:
            raise RuntimeError("the SQLite ledger is not started")
        path = str(self.path)
        writer = SqliteWriter(
            self._opened.pop() if self._opened else None,
            self.projections,
            self.appended.notify,
            connect=lambda: connect_writer(path),
            folder=self.path.parent,
            faults=self.faults,
        )
        self._writer = writer
        return writer

    async def stop(self) -> None:
        """Close the writer's address, commit what is still queued (with a last life when the supervisor no
        longer serves one) and close every connection. Call after the ledger's supervisor stopped."""
        self._closed = True
        ref = self.writer_ref
        ref.stop()
        if ref.pending and not ref.serving and self._port is not None:
            with trio.CancelScope(shield=True):
                await ref.serve_life(self._new_writer)
        for conn in self._opened:
            conn.close()
        self._opened.clear()
        self.readers.close()
        self._let_go_of_the_file()

    def _let_go_of_the_file(self) -> None:
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    @property
    def writer(self) -> SqliteWriter:
        """The writer's current (or last) life."""
        if self._writer is None:
            raise RuntimeError("the SQLite ledger's writer has not started")
        return self._writer

    async def write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run `work` on the writer thread inside a group-committed transaction; return after commit."""
        result: T = await ask_store_actor(self.writer_ref, Write(work))
        return result

    async def _append(self, writes: list[EncodedWrite]) -> list[Record]:
        records: list[Record] = await ask_store_actor(self.writer_ref, Append(writes))
        return records

    async def _put_secret(self, row: SecretRow) -> None:
        await self.write(lambda conn: secret_statements.put(conn, row))

    async def _get_secret(self, scope_key: str, name: str) -> SecretRow | None:
        return await self.readers.run(lambda conn: secret_statements.get(conn, scope_key, name))

    async def _forget_secret(self, scope_key: str, name: str) -> bool:
        return await self.write(lambda conn: secret_statements.forget(conn, scope_key, name))

    async def _every_secret(self) -> list[SecretRow]:
        return await self.readers.run(secret_statements.every)

    async def _replace_secret(self, row: SecretRow, sealed: bytes) -> bool:
        return await self.write(lambda conn: secret_statements.replace(conn, row, sealed))

    async def _read_stream(self, stream: str, from_position: int, limit: int | None) -> list[Record]:
        return await self.readers.run(lambda conn: statements.read_stream(conn, stream, from_position, limit))

    async def _stream_version(self, stream: str) -> int:
        return await self.readers.run(lambda conn: statements.stream_version(conn, stream))

    async def _read_record(self, scope_key: str, record_id: str) -> Record | None:
        return await self.readers.run(lambda conn: statements.read_record(conn, scope_key, record_id))

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
        return await self.readers.run(
            lambda conn: statements.scan(conn, scope_key, order, after, correlation_id, types, since_us, size)
        )

    async def _load(self, keys: list[SortKey]) -> list[Record]:
        return await self.readers.run(lambda conn: statements.load(conn, keys))

    async def _read_forward(self, after: SortKey | None, limit: int) -> list[tuple[SortKey, Record]]:
        return await self.readers.run(lambda conn: statements.read_forward(conn, after, limit))

    async def _write_recall_view(self, row: ViewRow, expected: Expected | None, fence: LeaseFence | None) -> bool:
        def work(conn: sqlite3.Connection) -> bool:
            if fence is not None:
                lease_statements.check_fence(conn, fence)
            return recall_view_statements.write(conn, row, expected)

        return await self.write(work)

    async def _drop_recall_view(self, org: str, playbook: str, name: str, fence: LeaseFence | None) -> None:
        def work(conn: sqlite3.Connection) -> None:
            if fence is not None:
                lease_statements.check_fence(conn, fence)
            recall_view_statements.drop(conn, org, playbook, name)

        await self.write(work)

    async def _fetch(self, sql: str, params: tuple[SqlValue, ...]) -> list[dict[str, Any]]:
        return await self.readers.run(lambda conn: statements.fetch(conn, sql, params))

    async def _append_guarded(
        self, writes: list[EncodedWrite], changes: EncodedChanges, fence: LeaseFence | None
    ) -> list[Record]:
        records: list[Record] = await ask_store_actor(self.writer_ref, Append(writes, changes, fence))
        return records

    async def _claim_lease(self, name: str, holder: str, lapse: timedelta) -> LeaseState:
        return await self.write(lambda conn: lease_statements.claim(conn, name, holder, lapse))

    async def _release_lease(self, name: str, holder: str) -> bool:
        return await self.write(lambda conn: lease_statements.release(conn, name, holder))

    async def _read_lease(self, name: str) -> LeaseState:
        return await self.readers.run(lambda conn: lease_statements.read(conn, name))

    async def _change_due_work(self, changes: EncodedChanges, fence: LeaseFence | None) -> None:
        def work(conn: sqlite3.Connection) -> None:
            if fence is not None:
                lease_statements.check_fence(conn, fence)
            due_work_statements.apply_changes(conn, changes)

        await self.write(work)

    async def _due(self, now_us: int, limit: int) -> list[DueEntry]:
        return await self.readers.run(lambda conn: due_work_statements.due(conn, now_us, limit))

    async def _next_due(self) -> int | None:
        return await self.readers.run(due_work_statements.next_due)

    async def _mark_fired(self, keys: list[EncodedKey], fence: LeaseFence | None) -> int:
        def work(conn: sqlite3.Connection) -> int:
            if fence is not None:
                lease_statements.check_fence(conn, fence)
            return due_work_statements.mark_fired(conn, keys)

        return await self.write(work)

    async def _due_rows_of_run(self, scope_key: str, run_id: str) -> list[DueRow]:
        return await self.readers.run(lambda conn: due_work_statements.rows_of_run(conn, scope_key, run_id))

    async def _forget_due_run(self, scope_key: str, run_id: str, fence: LeaseFence | None) -> int:
        def work(conn: sqlite3.Connection) -> int:
            if fence is not None:
                lease_statements.check_fence(conn, fence)
            return due_work_statements.forget_run(conn, scope_key, run_id)

        return await self.write(work)
