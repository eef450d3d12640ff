"""Loop actors: messages run concurrently as asyncio tasks on the life's loop thread, errors answer their asker,
cancelling an asker cancels its task, and a crash is restarted by the supervisor with the mailbox kept.
Real threads and a real asyncio loop; nothing is timed (timeouts only bound a failure)."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field

import pytest
import trio

from auto_runtime.actors.loop_actor import LoopActor, LoopActorRef
from auto_runtime.supervision import NO_BACKOFF, RestartIntensity, Supervisor
from tests.supervision.polling import wait_until


class Breakage(BaseException):
    """Something broken beyond an error: it ends the life."""


@dataclass
class Shared:
    lives: int = 0
    stops: int = 0
    threads: set[str] = field(default_factory=set)
    cancelled: list[str] = field(default_factory=list)
    started: threading.Event = field(default_factory=threading.Event)


class Waiter(LoopActor[str, str]):
    """`wait:<name>` waits for `open:<name>`; `fail` raises ValueError; `break` raises Breakage; `hang` waits
    forever (and records its cancellation)."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self.gates: dict[str, asyncio.Event] = {}
        shared.lives += 1

    async def receive(self, message: str) -> str:
        self.shared.threads.add(threading.current_thread().name)
        verb, _, name = message.partition(":")
        gate = self.gates.setdefault(name, asyncio.Event())
        if verb == "wait":
            await gate.wait()
        elif verb == "open":
            gate.set()
        elif verb == "fail":
            raise ValueError("refused")
        elif verb == "break":
            raise Breakage("broken")
        elif verb == "hang":
            self.shared.started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.shared.cancelled.append(message)
                raise
        return message

    async def on_stop(self) -> None:
        self.shared.stops += 1


async def test_messages_run_concurrently_on_the_loop_thread_and_errors_answer_their_asker() -> None:
    shared = Shared()
    ref = LoopActorRef[str, str]("loop")
    answers: list[str] = []

    async def ask(message: str) -> None:
        answers.append(await ref.ask(message))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ref.serve_life, lambda: Waiter(shared))
            async with trio.open_nursery() as askers:
                askers.start_soon(ask, "wait:a")  # finishes only once "open:a" ran: the two run at once
                await wait_until(lambda: ref.pending == 1)
                askers.start_soon(ask, "open:a")
            with pytest.raises(ValueError, match="refused"):
                await ref.ask("fail")
            assert await ref.ask("after") == "after"
            ref.request_stop()
    assert sorted(answers) == ["open:a", "wait:a"]
    assert shared.threads and threading.current_thread().name not in shared.threads
    assert shared.stops == 1 and ref.pending == 0


async def test_cancelling_an_asker_cancels_its_task_on_the_loop() -> None:
    shared = Shared()
    ref = LoopActorRef[str, str]("loop")
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ref.serve_life, lambda: Waiter(shared))
            with trio.CancelScope() as scope:

                async def cancel_once_started() -> None:
                    await trio.to_thread.run_sync(shared.started.wait)
                    scope.cancel()

                nursery.start_soon(cancel_once_started)
                await ref.ask("hang")
            assert scope.cancelled_caught
            await wait_until(lambda: ref.pending == 0)
            ref.request_stop()
    assert shared.cancelled == ["hang"]


async def test_a_crash_is_restarted_by_its_supervisor_and_the_next_life_takes_the_mailbox() -> None:
    shared = Shared()
    ref = LoopActorRef[str, str]("loop")
    supervisor = Supervisor(
        "sup", [ref.child_spec(lambda: Waiter(shared))], intensity=RestartIntensity(5, 10.0), backoff=NO_BACKOFF
    )
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(supervisor.run)
            with pytest.raises(Breakage):
                await ref.ask("break")
            assert await ref.ask("again") == "again"
            assert shared.lives == 2
            await supervisor.stop()
    assert shared.stops == 2  # the crashed life closed what it held too
