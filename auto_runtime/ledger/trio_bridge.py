"""Hand a result from a worker thread (the SQLite writer, the asyncpg loop) to one waiting Trio task.

The waiting task creates a `Completion` in the Trio thread (it captures the Trio token); the worker
calls `resolve` or `fail` exactly once from its own thread, which wakes the task through
`TrioToken.run_sync_soon`, never through a Trio worker thread per call. A task cancelled while it
waits marks the completion `abandoned`; a worker that has not started the work yet skips it, and
work already done stays done (a cancelled append may have been committed).
"""

from __future__ import annotations

import contextlib
from typing import Generic, TypeVar, cast

import trio

T = TypeVar("T")


class Completion(Generic[T]):
    """A one-shot result slot from another thread to a Trio task."""

    def __init__(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._event = trio.Event()
        self._value: T | None = None
        self._error: BaseException | None = None
        self.abandoned = False

    def resolve(self, value: T) -> None:
        """Set the result (any thread)."""
        self._value = value
        self._wake()

    def fail(self, error: BaseException) -> None:
        """Set an error the waiter raises (any thread)."""
        self._error = error
        self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(trio.RunFinishedError):
            self._token.run_sync_soon(self._event.set)

    async def wait(self) -> T:
        """The result, once the worker set it (Trio thread)."""
        try:
            await self._event.wait()
        except trio.Cancelled:
            self.abandoned = True
            raise
        if self._error is not None:
            raise self._error
        return cast(T, self._value)
