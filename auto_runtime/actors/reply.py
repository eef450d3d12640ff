"""The one-shot reply slot an `ask` waits on, and the per-run timer that enforces ask timeouts.

An ask parks its task directly (`wait_task_rescheduled`) instead of entering a cancel scope: at tens of
thousands of asks per second a cancel scope per ask would cost about a third of the round trip. Ask
deadlines go into buckets of `TIMEOUT_RESOLUTION` seconds owned by one system task per Trio run, so
adding and removing a deadline is O(1) and a timeout fires at most one bucket late.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import Generic, TypeVar

import outcome
import trio
import trio.lowlevel

from auto_runtime.actors.errors import AskTimeoutError

R = TypeVar("R")

TIMEOUT_RESOLUTION = 0.01


class Reply(Generic[R]):
    """Set once (value or error) by the actor, awaited once by the asker.

    `succeed`, `fail`, `settle` and the timer run on the Trio thread (thread actors cross over through
    `thread_bridge`). Whatever comes first wins: a reply after a timeout is dropped.

    `abandoned` turns True (on the Trio thread) when the waiting task was cancelled; any thread may read it
    to skip work nobody waits for. `on_abandon`, when set, is called then (on the Trio thread, so it must
    only hand off: a loop actor uses it to cancel the task running the message).
    """

    __slots__ = ("_actor", "_bucket", "_error", "_has_value", "_task", "_timeout", "_value", "abandoned", "on_abandon")

    def __init__(self) -> None:
        self.abandoned = False
        self.on_abandon: Callable[[], None] | None = None
        self._has_value = False
        self._value: R | None = None
        self._error: BaseException | None = None
        self._task: trio.lowlevel.Task | None = None
        self._bucket: int | None = None
        self._actor = ""
        self._timeout = math.inf

    @property
    def done(self) -> bool:
        return self._has_value or self._error is not None

    def succeed(self, value: R) -> None:
        if not self.done:
            self._value = value
            self._has_value = True
            self._wake(outcome.Value(value))

    def fail(self, error: BaseException) -> None:
        if not self.done:
            self._error = error
            self._wake(outcome.Error(error))

    def settle(self, result: outcome.Outcome[R]) -> None:
        """Succeed or fail with `result` (an `outcome.Value` or `outcome.Error`)."""
        if isinstance(result, outcome.Error):
            self.fail(result.error)
        else:
            self.succeed(result.unwrap())

    async def wait(self, actor: str, timeout: float | None) -> R:
        """Wait for the reply; raises the actor's error, or `AskTimeoutError` after `timeout` seconds."""
        if not self.done:
            self._actor = actor
            self._task = trio.lowlevel.current_task()
            if timeout is not None and not math.isinf(timeout):
                self._timeout = timeout
                _AskTimer.current().add(self, trio.current_time() + timeout)
            result: R = await trio.lowlevel.wait_task_rescheduled(self._abort)
            return result
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]

    def expire(self) -> None:
        """Called by the timer when the deadline passed."""
        self._bucket = None
        self.fail(AskTimeoutError(self._actor, self._timeout))

    def _wake(self, result: outcome.Outcome[R]) -> None:
        if self._bucket is not None:
            _AskTimer.current().remove(self)
        task, self._task = self._task, None
        if task is not None:
            trio.lowlevel.reschedule(task, result)

    def _abort(self, _raise_cancel: object) -> trio.lowlevel.Abort:
        if self._bucket is not None:
            _AskTimer.current().remove(self)
        self._task = None
        self.abandoned = True
        if self.on_abandon is not None:
            self.on_abandon()
        return trio.lowlevel.Abort.SUCCEEDED


class _AskTimer:
    """Deadline buckets for the asks of one Trio run, expired by one system task."""

    _current: trio.lowlevel.RunVar[_AskTimer] = trio.lowlevel.RunVar("auto_runtime_ask_timer")

    def __init__(self) -> None:
        self._buckets: dict[int, set[Reply[object]]] = {}
        self._due: list[int] = []
        self._sleep: trio.CancelScope | None = None

    @classmethod
    def current(cls) -> _AskTimer:
        try:
            return cls._current.get()
        except LookupError:
            timer = cls()
            cls._current.set(timer)
            trio.lowlevel.spawn_system_task(timer._run, name="auto_runtime ask timer")
            return timer

    def add(self, reply: Reply[R], deadline: float) -> None:
        bucket = math.ceil(deadline / TIMEOUT_RESOLUTION)
        replies = self._buckets.get(bucket)
        if replies is None:
            replies = self._buckets[bucket] = set()
            heapq.heappush(self._due, bucket)
            if self._sleep is not None:
                self._sleep.deadline = min(self._sleep.deadline, bucket * TIMEOUT_RESOLUTION)
        replies.add(reply)  # type: ignore[arg-type]
        reply._bucket = bucket

    def remove(self, reply: Reply[R]) -> None:
        bucket, reply._bucket = reply._bucket, None
        if bucket is None:
            return
        replies = self._buckets.get(bucket)
        if replies is not None:
            replies.discard(reply)
            if not replies:
                del self._buckets[bucket]

    async def _run(self) -> None:
        while True:
            deadline = self._due[0] * TIMEOUT_RESOLUTION if self._due else math.inf
            with trio.CancelScope(deadline=deadline) as sleep:
                self._sleep = sleep
                await trio.sleep_forever()
            self._sleep = None
            now = trio.current_time()
            while self._due and self._due[0] * TIMEOUT_RESOLUTION <= now:
                for reply in self._buckets.pop(heapq.heappop(self._due), ()):
                    reply.expire()
