"""The SQLite store's one writer: a plain thread that group-commits whatever work is queued.

Trio tasks `submit` a unit of work (a function of the writer's connection) with a `Completion`. The
thread blocks for the first unit, then takes whatever else is already queued, up to
`MAX_BATCH` units, without waiting for more (opportunistic group commit: no added latency when traffic
is light). It runs them in one `BEGIN IMMEDIATE` transaction, each inside a savepoint of its own so
one failing unit (a version clash, a duplicate id) is undone alone, then commits
(`synchronous=FULL`: durable once COMMIT returns) and only then resolves each unit's completion. A
failed COMMIT fails every unit of the batch. Units whose waiter was cancelled before they ran are
skipped.
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from ..trio_bridge import Completion

MAX_BATCH: Final = 64


@dataclass(frozen=True, slots=True)
class _Unit:
    work: Callable[[sqlite3.Connection], Any]
    completion: Completion[Any]


class SqliteWriter:
    """Owns the writer connection from `start` until `stop`; see the module docstring."""

    def __init__(self, conn: sqlite3.Connection, after_commit: Callable[[], None]) -> None:
        self._conn = conn
        self._after_commit = after_commit
        self._queue: queue.SimpleQueue[_Unit | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="ledger-sqlite-writer", daemon=True)
        self.batches = 0
        self.units = 0

    def start(self) -> None:
        self._thread.start()

    def submit(self, work: Callable[[sqlite3.Connection], Any], completion: Completion[Any]) -> None:
        """Queue a unit; its completion resolves after the commit that includes it (any thread)."""
        self._queue.put(_Unit(work, completion))

    def stop(self) -> None:
        """Commit what is queued, then end the thread and close the connection (blocks)."""
        self._queue.put(None)
        self._thread.join()
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
            self._commit(batch)

    def _commit(self, batch: list[_Unit]) -> None:
        conn = self._conn
        outcomes: list[tuple[_Unit, bool, Any]] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            for unit in batch:
                if unit.completion.abandoned:
                    continue
                conn.execute("SAVEPOINT unit")
                try:
                    value = unit.work(conn)
                except Exception as error:
                    conn.execute("ROLLBACK TO unit")
                    conn.execute("RELEASE unit")
                    outcomes.append((unit, False, error))
                else:
                    conn.execute("RELEASE unit")
                    outcomes.append((unit, True, value))
            conn.execute("COMMIT")
        except Exception as error:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            for unit in batch:
                unit.completion.fail(error)
            return
        self.batches += 1
        self.units += len(outcomes)
        if any(ok for _, ok, _ in outcomes):
            self._after_commit()
        for unit, ok, value in outcomes:
            if ok:
                unit.completion.resolve(value)
            else:
                unit.completion.fail(value)
