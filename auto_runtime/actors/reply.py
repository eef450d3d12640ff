"""The one-shot reply slot an `ask` waits on."""

from __future__ import annotations

import math
from typing import Generic, TypeVar

import trio

from auto_runtime.actors.errors import AskTimeoutError

R = TypeVar("R")


class Reply(Generic[R]):
    """Set once (value or error) by the actor, awaited once by the asker.

    `succeed` and `fail` must run on the Trio thread (thread actors cross over with
    `TrioToken.run_sync_soon`). Setting an already-set reply does nothing.
    """

    __slots__ = ("_error", "_event", "_has_value", "_value")

    def __init__(self) -> None:
        self._event = trio.Event()
        self._has_value = False
        self._value: R | None = None
        self._error: BaseException | None = None

    @property
    def done(self) -> bool:
        return self._has_value or self._error is not None

    def succeed(self, value: R) -> None:
        if not self.done:
            self._value = value
            self._has_value = True
            self._event.set()

    def fail(self, error: BaseException) -> None:
        if not self.done:
            self._error = error
            self._event.set()

    async def wait(self, actor: str, timeout: float | None) -> R:
        if timeout is None or math.isinf(timeout):
            await self._event.wait()
        else:
            with trio.move_on_after(timeout):
                await self._event.wait()
            if not self.done:
                raise AskTimeoutError(actor, timeout)
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]
