"""`SqliteConnections`: how work reaches the ledger's SQLite file, for the store and each of its ports.

Reads run on a small pool of reader connections (`query_only`; WAL lets them read while the writer commits) in
Trio worker threads, at most `READERS` at a time. Writes are asked of the one writer, a thread actor (`writer`)
whose address (`writer_ref`) this object holds and whose lives the store serves: each runs inside a
group-committed transaction and returns after its commit. Every method may be called from any Trio task.
"""

from __future__ import annotations

import queue
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import trio

from auto_runtime.actors.thread_actor import ThreadActorRef
from auto_runtime.metrics import reader_waits

from ..serving import ACTOR_MAILBOX, ask_store_actor
from .writer import Write, WriterMessage

T = TypeVar("T")
READERS = 4


class ReaderPool:
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


class SqliteConnections:
    """The file's readers and the writer's address (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.readers = ReaderPool(str(path))
        self.writer_ref = ThreadActorRef[WriterMessage, Any]("writer", ACTOR_MAILBOX, stack_size=0)

    async def read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run `work` on a reader connection in a worker thread."""
        return await self.readers.run(work)

    async def write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run `work` on the writer thread inside a group-committed transaction; return after commit."""
        result: T = await self.ask(Write(work))
        return result

    async def ask(self, message: WriterMessage) -> Any:
        """Ask the writer (`ask_store_actor`: a full mailbox is `LedgerUnavailable`, a closed one
        `LedgerClosedError`)."""
        return await ask_store_actor(self.writer_ref, message)
