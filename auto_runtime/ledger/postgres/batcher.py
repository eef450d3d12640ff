"""`AppendBatcher`: group commit for the PostgreSQL store's appends, on its loop (asyncio) thread.

Appends asked while a batch is in flight wait for the next one; each batch is one statement
(`statements.append_batch`: one round trip and one commit for up to `MAX_APPEND_BATCH` appends, with the
projections' changes a few round trips more), and every append gets its own result: its records, or its
`VersionConflict`, `DuplicateRecordIdError` or `LeaseLost` while the others commit. Guarded appends (due-work
changes, a lease fence) are batched like plain ones, each checked and applied in its own subtransaction. One
batch is in flight at a time, so a lone append is sent at once and appends queue only behind a commit
already under way; after a large batch the next waits briefly to fill (`FILL_FROM`, `FILL_SECONDS`).

A batch that fails as a whole with an error the server reported before anything committed (a projection
raising, a deadlock, a statement error) is run again one append at a time (`append_with_retry`, which also
runs an append again when PostgreSQL broke a deadlock with it), so only the append at fault fails. A full
disk fails the whole batch (it is a passing fault for every append alike), and so does a lost connection (the
batch may have committed: running it again could write it twice).

Cancelling an append's asker (its task on the loop) cancels its future: an append not yet sent is dropped; one
already sent may commit or not, as for any cancelled append. Anything else a batch raises (a `BaseException`:
a projection broken beyond an error) is raised to each of its askers, whose life then ends as a crash; the
batcher of an ending life is closed (`close`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import asyncpg

from auto_runtime.metrics import commit

from ..projections import Projection
from ..records import Record
from . import statements
from .faults import full_disk_cause
from .statements import Append

_Pending = tuple[Append, "asyncio.Future[list[Record]]"]

FILL_FROM = 4
"""The smallest last batch that makes the batcher wait for the next one to fill: below it the load is one or a
few appenders at a time, whose appends would only wait."""
FILL_SECONDS = 0.001
"""The longest the batcher waits for a batch to fill: about the time the askers of a batch just answered take
to make their next appends (a hop to Trio and one back), well under a round trip and commit on a loaded
server. Without it, the first of them would go alone and the rest in the next batch (bimodal batches)."""


def _may_run_again(error: Exception) -> bool:
    """Whether nothing of a failed batch can have committed, and its appends may be run one by one."""
    lost = isinstance(error, asyncpg.PostgresConnectionError | asyncpg.InterfaceError | OSError | TimeoutError)
    return not lost and full_disk_cause(error) is None


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _first_stream(pending: _Pending) -> str:
    """The first stream an append locks: a batch's appends go in this order, so that batches of one-stream
    appends, in this process or another, lock stream rows in one order and never wait for each other in a
    cycle (a cycle PostgreSQL breaks only after `deadlock_timeout`)."""
    return min((write.stream for write in pending[0].writes), default="")


class AppendBatcher:
    """Batches the appends of one loop life (see the module docstring). Used on the loop thread only."""

    def __init__(self, pool: Any, projections: Sequence[Projection], after_commit: Callable[[], None]) -> None:
        self._pool = pool
        self._projections = projections
        self._after_commit = after_commit
        self._queue: list[_Pending] = []
        self._draining: asyncio.Task[None] | None = None
        self._filling: tuple[int, asyncio.Future[None]] | None = None
        self._last_batch = 0
        self.batches = 0
        """Batches committed (some of their appends may have been refused)."""
        self.sent = 0
        """Appends in the batch in flight."""

    @property
    def queued(self) -> int:
        """Appends waiting for the next batch."""
        return len(self._queue)

    async def append(self, append: Append) -> list[Record]:
        """Append in the next batch and return the records as recorded (raises this append's refusal)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[Record]] = loop.create_future()
        self._queue.append((append, future))
        filling = self._filling
        if filling is not None and len(self._queue) >= filling[0] and not filling[1].done():
            filling[1].set_result(None)
        if self._draining is None:
            self._draining = loop.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self._queue:
                await self._fill()
                taken = self._queue[: statements.MAX_APPEND_BATCH]
                del self._queue[: statements.MAX_APPEND_BATCH]
                batch = sorted(((a, f) for a, f in taken if not f.done()), key=_first_stream)
                self.sent = self._last_batch = len(batch)
                if batch:
                    await self._run(batch)
                self.sent = 0
        finally:
            self._draining = None
            self.sent = 0

    async def _fill(self) -> None:
        """Wait, at most `FILL_SECONDS`, until as many appends are queued as the last batch held, when that
        was at least `FILL_FROM` (a lone appender's batches hold one append, so it never waits)."""
        expected = min(self._last_batch, statements.MAX_APPEND_BATCH)
        if expected < FILL_FROM or len(self._queue) >= expected:
            return
        loop = asyncio.get_running_loop()
        filled: asyncio.Future[None] = loop.create_future()
        self._filling = (expected, filled)
        timer = loop.call_later(FILL_SECONDS, _settle, filled)
        try:
            await filled
        finally:
            timer.cancel()
            self._filling = None

    async def _run(self, batch: list[_Pending]) -> None:
        try:
            async with self._pool.acquire() as conn:
                try:
                    with commit("postgres", len(batch)):
                        results: Sequence[list[Record] | Exception] = await statements.append_batch(
                            conn, [append for append, _ in batch], self._projections
                        )
                except Exception as error:
                    if not _may_run_again(error):
                        raise
                    results = [await self._alone(conn, append) for append, _ in batch]
        except asyncio.CancelledError:
            for _, future in batch:
                future.cancel()
            raise
        except BaseException as error:  # a projection broken beyond an error reaches its askers, who end the life
            for _, future in batch:
                if not future.done():
                    future.set_exception(error)
            return
        self.batches += 1
        if any(isinstance(result, list) for result in results):
            self._after_commit()
        for (_, future), result in zip(batch, results, strict=True):
            if future.done():
                continue
            if isinstance(result, Exception):
                future.set_exception(result)
            else:
                future.set_result(result)

    def close(self) -> None:
        """Stop batching at the end of the life: the batch in flight and every queued append are cancelled."""
        draining, self._draining = self._draining, None
        if draining is not None:
            draining.cancel()
        for _, future in self._queue:
            future.cancel()
        self._queue.clear()

    async def _alone(self, conn: Any, append: Append) -> list[Record] | Exception:
        try:
            return await statements.append_with_retry(
                conn, append.writes, self._projections, append.changes, append.fence
            )
        except Exception as error:
            return error
