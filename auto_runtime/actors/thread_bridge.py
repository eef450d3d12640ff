"""The one bridge from other threads to Trio: a thread hands results to waiting Trio tasks.

A `TrioPort` is made on the Trio thread (it captures the run's `TrioToken`) and used from any thread. It
never uses a Trio worker thread: `call_soon` runs a callback on the Trio thread through
`TrioToken.run_sync_soon`, and `settle` answers a whole batch of `Reply` slots with one such call, which
matters, since each call writes to Trio's wake-up socket. The thread actors (`thread_actor`, `loop_actor`)
report every life event and every outcome through it, so the SQLite writer, the PostgreSQL loop and the
sandbox workers share it.

Concurrency rules
- The Trio side owns every `Reply`: it is settled only by the callback, on the Trio thread, in the order the
  thread called `settle`. A reply already settled (an ask that timed out) ignores the late result.
- After the Trio run ended, `call_soon` does nothing and returns False: nobody is left to answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import outcome
import trio
import trio.lowlevel

from auto_runtime.actors.reply import Reply

Settlement = tuple[Reply[Any], outcome.Outcome[Any]]
"""A reply and the result it is settled with."""


class TrioPort:
    """The Trio run that a thread reports to."""

    __slots__ = ("token",)

    def __init__(self, token: trio.lowlevel.TrioToken | None = None) -> None:
        self.token = token if token is not None else trio.lowlevel.current_trio_token()

    def call_soon(self, callback: Callable[..., object], *args: object) -> bool:
        """Run `callback(*args)` on the Trio thread soon (any thread); False when the run has ended."""
        try:
            self.token.run_sync_soon(callback, *args)
        except trio.RunFinishedError:
            return False
        return True

    def settle(self, settlements: Sequence[Settlement]) -> None:
        """Settle every reply with its result, waking their tasks with one hop to the Trio thread (any thread)."""
        if settlements:
            self.call_soon(settle_all, settlements)


def settle_all(settlements: Sequence[Settlement]) -> None:
    """Settle each reply in order (Trio thread)."""
    for reply, result in settlements:
        reply.settle(result)
