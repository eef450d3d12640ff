"""The SQLite store's one writer: a thread actor (`ThreadActor`) that group-commits whatever work is queued.

Trio tasks ask it (`Append`, and `Write`: a function of the writer's connection) through its
`ThreadActorRef`, the ledger's bounded mailbox (a full one raises `MailboxFull`, which the store turns into
`LedgerUnavailable`). Its thread blocks for the first message, then takes whatever else is already queued, up
to `MAX_BATCH` messages (group commit; `receive_batch`), runs them in one `BEGIN IMMEDIATE` transaction,
commits (`synchronous=FULL`: durable once COMMIT returns) and only then answers the batch's askers, with one
hop to Trio per batch. A failed COMMIT fails every message of the batch. Messages whose asker was cancelled
before they ran are skipped (`skips_abandoned`).

When the last batch was large (`FILL_FROM` messages or more) and fewer are queued now, the thread waits up
to `FILL_SECONDS` for as many as the last batch held (`batch_fill`): under load the askers of a batch just
answered are still making their next appends, and without the wait the first of them would be committed
alone and the rest in the next commit (bimodal batches). A lone appender's last batch holds one message,
so its appends never wait.

Appends take a fast path: the batch's version checks (and the fences of guarded appends) are decided in
memory from one read of the streams' versions (this thread is the only writer), and its records are
written with one `executemany` (a stream's version is its largest position, so nothing else is written for
it), so the thread releases and retakes the GIL a few times per batch rather than several times per append
(under load the Trio thread holds the GIL, and each retake waits for it). When that fails (a duplicate record
id, a projection raising), the appends (which run first in the transaction) are undone by rolling back and
beginning again, and run again one at a time, each in a savepoint of its own, so one failing append is
refused alone. Other work always runs one unit per savepoint.

A full disk (`faults.full_disk_cause`) is a passing fault, never the end of the life: it fails the whole
batch with `LedgerUnavailable` (SQLite may have rolled the transaction back already, so no savepoint of it
is left to return to), the transaction is rolled back, and a connection that cannot be rolled back is closed
and opened again before the next batch. The actor goes on taking work, and the first batch that commits
once space returns is durable as any other. No `Exception` of a batch ends the life.

Anything else that escapes a batch (a `BaseException`: a projection or a statement broken beyond an error)
ends the life: the batch is rolled back and the connection closed, the batch's askers get the error, and the
ledger's supervisor starts a new life with a new connection and the same mailbox, so what was queued behind
the batch is kept.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, Final

import outcome

from auto_runtime.actors.thread_actor import BatchFill, ThreadActor
from auto_runtime.metrics import commit

from ..faults import FaultLog
from ..projections import Projection
from . import statements
from .faults import full_disk_cause
from .statements import Append

log = logging.getLogger("auto_runtime.ledger")

MAX_BATCH: Final = 64
FILL_FROM: Final = 4
"""The smallest last batch that makes the writer wait for the next one to fill: below it the load is one or a
few appenders at a time, whose appends would only wait."""
FILL_SECONDS: Final = 0.001
"""The longest the writer waits for a batch to fill. About the time the Trio thread takes to answer a full
batch's askers and take their next appends, and a few commits' worth on this kind of disk (an fsync of the WAL
costs 0.2 ms and up): longer would add more latency to the waiting appends than the commits it saves."""


@dataclass(frozen=True, slots=True)
class Write:
    """Run `work` on the writer's connection inside the batch's transaction; the reply is what it returns."""

    work: Callable[[sqlite3.Connection], Any]


WriterMessage = Append | Write

_Outcome = outcome.Outcome[Any]


class _BatchAborted(Exception):
    """A unit met an error that leaves no transaction to go on with (a full disk): the whole batch fails."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class SqliteWriter(ThreadActor[WriterMessage, Any]):
    """One life of the writer: owns its connection from its construction until `on_stop` or a crash.

    `connection` is the connection for this life (the one the store opened and migrated, for the first life),
    or None to open one with `connect` at the first batch (an error opening it fails that batch, not the life);
    `connect` also opens a new one when a fault left the current one unusable;
    `folder` is where the ledger file lives (its free space tells a full disk from another I/O error).
    `after_commit` runs on the Trio thread after a batch that committed something, in the hop that answers
    the batch's askers (`after_batch`).
    """

    max_batch: ClassVar[int] = MAX_BATCH
    skips_abandoned: ClassVar[bool] = True

    def __init__(
        self,
        connection: sqlite3.Connection | None,
        projections: Sequence[Projection],
        after_commit: Callable[[], None],
        *,
        connect: Callable[[], sqlite3.Connection],
        folder: Path,
        faults: FaultLog,
    ) -> None:
        self._conn = connection
        self._connect = connect
        self._folder = folder
        self._faults = faults
        self._projections = projections
        self._after_commit = after_commit
        self.batches = 0
        self.units = 0
        self._last_batch = 0
        self._committed = False

    def receive(self, message: WriterMessage) -> Any:
        """One message as a batch of one."""
        return self.receive_batch([message])[0].unwrap()

    def after_batch(self) -> Callable[[], object] | None:
        """`after_commit` when the batch just handled committed something."""
        committed, self._committed = self._committed, False
        return self._after_commit if committed else None

    def batch_fill(self, taken: int) -> BatchFill | None:
        """Wait for as many messages as the last batch held when it was large (see the module docstring)."""
        expected = self._last_batch
        if expected < FILL_FROM or taken >= expected:
            return None
        return BatchFill(expected, FILL_SECONDS)

    def receive_batch(self, messages: Sequence[WriterMessage]) -> list[_Outcome]:
        """Commit the batch in one transaction and give each message its outcome (see the module docstring)."""
        self._last_batch = len(messages)
        try:
            with commit("sqlite", len(messages)):
                return self._commit(messages)
        except Exception as error:  # the life outlives every batch
            log.exception("the SQLite writer failed a batch outside its transaction")
            return [outcome.Error(error) for _ in messages]
        except BaseException:
            self._discard_connection()
            raise

    def on_stop(self) -> None:
        """Close the connection (what was queued was committed before the life was asked to end)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _discard_connection(self) -> None:
        """Roll back and close the connection of a life that is ending in a crash (the next life opens its own)."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        with contextlib.suppress(sqlite3.Error):
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        with contextlib.suppress(sqlite3.Error):
            conn.close()

    def _connection(self) -> sqlite3.Connection:
        """The writer connection, opened again when a fault closed it (raises what opening raises)."""
        if self._conn is None:
            self._conn = self._connect()
        return self._conn

    def _commit(self, batch: Sequence[WriterMessage]) -> list[_Outcome]:
        outcomes: dict[int, _Outcome] = {}
        try:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            appends = [(index, message) for index, message in enumerate(batch) if isinstance(message, Append)]
            if appends:
                outcomes.update(
                    zip((index for index, _ in appends), self._appends([m for _, m in appends]), strict=True)
                )
            for index, message in enumerate(batch):
                if isinstance(message, Write):
                    outcomes[index] = self._in_savepoint(message.work)
            conn.execute("COMMIT")
        except Exception as raised:
            error = raised.error if isinstance(raised, _BatchAborted) else raised
            self._undo()
            cause = full_disk_cause(error, self._folder)
            return [outcome.Error(error if cause is None else self._refused(cause, error)) for _ in batch]
        self._faults.took()
        self.batches += 1
        self.units += len(outcomes)
        if any(isinstance(result, outcome.Value) for result in outcomes.values()):
            self._committed = True
        return [outcomes[index] for index in range(len(batch))]

    def _refused(self, cause: str, error: Exception) -> Exception:
        refused = self._faults.refused(cause)
        refused.__cause__ = error
        return refused

    def _undo(self) -> None:
        """Roll a failed batch back; a connection that cannot be rolled back is closed, to be opened again."""
        conn = self._conn
        if conn is None:
            return
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        except sqlite3.Error:
            log.warning("the SQLite writer could not roll back a failed batch; opening its connection again")
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
            self._conn = None

    def _aborts(self, error: Exception) -> bool:
        """Whether `error` of one unit fails the whole batch: a full disk, or a transaction already gone."""
        conn = self._conn
        return conn is None or not conn.in_transaction or full_disk_cause(error, self._folder) is not None

    def _appends(self, appends: list[Append]) -> list[_Outcome]:
        """The batch's appends, first thing in its transaction (so undoing them is rolling the transaction
        back and beginning it again, with no savepoint to set and release in the common case)."""
        conn = self._connection()
        try:
            results = statements.append_batch(conn, appends, self._projections)
        except Exception as error:
            if self._aborts(error):
                raise _BatchAborted(error) from error
            conn.execute("ROLLBACK")
            conn.execute("BEGIN IMMEDIATE")
            return [
                self._in_savepoint(partial(statements.append_one, append=append, projections=self._projections))
                for append in appends
            ]
        return [outcome.Error(result) if isinstance(result, Exception) else outcome.Value(result) for result in results]

    def _in_savepoint(self, work: Callable[[sqlite3.Connection], Any]) -> _Outcome:
        conn = self._connection()
        conn.execute("SAVEPOINT unit")
        try:
            value = work(conn)
        except Exception as error:
            if self._aborts(error):
                raise _BatchAborted(error) from error
            conn.execute("ROLLBACK TO unit")
            conn.execute("RELEASE unit")
            return outcome.Error(error)
        conn.execute("RELEASE unit")
        return outcome.Value(value)
