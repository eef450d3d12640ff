"""`SqliteLedger`: the default store, one SQLite file (`LEDGER_FILE`) per server process.

Writes go through the one writer, a thread actor (`writer`) whose lives the ledger's supervisor serves
(`actor_spec`, see `serving`); reads run on a small pool of reader connections (`query_only`, WAL lets them
read while the writer commits) in Trio worker threads. Both are the file's `SqliteConnections`, which the store
shares with its ports (`opening` composes them). Only one process may use a file at a time, and the store holds
the file's lock (`file_lock`) from start to stop to make sure of it.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import trio

from auto_runtime.actors.thread_bridge import TrioPort
from auto_runtime.supervision.child_spec import ChildSpec

from ..due_work import EncodedChanges
from ..faults import FaultLog
from ..files import private_sqlite_file
from ..lease import LeaseFence
from ..ledger import EncodedWrite, Ledger, LedgerPorts, SqlValue
from ..migrations import SchemaTooNew
from ..open_state import OpenState
from ..paging import Order, ScanRow, SortKey
from ..projections import Projection
from ..records import Record
from ..serving import ACTOR_SHUTDOWN_SECONDS
from . import statements
from .connections import ReaderPool, SqliteConnections
from .file_lock import LedgerFileInUse, hold_ledger_file
from .schema import connect_writer, ensure_projections, fix_partitions, migrate
from .start_errors import in_use, start_error
from .statements import Append
from .writer import SqliteWriter

T = TypeVar("T")


class SqliteLedger(Ledger):
    """The SQLite store. Create with `open_ledger` (or `opening.sqlite_ledger`); `start` opens the file, the
    ledger's supervisor serves the writer (`actor_spec`), `stop` commits what is still queued and closes every
    connection."""

    sole_writer = True

    def __init__(
        self,
        connections: SqliteConnections,
        projections: Sequence[Projection],
        ports: LedgerPorts,
        open_state: OpenState,
    ) -> None:
        super().__init__(projections, ports, open_state)
        self.connections = connections
        self.path = connections.path
        self.readers: ReaderPool = connections.readers
        self.writer_ref = connections.writer_ref
        self.faults = FaultLog(f"LEDGER_FILE {self.path}")
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
                self.ports.partitioning.fix(fix_partitions(conn, self.ports.partitioning.asked))
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
        self.open_state.close()
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
        return await self.connections.write(work)

    async def _append(self, writes: list[EncodedWrite]) -> list[Record]:
        records: list[Record] = await self.connections.ask(Append(writes))
        return records

    async def _read_stream(self, stream: str, from_position: int, limit: int | None) -> list[Record]:
        return await self.connections.read(lambda conn: statements.read_stream(conn, stream, from_position, limit))

    async def _stream_version(self, stream: str) -> int:
        return await self.connections.read(lambda conn: statements.stream_version(conn, stream))

    async def _read_record(self, scope_key: str, record_id: str) -> Record | None:
        return await self.connections.read(lambda conn: statements.read_record(conn, scope_key, record_id))

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
        return await self.connections.read(
            lambda conn: statements.scan(conn, scope_key, order, after, correlation_id, types, since_us, size)
        )

    async def _load(self, keys: list[SortKey]) -> list[Record]:
        return await self.connections.read(lambda conn: statements.load(conn, keys))

    async def _read_forward(self, after: SortKey | None, limit: int) -> list[tuple[SortKey, Record]]:
        return await self.connections.read(lambda conn: statements.read_forward(conn, after, limit))

    async def _fetch(self, sql: str, params: tuple[SqlValue, ...]) -> list[dict[str, Any]]:
        return await self.connections.read(lambda conn: statements.fetch(conn, sql, params))

    async def _append_guarded(
        self, writes: list[EncodedWrite], changes: EncodedChanges, fence: LeaseFence | None
    ) -> list[Record]:
        records: list[Record] = await self.connections.ask(Append(writes, changes, fence))
        return records
