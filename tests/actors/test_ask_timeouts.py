"""Ask timeouts run on one timer per Trio run; these check its ordering and cleanup rules."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from auto_runtime.actors import Actor, ActorRef, AskTimeoutError
from auto_runtime.actors.reply import TIMEOUT_RESOLUTION, Reply


class Gate(Actor[trio.Event, str]):
    async def receive(self, message: trio.Event) -> str:
        await message.wait()
        return "opened"


async def test_a_shorter_timeout_fires_first_even_when_asked_after_a_longer_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    slow = ActorRef[trio.Event, str]("slow")
    fired: dict[str, float] = {}

    async def ask(name: str, timeout: float) -> None:
        try:
            await slow.ask(trio.Event(), timeout=timeout)
        except AskTimeoutError:
            fired[name] = trio.current_time()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(slow.run, Gate)
        start = trio.current_time()
        nursery.start_soon(ask, "long", 10.0)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(ask, "short", 1.0)
        await trio.sleep(20)
        nursery.cancel_scope.cancel()
    assert start + 1.0 <= fired["short"] <= start + 1.0 + TIMEOUT_RESOLUTION
    assert start + 10.0 <= fired["long"] <= start + 10.0 + TIMEOUT_RESOLUTION


async def test_a_reply_after_the_timeout_is_dropped_and_a_cancelled_asker_leaves_no_trace(
    autojump_clock: trio.testing.MockClock,
) -> None:
    gate = trio.Event()
    ref = ActorRef[trio.Event, str]("gate")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ref.run, Gate)
        with pytest.raises(AskTimeoutError) as timeout:
            await ref.ask(gate, timeout=1.0)
        assert timeout.value.timeout == 1.0
        with trio.move_on_after(1.0) as scope:
            await ref.ask(trio.Event(), timeout=5.0)
        assert scope.cancelled_caught
        gate.set()
        await trio.sleep(10)
        nursery.cancel_scope.cancel()


async def test_a_reply_set_once_wins_over_later_outcomes() -> None:
    reply: Reply[int] = Reply()
    reply.succeed(1)
    reply.fail(RuntimeError("late"))
    reply.succeed(2)
    assert reply.done
    assert await reply.wait("x", timeout=1.0) == 1
