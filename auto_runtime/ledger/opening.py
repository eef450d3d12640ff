"""`open_ledger`: choose and run the store for this process."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import trio

from .content import ContentObjects
from .ledger import Ledger
from .postgres.iam_auth import DatabaseCredentials
from .postgres.store import PostgresLedger
from .projections import Projection, check_registrations
from .serving import ledger_supervisor
from .sqlite.store import SqliteLedger

LedgerStore = SqliteLedger | PostgresLedger
"""A store not yet started (`start`) or already stopped (`stop`, which may be called again). Between the two,
its actor is served by `serving.ledger_supervisor(store)`."""


def ledger_store(
    ledger_file: Path | None = None,
    database_url: str | None = None,
    projections: Sequence[Projection] = (),
    database_credentials: DatabaseCredentials = "url",
    environ: Mapping[str, str] | None = None,
    content_objects: ContentObjects | None = None,
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
        return PostgresLedger(
            database_url,
            projections,
            credentials=database_credentials,
            environ=environ,
            content_objects=content_objects,
        )
    if ledger_file is not None:
        return SqliteLedger(Path(ledger_file), projections, content_objects)
    raise ValueError("a ledger needs a ledger file or a database URL")


@asynccontextmanager
async def open_ledger(
    ledger_file: Path | None = None,
    database_url: str | None = None,
    projections: Sequence[Projection] = (),
    database_credentials: DatabaseCredentials = "url",
    environ: Mapping[str, str] | None = None,
    content_objects: ContentObjects | None = None,
) -> AsyncIterator[Ledger]:
    """Open the ledger for the life of the block (call from a Trio task).

    With `database_url` (`DATABASE_URL`, `postgresql://...`) the PostgreSQL store: its asyncio loop
    actor and pool start here and stop at the end of the block. Otherwise the SQLite store at `ledger_file`
    (`LEDGER_FILE`; its folder is made 0700 when missing, its files are 0600: see `files`): its writer
    actor starts here, and at the end of the block whatever is queued is committed before it stops. Either
    actor runs under the block's own `ledger` supervisor (`serving`). Setting both is an error. A store that
    cannot be opened raises `LedgerStartError`. `database_credentials`, `environ` and `content_objects`: see
    `ledger_store`.

    Every projection the runtime keeps is registered here; changed ones are rebuilt before the block
    starts.
    """
    ledger = ledger_store(ledger_file, database_url, projections, database_credentials, environ, content_objects)
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
