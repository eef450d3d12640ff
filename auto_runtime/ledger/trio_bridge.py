"""Hand results from a worker thread (the SQLite writer, the asyncpg loop) to waiting Trio tasks.

The waiting task creates a `Completion` in the Trio thread (it captures the Trio token); the worker
settles it exactly once from its own thread, then wakes it through `TrioToken.run_sync_soon`, never
through a Trio worker thread per call. `wake_all` wakes a whole batch with one `run_sync_soon` per
Trio run, which matters: each call writes to Trio's wake-up socket. A task cancelled while it waits
marks the completion `abandoned`; a worker that has not started the work yet skips it, and work
already done stays done (a cancelled append may have been committed).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any, Generic, TypeVar, cast

import trio

T = TypeVar("T")


class Completion(Generic[T]):
    """A one-shot result slot from another thread to a Trio task."""

    def __init__(self) -> None:
        self.token = trio.lowlevel.current_trio_token()
        self._event = trio.Event()
        self._value: T | None = None
        self._error: BaseException | None = None
        self.abandoned = False

    def settle(self, value: T) -> None:
        """Set the result without waking the waiter (any thread; then call `wake_all`)."""
        self._value = value

    def settle_error(self, error: BaseException) -> None:
        """Set an error the waiter raises, without waking it (any thread; then call `wake_all`)."""
        self._error = error

    def resolve(self, value: T) -> None:
        """Set the result and wake the waiter (any thread)."""
        self.settle(value)
        wake_all([self])

    def fail(self, error: BaseException) -> None:
        """Set an error and wake the waiter (any thread)."""
        self.settle_error(error)
        wake_all([self])

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


def wake_all(completions: Iterable[Completion[Any]]) -> None:
    """Wake the waiters of settled completions, with one `run_sync_soon` per Trio run (any thread)."""
    by_token: dict[trio.lowlevel.TrioToken, list[trio.Event]] = {}
    for completion in completions:
        by_token.setdefault(completion.token, []).append(completion._event)
    for token, events in by_token.items():

        def set_all(events: list[trio.Event] = events) -> None:
            for event in events:
                event.set()

        with contextlib.suppress(trio.RunFinishedError):
            token.run_sync_soon(set_all)
