"""`PostgresLedger`: the store for `DATABASE_URL`, which several server processes may share.

All asyncpg work runs on the ledger's loop actor (`loop_actor`, one per process): each life of it is an asyncio loop
thread that creates its own pool and listener (`PostgresLoop`), and each Trio call asks it to run one unit of work (a
whole transaction) on a pooled connection, as a task of its own; cancelling the call cancels the task. The ledger's
supervisor serves the actor's lives (`actor_spec`, see `serving`). Appends go through the life's `AppendBatcher`
(`batcher`), which sends those asked together in one statement. Appends are correct across processes through row locks
on `ledger_streams` and unique constraints; other processes' appends wake this process's followers through LISTEN/NOTIFY
(`notifier`), and a write arming due work for a partition another server holds wakes that holder the same way once it
committed (`..due_wake`). The loop's address is the database's `PostgresConnections`, which the store shares with its
ports (`opening` composes them).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import asyncpg
import trio

from auto_runtime.actors.errors import ActorCrashedError
from auto_runtime.actors.loop_actor import LoopActor, LoopActorRef
from auto_runtime.actors.thread_bridge import TrioPort
from auto_runtime.metrics import reader_waits
from auto_runtime.supervision.child_spec import ChildSpec

from ..due_work import EncodedChanges
from ..feed import AppendSignal
from ..lease import LeaseFence
from ..ledger import EncodedWrite, Ledger, LedgerPorts, SqlValue
from ..open_state import OpenState
from ..paging import Order, ScanRow, SortKey
from ..projections import Projection
from ..records import Record
from ..serving import ACTOR_SHUTDOWN_SECONDS
from . import statements
from .batcher import AppendBatcher
from .connections import LoopMessage, PostgresConnections, Unit
from .faults import start_error
from .iam_auth import DatabaseCredentials, sign_in_options
from .notifier import BEGUN_CHANNEL, CHANNEL, DUE_CHANNEL, Notifier
from .schema import ensure_projections, fix_partitions, migrate
from .statements import Append

T = TypeVar("T")
POOL_SIZE = 10


async def _keep_session(conn: Any) -> None:
    """Return a connection to the pool without asyncpg's reset query (a round trip per release).

    asyncpg still rolls back a transaction left open. The ledger changes no session state on its
    pooled connections: no session advisory locks (only transaction-level ones), no cursors outside
    transactions, no LISTEN (the listener has a connection of its own), no SET.
    """


class PostgresLoop(LoopActor[LoopMessage, Any]):
    """One life of the loop actor: its pool, its append batcher and (when `on_notify` is given) its listener,
    on its own loop."""

    def __init__(
        self,
        url: str,
        pool_size: int,
        on_notify: Callable[[str, str], None] | None,
        projections: Sequence[Projection] = (),
        sign_in: Mapping[str, Any] | None = None,
    ) -> None:
        self._url = url
        self._pool_size = pool_size
        self._on_notify = on_notify
        self._projections = projections
        self._sign_in = dict(sign_in or {})
        self._pool: Any = None
        self._notifier: Notifier | None = None
        self._batcher: AppendBatcher | None = None

    async def on_start(self) -> None:
        self._pool = await asyncpg.create_pool(
            self._url, min_size=1, max_size=self._pool_size, reset=_keep_session, **self._sign_in
        )
        self._batcher = AppendBatcher(self._pool, self._projections, self._appended)
        if self._on_notify is not None:
            notifier = Notifier(self._on_notify)
            try:
                await notifier.start(self._url, self._sign_in)
            except BaseException:
                await self._pool.close()
                raise
            self._notifier = notifier
            for channel in (CHANNEL, DUE_CHANNEL):  # what came while no listener ran: followers read again
                self._on_notify(channel, "")

    def _appended(self) -> None:
        """Something was appended: ask the listener to tell the other processes."""
        if self._notifier is not None:
            self._notifier.request()

    def _due_recorded(self) -> None:
        """Due work for another partition's holder committed: ask the listener to wake the servers (`DUE_CHANNEL`)."""
        if self._notifier is not None:
            self._notifier.request(DUE_CHANNEL)

    @property
    def batcher(self) -> AppendBatcher:
        """This life's append batcher (after `on_start`)."""
        if self._batcher is None:
            raise RuntimeError("the PostgreSQL loop has not started")
        return self._batcher

    async def receive(self, message: LoopMessage) -> Any:
        if isinstance(message, Append):
            records = await self.batcher.append(message)  # raises the append's refusal: past it, it committed
            if message.due_recorded:
                self._due_recorded()
            return records
        reader_waits("postgres", self._pool.get_idle_size() + self._pool.get_max_size() - self._pool.get_size())
        async with self._pool.acquire() as conn:
            result = await message.work(conn)
        if message.notify:
            self._appended()
        if message.due_recorded:
            self._due_recorded()
        if message.begun and self._notifier is not None:
            self._notifier.request_begun(message.begun)
        return result

    async def on_stop(self) -> None:
        if self._batcher is not None:
            self._batcher.close()
        if self._notifier is not None:
            await self._notifier.close()
        await self._pool.close()


