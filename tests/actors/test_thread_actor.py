"""Thread actors: the pykka bridge, overload, crashes (including BaseException), restarts and stops.

These tests use the real clock (a mock clock would jump while an OS thread is working) and never
assert on durations; the timeouts only bound a failure.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import pykka
import pytest
import trio

from auto_runtime.actors import ActorStoppedError, MailboxFull
from auto_runtime.actors.thread_actor import THREAD_STACK_SIZE, ThreadActor, ThreadActorRef
from auto_runtime.supervision import NO_BACKOFF, RestartIntensity, Supervisor
from tests.supervision.polling import wait_until

GENEROUS = RestartIntensity(max_restarts=10, period=1.0)


@dataclass
class Shared:
    """State shared with the actor threads (lists and Events are thread-safe for this use)."""

    handled: list[int] = field(default_factory=list)
    threads: list[str] = field(default_factory=list)
    lives: int = 0
    stops: int = 0
    gate: threading.Event = field(default_factory=threading.Event)
    fail_starts: int = 0


class Ledgerish(ThreadActor[int, int]):
    """A blocking behaviour: `-1` raises ValueError, `-2` raises SystemExit, `-3` blocks on the gate."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        shared.lives += 1

    def on_start(self) -> None:
        if self.shared.fail_starts > 0:
            self.shared.fail_starts -= 1
            raise OSError("cannot open the database")

    def receive(self, message: int) -> int:
        self.shared.threads.append(threading.current_thread().name)
        if message == -1:
            raise ValueError("bad append")
        if message == -2:
            raise SystemExit("a BaseException in an actor thread")
        if message == -3:
            self.shared.gate.wait(10)
        self.shared.handled.append(message)
        return message * 10

    def on_stop(self) -> None:
        self.shared.stops += 1


def supervised(ref: ThreadActorRef[int, int], shared: Shared, shutdown: float = 5.0) -> Supervisor:
    return Supervisor(
        "sup",
        [ref.child_spec(lambda: Ledgerish(shared), shutdown=shutdown)],
        intensity=GENEROUS,
        backoff=NO_BACKOFF,
    )


async def test_ask_and_tell_cross_the_bridge_in_order() -> None:
    shared = Shared()
    ref = ThreadActorRef[int, int]("writer")
    supervisor = supervised(ref, shared)
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        ref.tell(1)
        ref.tell(2)
        with trio.fail_after(10):
            assert await ref.ask(3) == 30
        assert shared.handled == [1, 2, 3]
        assert ref.pending == 0
        assert shared.threads[0] != threading.current_thread().name
        await supervisor.stop()
    assert shared.stops == 1


async def test_a_crash_fails_the_asker_and_the_restarted_life_gets_the_queued_messages() -> None:
    shared = Shared()
    ref = ThreadActorRef[int, int]("writer")
    supervisor = supervised(ref, shared)
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        ref.tell(1)
        with trio.fail_after(10), pytest.raises(ValueError, match="bad append"):
            await ref.ask(-1)
        ref.tell(2)
        with trio.fail_after(10):
            assert await ref.ask(3) == 30
        assert shared.handled == [1, 2, 3]
        assert shared.lives == 2
        await supervisor.stop()


async def test_a_base_exception_is_caught_in_the_thread_and_other_pykka_actors_survive() -> None:
    class Bystander(pykka.ThreadingActor):
        use_daemon_thread = True

    bystander = Bystander.start()
    try:
        shared = Shared()
        ref = ThreadActorRef[int, int]("writer")
        supervisor = supervised(ref, shared)
        async with trio.open_nursery() as nursery:
            await nursery.start(supervisor.run)
            with trio.fail_after(10), pytest.raises(SystemExit):
                await ref.ask(-2)
            with trio.fail_after(10):
                assert await ref.ask(4) == 40
            assert bystander.is_alive()
            await supervisor.stop()
    finally:
        bystander.stop()


async def test_the_mailbox_is_bounded() -> None:
    shared = Shared()
    ref = ThreadActorRef[int, int]("writer", capacity=3)
    supervisor = supervised(ref, shared)
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        ref.tell(-3)
        ref.tell(1)
        ref.tell(2)
        with pytest.raises(MailboxFull):
            ref.tell(3)
        with pytest.raises(MailboxFull):
            await ref.ask(3)
        shared.gate.set()
        await wait_until(lambda: ref.pending == 0)
        assert shared.handled == [-3, 1, 2]
        await supervisor.stop()


async def test_a_failing_start_is_restarted() -> None:
    shared = Shared(fail_starts=1)
    ref = ThreadActorRef[int, int]("writer")
    supervisor = supervised(ref, shared)
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        with trio.fail_after(10):
            assert await ref.ask(5) == 50
        assert shared.lives == 2
        await supervisor.stop()


async def test_a_stuck_thread_is_abandoned_after_the_shutdown_timeout_and_handles_nothing_more() -> None:
    shared = Shared()
    ref = ThreadActorRef[int, int]("writer")
    supervisor = supervised(ref, shared, shutdown=0.2)
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        ref.tell(-3)
        ref.tell(7)
        await wait_until(lambda: bool(shared.threads))
        await supervisor.stop()
    shared.gate.set()
    await wait_until(lambda: ref.pending == 1 and bool(shared.handled))
    await trio.sleep(0.1)
    assert shared.handled == [-3]
    assert ref.pending == 1


async def test_stop_closes_the_address_after_handling_what_was_queued() -> None:
    shared = Shared()
    ref = ThreadActorRef[int, int]("writer")
    supervisor = supervised(ref, shared)
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        ref.tell(1)
        ref.stop()
        with pytest.raises(ActorStoppedError):
            ref.tell(2)
        await wait_until(lambda: not supervisor.children)
        assert shared.handled == [1]
        await supervisor.stop()


async def test_starting_a_thread_restores_the_process_stack_size() -> None:
    before = threading.stack_size()
    shared = Shared()
    ref = ThreadActorRef[int, int]("writer")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ref.serve_life, lambda: Ledgerish(shared))
        with trio.fail_after(10):
            assert await ref.ask(1) == 10
        assert threading.stack_size() == before
        assert ref.stack_size == THREAD_STACK_SIZE
        ref.request_stop()
