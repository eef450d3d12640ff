"""`open_ledger`: choose and run the store for this process, composed of its ports.

The one place a ledger is put together: the store's connections (`sqlite.connections`, `postgres.connections`),
its ports on them (content rows, due work, leases, secret rows, recall view rows; each port's base beside the
event store in `ledger/`, its dialect in `sqlite/` or `postgres/`), one `OpenState` they all share, and the store
that runs them (`sqlite_ledger`, `postgres_ledger`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import trio

from .content import ContentObjects, LedgerContent
from .due_wake import DueWake
from .ledger import Ledger, LedgerPorts
from .open_state import OpenState
from .partitions import DEFAULT_PARTITIONS, Partitioning
from .postgres.connections import PostgresConnections
from .postgres.content_rows import PostgresContentRows
from .postgres.due_work import PostgresDueWork
from .postgres.iam_auth import DatabaseCredentials
from .postgres.leases import PostgresLeases
from .postgres.recall_views import PostgresRecallViewRows
from .postgres.secret_rows import PostgresSecretRows
from .postgres.store import PostgresLedger
from .projections import Projection, check_registrations
from .serving import ledger_supervisor
from .sqlite.connections import SqliteConnections
from .sqlite.content_rows import SqliteContentRows
from .sqlite.due_work import SqliteDueWork
from .sqlite.leases import SqliteLeases
from .sqlite.recall_views import SqliteRecallViewRows
from .sqlite.secret_rows import SqliteSecretRows
from .sqlite.store import SqliteLedger

LedgerStore = SqliteLedger | PostgresLedger
"""A store not yet started (`start`) or already stopped (`stop`, which may be called again). Between the two,
its actor is served by `serving.ledger_supervisor(store)`."""


def sqlite_ledger(
    path: Path,
    projections: Sequence[Projection] = (),
    content_objects: ContentObjects | None = None,
    partitions: int = DEFAULT_PARTITIONS,
) -> SqliteLedger:
    """The SQLite store of the file at `path` with its ports, not started."""
    connections = SqliteConnections(path)
    state = OpenState()
    partitioning = Partitioning(partitions)
    ports = LedgerPorts(
        content=LedgerContent(SqliteContentRows(connections), content_objects),
        due_work=SqliteDueWork(connections, state),
        leases=SqliteLeases(connections, state),
        secrets=SqliteSecretRows(connections, state),
        recall_views=SqliteRecallViewRows(connections, state),
        partitioning=partitioning,
        due_wake=DueWake(partitioning),
    )
    return SqliteLedger(connections, projections, ports, state)


def postgres_ledger(
    database_url: str,
    projections: Sequence[Projection] = (),
    database_credentials: DatabaseCredentials = "url",
    environ: Mapping[str, str] | None = None,
    content_objects: ContentObjects | None = None,
    partitions: int = DEFAULT_PARTITIONS,
) -> PostgresLedger:
    """The PostgreSQL store of `database_url` with its ports, not started (`ledger_store` for the arguments)."""
    connections = PostgresConnections(database_url)
    state = OpenState()
    partitioning = Partitioning(partitions)
    due_wake = DueWake(partitioning)
    ports = LedgerPorts(
        content=LedgerContent(PostgresContentRows(connections), content_objects),
        due_work=PostgresDueWork(connections, state, due_wake),
        leases=PostgresLeases(connections, state),
        secrets=PostgresSecretRows(connections, state),
        recall_views=PostgresRecallViewRows(connections, state),
        partitioning=partitioning,
        due_wake=due_wake,
    )
    return PostgresLedger(
        database_url,
        connections,
        projections,
        ports,
        state,
        credentials=database_credentials,
        environ=environ,
    )


def ledger_store(
    ledger_file: Path | None = None,
    database_url: str | None = None,
    projections: Sequence[Projection] = (),
    database_credentials: DatabaseCredentials = "url",
    environ: Mapping[str, str] | None = None,
    content_objects: ContentObjects | None = None,
    partitions: int = DEFAULT_PARTITIONS,
) -> LedgerStore:
    """The store `open_ledger` opens, not started: for an owner that starts and stops it itself (the server's
    supervision tree stops it as its last child).

    `database_credentials` (`DATABASE_CREDENTIALS`) says how the PostgreSQL store signs in: `url`, with the
    URL's password, or `aws-iam`, with a token signed for each connection from the AWS credentials in
    `environ` (the process's environment when None; see `postgres.iam_auth`).

    `content_objects` is the object store content is kept in with `CONTENT_STORE_URL`, and read from wherever
    a content row says its bytes are in one (`object_content.S3ContentObjects`); without it, content is kept
    in the ledger's database (see `content`)."""
    check_registrations(projections)
    if database_url is not None and ledger_file is not None:
        raise ValueError("give either a ledger file or a database URL, not both")
    if database_url is not None:
        return postgres_ledger(database_url, projections, database_credentials, environ, content_objects, partitions)
    if ledger_file is not None:
        return sqlite_ledger(Path(ledger_file), projections, content_objects, partitions)
    raise ValueError("a ledger needs a ledger file or a database URL")


@asynccontextmanager
async def open_ledger(
    ledger_file: Path | None = None,
    database_url: str | None = None,
    projections: Sequence[Projection] = (),
    database_credentials: DatabaseCredentials = "url",
    environ: Mapping[str, str] | None = None,
    content_objects: ContentObjects | None = None,
    partitions: int = DEFAULT_PARTITIONS,
) -> AsyncIterator[Ledger]:
    """Open the ledger for the life of the block (call from a Trio task).

    With `database_url` (`DATABASE_URL`, `postgresql://...`) the PostgreSQL store: its asyncio loop
    actor and pool start here and stop at the end of the block. Otherwise the SQLite store at `ledger_file`
    (`LEDGER_FILE`; its folder is made 0700 when missing, its files are 0600: see `files`): its writer
    actor starts here, and at the end of the block whatever is queued is committed before it stops. Either
    actor runs under the block's own `ledger` supervisor (`serving`). Setting both is an error. A store that
    cannot be opened raises `LedgerStartError`. `database_credentials`, `environ` and `content_objects`: see
    `ledger_store`. `partitions` (`WORKFLOW_PARTITIONS`) is the partition count a ledger made here keeps; one
    made before keeps its own (`Ledger.partitioning`).

    Every projection the runtime keeps is registered here; changed ones are rebuilt before the block
    starts.
    """
    ledger = ledger_store(
        ledger_file, database_url, projections, database_credentials, environ, content_objects, partitions
    )
    await ledger.start()
    try:
        async with trio.open_nursery() as nursery:
            supervisor = ledger_supervisor(ledger)
            await nursery.start(supervisor.run)
            try:
                yield ledger
            finally:
                with trio.CancelScope(shield=True):
                    await supervisor.stop()
    finally:
        with trio.CancelScope(shield=True):
            await ledger.stop()
