"""What a supervisor needs to know about one child: how to start it, when to restart it, how to stop it."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import trio

DEFAULT_SHUTDOWN_SECONDS = 5.0


class Restart(enum.Enum):
    """When a supervisor restarts a child that ended (Erlang/OTP restart types)."""

    PERMANENT = "permanent"
    """Always restarted, whether it failed or returned."""
    TRANSIENT = "transient"
    """Restarted only after a failure (an exception); a normal return removes it."""
    TEMPORARY = "temporary"
    """Never restarted; removed when it ends for any reason."""

    def restarts_after(self, failed: bool) -> bool:
        if self is Restart.PERMANENT:
            return True
        if self is Restart.TRANSIENT:
            return failed
        return False


class ChildContext:
    """The child's side of its supervisor, passed to the child's start function.

    Concurrency rules: every method is synchronous and must be called from the Trio thread.
    - `started()` tells the supervisor the child is ready; `start_child` (and the initial start of a
      supervisor) returns only after it, so siblings start in order. A child that returns or raises
      before calling it counts as started.
    - `on_stop_requested(callback)` opts into a graceful stop: when the supervisor stops the child it
      calls the callbacks, then waits up to the spec's shutdown timeout before cancelling the child.
      A child that registered no callback is cancelled at once (Trio cancellation is its stop request).
    - `finish()` says the child has ended for good (for example, its actor address was closed): when it
      then returns, the supervisor removes it instead of restarting it, whatever its restart type.
    """

    __slots__ = ("_finished", "_on_started", "_stop_callbacks", "_stop_event", "_stop_requested", "name")

    def __init__(self, name: str, on_started: Callable[[], None]) -> None:
        self.name = name
        self._on_started: Callable[[], None] | None = on_started
        self._stop_callbacks: list[Callable[[], None]] = []
        self._stop_requested = False
        self._stop_event: trio.Event | None = None
        self._finished = False

    def started(self) -> None:
        """Report that the child is ready. Calling it again does nothing."""
        on_started, self._on_started = self._on_started, None
        if on_started is not None:
            on_started()

    @property
    def has_started(self) -> bool:
        return self._on_started is None

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    @property
    def wants_graceful_stop(self) -> bool:
        return bool(self._stop_callbacks) or self._stop_event is not None

    def on_stop_requested(self, callback: Callable[[], None]) -> None:
        """Register a synchronous callback run when the supervisor asks this child to stop.

        If the stop was already requested, the callback runs at once.
        """
        if self._stop_requested:
            callback()
        else:
            self._stop_callbacks.append(callback)

    async def wait_stop_requested(self) -> None:
        """Block until the supervisor asks this child to stop (also opts into a graceful stop)."""
        if self._stop_event is None:
            self._stop_event = trio.Event()
            if self._stop_requested:
                self._stop_event.set()
        await self._stop_event.wait()

    def request_stop(self) -> None:
        """Called by the supervisor; runs the stop callbacks once."""
        if self._stop_requested:
            return
        self._stop_requested = True
        callbacks, self._stop_callbacks = self._stop_callbacks, []
        for callback in callbacks:
            callback()
        if self._stop_event is not None:
            self._stop_event.set()

    def finish(self) -> None:
        """Mark the child as done for good: it will be removed, not restarted, when it returns."""
        self._finished = True

    @property
    def finished(self) -> bool:
        return self._finished


StartFunction = Callable[[ChildContext], Awaitable[None]]
"""Runs one life of a child until it ends. Returning is a normal exit; raising is a failure."""


@dataclass(frozen=True, slots=True)
class ChildSpec:
    """A supervised child.

    `shutdown` is the graceful-stop budget in seconds (`0` cancels at once, `math.inf` waits forever,
    as a nested supervisor should); after it the child's cancel scope is cancelled. `subtree`, for a child that
    is itself a supervisor, describes its own children (see `Supervisor.tree`).
    """

    name: str
    start: StartFunction
    restart: Restart = Restart.PERMANENT
    shutdown: float = DEFAULT_SHUTDOWN_SECONDS
    subtree: Callable[[], dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a child needs a name")
        if self.shutdown < 0:
            raise ValueError(f"child {self.name!r}: shutdown must be >= 0 seconds, got {self.shutdown}")
