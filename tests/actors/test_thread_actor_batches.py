"""Thread actors in batches: every message already queued goes to one `receive_batch`, each answered with its
own outcome, and an asker cancelled before the thread took its message is skipped. Real threads; nothing timed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import ClassVar

import outcome
import pytest
import trio

from auto_runtime.actors.errors import ActorCrashedError
from auto_runtime.actors.thread_actor import BatchFill, ThreadActor, ThreadActorRef
from tests.supervision.polling import wait_until


class Batcher(ThreadActor[int, int]):
    """Records each batch it gets; `0` blocks on the gate first, a negative number is refused."""

    max_batch: ClassVar[int] = 8
    skips_abandoned: ClassVar[bool] = True

    def __init__(self, batches: list[list[int]], gate: threading.Event, entered: threading.Event) -> None:
        self.batches = batches
        self.gate = gate
        self.entered = entered

    def receive(self, message: int) -> int:
        raise AssertionError("a batching actor gets batches")

    def receive_batch(self, messages: Sequence[int]) -> list[outcome.Outcome[int]]:
        if 0 in messages:
            self.entered.set()
            self.gate.wait(10)
        self.batches.append(list(messages))
        return [outcome.Error(ValueError(str(m))) if m < 0 else outcome.Value(m * 10) for m in messages]


async def test_the_messages_queued_behind_a_busy_thread_come_in_batches_of_at_most_max_batch() -> None:
    batches: list[list[int]] = []
    gate, entered = threading.Event(), threading.Event()
    ref = ThreadActorRef[int, int]("batcher")
    answers: dict[int, int | str] = {}

    async def ask(number: int) -> None:
        try:
            answers[number] = await ref.ask(number)
        except ValueError as error:
            answers[number] = f"refused {error}"

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ref.serve_life, lambda: Batcher(batches, gate, entered))
            nursery.start_soon(ask, 0)
            await trio.to_thread.run_sync(entered.wait)
            for number in [*range(1, 10), -10, *range(11, 21)]:
                nursery.start_soon(ask, number)
            await wait_until(lambda: ref.pending == 21)
            gate.set()
            await wait_until(lambda: ref.pending == 0)
            ref.request_stop()
    assert [len(batch) for batch in batches] == [1, 8, 8, 4]  # Trio starts the askers in an order of its own
    assert sorted(number for batch in batches for number in batch) == [-10, *range(0, 10), *range(11, 21)]
    assert answers[-10] == "refused -10"
    assert all(answers[n] == n * 10 for n in range(21) if n != 10)


async def test_an_asker_cancelled_before_the_thread_took_its_message_is_skipped() -> None:
    batches: list[list[int]] = []
    gate, entered = threading.Event(), threading.Event()
    ref = ThreadActorRef[int, int]("batcher")
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ref.serve_life, lambda: Batcher(batches, gate, entered))
            nursery.start_soon(ref.ask, 0)
            await trio.to_thread.run_sync(entered.wait)
            with trio.CancelScope() as waiting:
                nursery.start_soon(lambda: ref.ask(1))  # answered later
                waiting.cancel()
                await ref.ask(2)  # cancelled at once: nobody waits for 2
            assert waiting.cancelled_caught
            await wait_until(lambda: ref.pending == 3)
            gate.set()
            await wait_until(lambda: ref.pending == 0)
            ref.request_stop()
    assert batches == [[0], [1]]


async def test_an_exception_escaping_a_batch_fails_every_asker_of_that_batch_and_ends_the_life() -> None:
    class Breaking(Batcher):
        def receive_batch(self, messages: Sequence[int]) -> list[outcome.Outcome[int]]:
            self.batches.append(list(messages))
            raise OSError("the resource broke")

    batches: list[list[int]] = []
    ref = ThreadActorRef[int, int]("batcher")
    failed: list[int] = []
    crashes: list[BaseException] = []

    async def ask(number: int) -> None:
        with pytest.raises(OSError, match="broke"):
            await ref.ask(number)
        failed.append(number)

    async def serve() -> None:
        try:
            await ref.serve_life(lambda: Breaking(batches, threading.Event(), threading.Event()))
        except ActorCrashedError as crash:
            crashes.append(crash.error)

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for number in (1, 2, 3):
                nursery.start_soon(ask, number)
            await wait_until(lambda: ref.pending == 3)  # queued before the life starts: one batch
            nursery.start_soon(serve)
    assert [sorted(batch) for batch in batches] == [[1, 2, 3]]
    assert sorted(failed) == [1, 2, 3]
    assert [str(error) for error in crashes] == ["the resource broke"]
    assert ref.pending == 0


class Filler(ThreadActor[int, int]):
    """Asks to wait for `size` messages (up to `seconds`) before each batch; says when it is waiting."""

    max_batch: ClassVar[int] = 8

    def __init__(self, batches: list[list[int]], waiting: threading.Event, fill: BatchFill) -> None:
        self.batches = batches
        self.waiting = waiting
        self.fill = fill

    def receive(self, message: int) -> int:
        raise AssertionError("a batching actor gets batches")

    def batch_fill(self, taken: int) -> BatchFill | None:
        self.waiting.set()
        return self.fill

    def receive_batch(self, messages: Sequence[int]) -> list[outcome.Outcome[int]]:
        self.batches.append(list(messages))
        return [outcome.Value(m) for m in messages]


async def test_a_thread_asked_to_fill_its_batch_takes_what_arrives_while_it_waits() -> None:
    batches: list[list[int]] = []
    waiting = threading.Event()
    ref = ThreadActorRef[int, int]("filler")
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ref.serve_life, lambda: Filler(batches, waiting, BatchFill(3, 30.0)))
            nursery.start_soon(ref.ask, 1)
            await trio.to_thread.run_sync(waiting.wait)  # the thread holds 1 and waits for two more
            nursery.start_soon(ref.ask, 2)
            nursery.start_soon(ref.ask, 3)
            await wait_until(lambda: ref.pending == 0)
            ref.request_stop()
    assert len(batches) == 1 and sorted(batches[0]) == [1, 2, 3]


async def test_a_batch_that_does_not_fill_is_handled_once_the_wait_is_over() -> None:
    batches: list[list[int]] = []
    ref = ThreadActorRef[int, int]("filler")
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ref.serve_life, lambda: Filler(batches, threading.Event(), BatchFill(8, 0.001)))
            assert await ref.ask(1) == 1
            ref.request_stop()
    assert batches == [[1]]


class Follower(ThreadActor[int, int]):
    """Asks, after each batch holding an even number, for a callback on the Trio thread."""

    max_batch: ClassVar[int] = 8

    def __init__(self, seen: list[tuple[int, bool]]) -> None:
        self.seen = seen
        self.last = 0

    def receive(self, message: int) -> int:
        raise AssertionError("a batching actor gets batches")

    def receive_batch(self, messages: Sequence[int]) -> list[outcome.Outcome[int]]:
        self.last = max(messages)
        return [outcome.Value(m) for m in messages]

    def after_batch(self) -> Callable[[], object] | None:
        if self.last % 2:
            return None
        last = self.last
        return lambda: self.seen.append((last, trio.lowlevel.in_trio_run()))


async def test_a_callback_after_a_batch_runs_on_the_trio_thread_once_its_askers_are_answered() -> None:
    seen: list[tuple[int, bool]] = []
    ref = ThreadActorRef[int, int]("follower")
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ref.serve_life, lambda: Follower(seen))
            assert await ref.ask(1) == 1
            assert await ref.ask(2) == 2
            await wait_until(lambda: len(seen) == 1)
            assert await ref.ask(3) == 3
            ref.request_stop()
    assert seen == [(2, True)]
