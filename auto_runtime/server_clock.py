"""The server's one clock: the wall time its time-dependent work reads (the times records are stamped with, the
times due work is armed at and judged due against), the listeners a move wakes, and a limit a move can cut.

`ServerClock` is the production clock, the wall clock: `datetime.now(UTC)` and `trio.fail_after`, never moved.
`MovableClock` is a test's (`TEST_CLOCK`, refused unless the environment has `AUTO_RUNTIME_TEST_CLOCK=1`): the
wall time plus an offset that only grows, moved by the test through the loopback-only control route
(`http.test_clock_route`). Between moves it runs at the wall clock's speed, so everything that polls or measures
a duration behaves as in production; a move tells its listeners (the timer loop's `wake`), so due work that a
move made due fires at the next sweep instead of after the real time left.

A limit of the contract measured in the server's time takes `fail_after` (a tool call's 30 s through `execute`,
a tool server's 10 s to connect): a move past its end cuts it; a wait that ends quietly at such a time takes
`move_on_after` (a tool server's quiet stderr pipe reporting the lines it dropped). A rule that spaces or ages
work by a duration (the identity service's keys: their fetch spacing, maximum age and back-off; a tool server's
stderr rate) reads `seconds` and sleeps with `sleep_until`: a move wakes the sleep and counts as time passed
(their fetch's limit is a `fail_after`). What does not follow the clock: durations measured with
`trio.current_time()` or `time.monotonic()` (the sandbox's deadline, list limits, reconnect back-offs,
`duration_ms`), and the database's own clock, by which leases are judged.

Concurrency: both clocks are read from any thread (a read is one attribute load); a `MovableClock` is moved
from the Trio thread only (the control route), and its listeners run there.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime, timedelta

import trio

MICROSECOND = timedelta(microseconds=1)
TEST_CLOCK_PATH = "/_test/clock"
"""The control route of a `MovableClock` (`http.test_clock_route`), outside `/v1` and the seeds."""


class ClockMovedBack(ValueError):
    """A move that would take the clock back: due work already fired and stamped times must stay in the past."""


class ServerClock:
    """The wall clock (production): never moved, so it tells no listener and its limits are `trio`'s."""

    movable = False

    def now(self) -> datetime:
        return datetime.now(UTC)

    def now_ms(self) -> int:
        """Milliseconds since 1970 in UTC (the workflow engine's input times)."""
        return time.time_ns() // 1_000_000

    def now_us(self) -> int:
        """Microseconds since 1970 in UTC (the ledger's `recorded_at`)."""
        return time.time_ns() // 1_000

    def on_moved(self, listener: Callable[[], None]) -> None:
        """Call `listener` after every move (never, for this clock): how a task that sleeps until a due time (the
        timer loop, through its `wake`) wakes when a move brings that time closer."""

    def seconds(self) -> float:
        """Seconds on a clock that never goes back (`time.monotonic()`, plus the moves for a `MovableClock`), for
        durations that a move of the clock counts as passed."""
        return time.monotonic()

    async def sleep_until(self, deadline: float) -> None:
        """Sleep until `seconds()` reads `deadline`: `trio.sleep` for this clock."""
        await trio.sleep(max(0.0, deadline - self.seconds()))

    def fail_after(self, seconds: float) -> AbstractContextManager[trio.CancelScope]:
        """`trio.fail_after(seconds)` of this clock, for a limit of the contract measured in the server's time (a
        tool call's 30 s), not for a bound on work (the sandbox's deadline stays `trio`'s)."""
        return trio.fail_after(seconds)

    def move_on_after(self, seconds: float) -> AbstractContextManager[trio.CancelScope]:
        """`trio.move_on_after(seconds)` of this clock: a wait that ends quietly after `seconds` of server time."""
        return trio.move_on_after(seconds)


WALL_CLOCK = ServerClock()
"""The wall clock, for the defaults of parts made outside a server (tests, benchmarks); a server hands its own."""


class MovableClock(ServerClock):
    """The wall clock plus an offset the test moves forward (`advance`, `set_to`); never moved back."""

    movable = True

    def __init__(self) -> None:
        self._offset_us = 0
        self._listeners: list[Callable[[], None]] = []
        self._limits: list[tuple[datetime, trio.CancelScope]] = []
        self._sleepers: set[trio.Event] = set()

    def now(self) -> datetime:
        return datetime.now(UTC) + self._offset_us * MICROSECOND

    def now_ms(self) -> int:
        return (time.time_ns() // 1_000 + self._offset_us) // 1_000

    def now_us(self) -> int:
        return time.time_ns() // 1_000 + self._offset_us

    def seconds(self) -> float:
        return time.monotonic() + self._offset_us / 1_000_000

    async def sleep_until(self, deadline: float) -> None:
        """Sleep until `seconds()` reads `deadline`, by the wall clock's passing or by a move past it, whichever
        comes first; a move short of it sleeps on for the time left."""
        while (left := deadline - self.seconds()) > 0:
            moved = trio.Event()
            self._sleepers.add(moved)
            try:
                with trio.move_on_after(left):
                    await moved.wait()
            finally:
                self._sleepers.discard(moved)

    def on_moved(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    @contextmanager
    def _cut_after(
        self, seconds: float, scope_of: Callable[[float], AbstractContextManager[trio.CancelScope]]
    ) -> Iterator[trio.CancelScope]:
        ends = self.now() + timedelta(seconds=seconds)
        with scope_of(seconds) as scope:
            limit = (ends, scope)
            self._limits.append(limit)
            try:
                yield scope
            finally:
                self._limits.remove(limit)

    def fail_after(self, seconds: float) -> AbstractContextManager[trio.CancelScope]:
        """Raises `trio.TooSlowError` after `seconds` of wall time, or at the move that takes the clock past them."""
        return self._cut_after(seconds, trio.fail_after)

    def move_on_after(self, seconds: float) -> AbstractContextManager[trio.CancelScope]:
        """Ends the block quietly after `seconds` of wall time, or at the move that takes the clock past them."""
        return self._cut_after(seconds, trio.move_on_after)

    def advance(self, by: timedelta) -> datetime:
        """Move the clock forward by `by` (not negative); answers the new time."""
        if by < timedelta(0):
            raise ClockMovedBack(f"the clock only moves forward, not by {by}")
        self._offset_us += by // MICROSECOND
        self._tell()
        return self.now()

    def set_to(self, moment: datetime) -> datetime:
        """Move the clock to `moment` (not before its time now); answers the new time."""
        if moment.tzinfo is None:
            raise ValueError("an instant without an offset is ambiguous")
        ahead = moment - self.now()
        if ahead < timedelta(0):
            raise ClockMovedBack(f"the clock reads {self.now().isoformat()}, later than {moment.isoformat()}")
        return self.advance(ahead)

    def _tell(self) -> None:
        now = self.now()
        for ends, scope in self._limits:
            if now >= ends:
                scope.cancel()  # `trio.fail_after` turns a cancel it caught into `TooSlowError`
        for moved in self._sleepers:
            moved.set()
        for listener in self._listeners:
            listener()
