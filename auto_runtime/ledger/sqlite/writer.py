"""The SQLite store's one writer: a plain thread that group-commits whatever work is queued.

Trio tasks queue appends (`submit_append`) and other writes (`submit`, a function of the writer's
connection), each with a `Completion`. The thread blocks for the first unit, then takes whatever else
is already queued, up to `MAX_BATCH` units, without waiting for more (opportunistic group commit: no
added latency when traffic is light), runs them in one `BEGIN IMMEDIATE` transaction, commits
(`synchronous=FULL`: durable once COMMIT returns) and only then settles and wakes the units' waiters,
one wake-up per batch. A failed COMMIT fails every unit of the batch. Units whose waiter was
cancelled before they ran are skipped.

Appends take a fast path: the batch's version checks are decided in memory from one read of the
streams' versions (this thread is the only writer), and its records and versions are written with
one `executemany` each, so the thread releases and retakes the GIL a few times per batch rather
than several times per append (under load the Trio thread holds the GIL, and each retake waits for
it). When that fails (a duplicate record id, a projection raising), the batch is undone to a
savepoint and run again one append at a time, each in a savepoint of its own, so one failing
append is refused alone. Other work always runs one unit per savepoint.

A full disk (`faults.full_disk_cause`) is a passing fault, never the end of the thread: it fails the whole
batch with `LedgerUnavailable` (SQLite may have rolled the transaction back already, so no savepoint of it
is left to return to), the transaction is rolled back, and a connection that cannot be rolled back is closed
and opened again before the next batch. The thread goes on taking work, and the first batch that commits
once space returns is durable as any other. No error of a batch, whatever it is, ends the thread.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Final

from ..faults import FaultLog
from ..ledger import EncodedWrite
from ..projections import Projection
from ..trio_bridge import Completion, wake_all
from . import statements
from .faults import full_disk_cause

log = logging.getLogger("auto_runtime.ledger")

MAX_BATCH: Final = 64


@dataclass(frozen=True, slots=True)
class _Unit:
    completion: Completion[Any]
    writes: list[EncodedWrite] | None = None
    work: Callable[[sqlite3.Connection], Any] | None = None


class _BatchAborted(Exception):
    """A unit met an error that leaves no transaction to go on with (a full disk): the whole batch fails."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class SqliteWriter:
    """Owns the writer connection from `start` until `stop`; see the module docstring.

    `connect` opens a new writer connection, for when a fault left the current one unusable; `folder` is
    where the ledger file lives (its free space tells a full disk from another I/O error).
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        projections: Sequence[Projection],
        after_commit: Callable[[], None],
        *,
        connect: Callable[[], sqlite3.Connection] | None = None,
        folder: Path | None = None,
        faults: FaultLog | None = None,
    ) -> None:
        self._conn: sqlite3.Connection | None = conn
        self._connect = connect
        self._folder = folder if folder is not None else Path(".")
        self._faults = faults if faults is not None else FaultLog("the SQLite ledger")
        self._projections = projections
        self._after_commit = after_commit
        self._queue: queue.SimpleQueue[_Unit | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="ledger-sqlite-writer", daemon=True)
        self.batches = 0
        self.units = 0

    def start(self) -> None:
        self._thread.start()

    def submit_append(self, writes: list[EncodedWrite], completion: Completion[Any]) -> None:
        """Queue an append; its completion settles after the commit that includes it (any thread)."""
        self._queue.put(_Unit(completion, writes=writes))

    def submit(self, work: Callable[[sqlite3.Connection], Any], completion: Completion[Any]) -> None:
        """Queue other work; its completion settles after the commit that includes it (any thread)."""
        self._queue.put(_Unit(completion, work=work))

    def stop(self) -> None:
        """Commit what is queued, then end the thread and close the connection (blocks)."""
        self._queue.put(None)
        self._thread.join()
        if self._conn is not None:
            self._conn.close()

    def _run(self) -> None:
        stopping = False
        while not stopping:
            first = self._queue.get()
            if first is None:
                break
            batch = [first]
            while len(batch) < MAX_BATCH:
                try:
                    unit = self._queue.get_nowait()
                except queue.Empty:
                    break
                if unit is None:
                    stopping = True
                    break
                batch.append(unit)
            units = [unit for unit in batch if not unit.completion.abandoned]
            try:
                self._commit(units)
            except Exception as error:  # the thread outlives every batch
                log.exception("the SQLite writer failed a batch outside its transaction")
                for unit in units:
                    unit.completion.settle_error(error)
                wake_all(unit.completion for unit in units)

    def _connection(self) -> sqlite3.Connection:
        """The writer connection, opened again when a fault closed it (raises what opening raises)."""
        if self._conn is None:
            assert self._connect is not None
            self._conn = self._connect()
        return self._conn

    def _commit(self, batch: list[_Unit]) -> None:
        if not batch:
            return
        outcomes: list[tuple[_Unit, bool, Any]] = []
        try:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            appends = [unit for unit in batch if unit.writes is not None]
            if appends:
                outcomes += self._appends(appends)
            for unit in batch:
                if unit.work is not None:
                    outcomes.append(self._in_savepoint(unit, unit.work))
            conn.execute("COMMIT")
        except Exception as raised:
            error = raised.error if isinstance(raised, _BatchAborted) else raised
            self._undo()
            cause = full_disk_cause(error, self._folder)
            for unit in batch:
                unit.completion.settle_error(error if cause is None else self._refused(cause, error))
            wake_all(unit.completion for unit in batch)
            return
        self._faults.took()
        self.batches += 1
        self.units += len(outcomes)
        for unit, ok, value in outcomes:
            if ok:
                unit.completion.settle(value)
            else:
                unit.completion.settle_error(value)
        wake_all(unit.completion for unit, _, _ in outcomes)
        if any(ok for _, ok, _ in outcomes):
            self._after_commit()

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
        if conn.in_transaction and self._connect is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
            self._conn = None

    def _aborts(self, error: Exception) -> bool:
        """Whether `error` of one unit fails the whole batch: a full disk, or a transaction already gone."""
        conn = self._conn
        return conn is None or not conn.in_transaction or full_disk_cause(error, self._folder) is not None

    def _appends(self, units: list[_Unit]) -> list[tuple[_Unit, bool, Any]]:
        conn = self._connection()
        conn.execute("SAVEPOINT appends")
        try:
            results = statements.append_batch(conn, [unit.writes or [] for unit in units], self._projections)
        except Exception as error:
            if self._aborts(error):
                raise _BatchAborted(error) from error
            conn.execute("ROLLBACK TO appends")
            conn.execute("RELEASE appends")
            return [
                self._in_savepoint(
                    unit,
                    partial(statements.append_writes, writes=unit.writes or [], projections=self._projections),
                )
                for unit in units
            ]
        conn.execute("RELEASE appends")
        return [(unit, not isinstance(result, Exception), result) for unit, result in zip(units, results, strict=True)]

    def _in_savepoint(self, unit: _Unit, work: Callable[[sqlite3.Connection], Any]) -> tuple[_Unit, bool, Any]:
        conn = self._connection()
        conn.execute("SAVEPOINT unit")
        try:
            value = work(conn)
        except Exception as error:
            if self._aborts(error):
                raise _BatchAborted(error) from error
            conn.execute("ROLLBACK TO unit")
            conn.execute("RELEASE unit")
            return (unit, False, error)
        conn.execute("RELEASE unit")
        return (unit, True, value)