class PostgresLedger(Ledger):
    """The PostgreSQL store. Create with `open_ledger` (or `opening.postgres_ledger`); `start` opens the database
    (migrates, rebuilds changed projections), the ledger's supervisor serves the loop actor (`actor_spec`), `stop`
    closes its address.

    `credentials` is `DATABASE_CREDENTIALS`: `url` signs in with the URL's password, `aws-iam` with a token
    signed for each connection from the AWS credentials in `environ` (see `iam_auth`)."""

    def __init__(
        self,
        database_url: str,
        connections: PostgresConnections,
        projections: Sequence[Projection],
        ports: LedgerPorts,
        open_state: OpenState,
        pool_size: int = POOL_SIZE,
        credentials: DatabaseCredentials = "url",
        environ: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(projections, ports, open_state)
        self.appends_heard = AppendSignal()
        self._url = database_url
        self.connections = connections
        self._pool_size = pool_size
        self._credentials: DatabaseCredentials = credentials
        self._environ = dict(os.environ if environ is None else environ)
        self._sign_in: dict[str, Any] = {}
        self.loop_ref = connections.loop_ref
        self._loop: PostgresLoop | None = None
        self._port: TrioPort | None = None
        self.faults = connections.faults

    async def start(self) -> None:
        """Migrate and rebuild changed projections, on a loop of its own that ends once they are done.

        A database that cannot be reached or used, or whose schema a newer release migrated, raises
        `LedgerStartError`, whose one line names `DATABASE_URL` and the cause, never the URL's password."""
        self._port = TrioPort()
        self._sign_in = sign_in_options(self._url, self._credentials, self._environ)
        try:
            await self._open_once()
        except BaseException as error:
            line = start_error(error, self._url)
            if line is not None:
                raise line from error
            raise

    async def _open_once(self) -> None:
        opening = LoopActorRef[LoopMessage, Any]("loop-opening", 1)
        failures: list[BaseException] = []

        async def prepare(conn: Any) -> None:
            self.schema = await migrate(conn)
            partitioning = self.ports.partitioning
            partitioning.fix(await fix_partitions(conn, partitioning.asked))
            self.rebuilt = await ensure_projections(conn, self.projections)

        async with trio.open_nursery() as nursery:

            async def serve() -> None:
                try:
                    await opening.serve_life(lambda: PostgresLoop(self._url, 1, None, sign_in=self._sign_in))
                except ActorCrashedError as crash:
                    failures.append(crash.error)
                    nursery.cancel_scope.cancel()

            nursery.start_soon(serve)
            try:
                await opening.ask(Unit(prepare), timeout=None)
            except Exception as error:
                failures.append(error)
            finally:
                opening.stop()
        if failures:
            raise failures[0]

    def actor_spec(self) -> ChildSpec:
        """The ledger supervisor's child: one loop life at a time."""
        return self.loop_ref.child_spec(self._new_loop, shutdown=ACTOR_SHUTDOWN_SECONDS)

    def _new_loop(self) -> PostgresLoop:
        loop = PostgresLoop(self._url, self._pool_size, self._wake_followers, self.projections, self._sign_in)
        self._loop = loop
        return loop

    @property
    def loop(self) -> PostgresLoop:
        """The loop actor's current (or last) life."""
        if self._loop is None:
            raise RuntimeError("the PostgreSQL ledger's loop has not started")
        return self._loop

    async def stop(self) -> None:
        """Close the loop's address; work still queued runs on a last life when the supervisor serves none."""
        self.open_state.close()
        ref = self.loop_ref
        ref.stop()
        if ref.pending and not ref.serving and self._port is not None:
            with trio.CancelScope(shield=True):
                await ref.serve_life(self._new_loop)

    async def tell_runs_begun(self, run_ids: Sequence[str]) -> None:
        """NOTIFY on `BEGUN_CHANNEL` naming `run_ids` (folded with others asked meanwhile); every server's listener,
        this one's included, wakes its `runs_begun` waiters of those runs."""
        self._check_open()
        if run_ids:
            await self.connections.ask(Unit(_nothing, begun=tuple(run_ids)))

    def _wake_followers(self, channel: str, payload: str) -> None:
        """A notification arrived (on the loop thread): wake this process's followers of its channel (the waiters
        of the runs it names, for `BEGUN_CHANNEL`)."""
        if self._port is None:
            return
        if channel == BEGUN_CHANNEL:
            self._port.call_soon(self.runs_begun.notify, payload.split(","))
        else:
            self._port.call_soon(self.due_recorded.notify if channel == DUE_CHANNEL else self._heard_appends)

    def _heard_appends(self) -> None:
        self.appends_heard.notify()
        self.appended.notify()

    async def with_connection(self, work: Callable[[Any], Awaitable[T]], *, notify: bool = False) -> T:
        """Run `work(connection)` on the loop with a pooled connection (cancellable); see `connections`."""
        return await self.connections.with_connection(work, notify=notify)

    async def _append(self, writes: list[EncodedWrite]) -> list[Record]:
        records: list[Record] = await self.connections.ask(Append(writes))
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
        wakes = self.ports.due_wake.wakes(changes)
        records: list[Record] = await self.connections.ask(Append(writes, changes, fence, due_recorded=wakes))
        self.faults.took()
        self.appended.notify()
        return records


async def _nothing(conn: Any) -> None:
    """The work of a unit sent only for its notification (`PostgresLedger.tell_runs_begun`)."""
