"""`SqliteConnections`: how work reaches the ledger's SQLite file, for the store and each of its ports.

Reads run on a small pool of reader connections (`query_only`; WAL lets them read while the writer commits),
each owned by one of `READERS` reader threads of the pool. Writes are asked of the one writer, a thread actor
(`writer`) whose address (`writer_ref`) this object holds and whose lives the store serves: each runs inside a
group-committed transaction and returns after its commit. Every method may be called from any Trio task.
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import outcome

from auto_runtime.actors.reply import Reply
from auto_runtime.actors.thread_actor import ThreadActorRef
from auto_runtime.actors.thread_bridge import TrioPort
from auto_runtime.metrics import reader_waits

from ..serving import ACTOR_MAILBOX, ask_store_actor
from .writer import Write, WriterMessage

T = TypeVar("T")
READERS = 4

_Read = tuple[Callable[[sqlite3.Connection], Any], TrioPort, Reply[Any]]


class ReaderPool:
    """`READERS` reader threads, each with its own read-only connection, taking reads from one queue.

    A read is handed to the threads with a `Reply` and answered through the Trio token (`thread_bridge`, the one
    bridge from threads to Trio), not on a Trio worker thread: a Trio worker thread a read cost about twice the
    CPU of this hand-off (measured: 53 against 29 µs a read), and the followers read after every append.

    Concurrency rules:
    - The threads start with the first read (on the Trio thread), so a pool nobody reads from holds none.
    - `in_flight` (Trio thread only) counts the reads handed over and not yet answered, for `reader_waits`.
    - A task cancelled while its read runs stops waiting at once (its `Reply` is abandoned); the read still ends
      on its thread and its connection is used for nothing else meanwhile.
    - `close` (after every reader task has ended: the store's `stop`) lets each thread finish the read it holds,
      then closes the connections; reads asked after it are refused.
    """

    def __init__(self, path: str) -> None:
        self._path = path
        self._reads: queue.SimpleQueue[_Read | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._connections: list[sqlite3.Connection] = []
        self._closed = False
        self.in_flight = 0

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA query_only=ON")
        conn.execute("PRAGMA busy_timeout=10000")
        return conn

    def _serve(self, conn: sqlite3.Connection) -> None:
        while (read := self._reads.get()) is not None:
            work, port, reply = read
            port.call_soon(self._answer, reply, outcome.capture(work, conn))

    def _answer(self, reply: Reply[Any], result: outcome.Outcome[Any]) -> None:
        self.in_flight -= 1
        reply.settle(result)

    def _start(self) -> None:
        for number in range(READERS):
            conn = self._connect()
            self._connections.append(conn)
            thread = threading.Thread(target=self._serve, args=(conn,), name=f"sqlite-reader-{number}", daemon=True)
            thread.start()
            self._threads.append(thread)

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        if self._closed:
            raise RuntimeError("the ledger's readers are closed")
        if not self._threads:
            self._start()
        reader_waits("sqlite", READERS - self.in_flight)
        reply: Reply[T] = Reply()
        self.in_flight += 1
        self._reads.put((work, TrioPort(), reply))
        return await reply.wait("sqlite-reader", None)

    def close(self) -> None:
        self._closed = True
        for _ in self._threads:
            self._reads.put(None)
        for thread in self._threads:
            thread.join()
        self._threads.clear()
        for conn in self._connections:
            conn.close()
        self._connections.clear()


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
