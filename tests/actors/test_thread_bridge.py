"""The one Trio↔thread bridge: a batch of replies woken with one hop, abandoned waiters, a finished run.

Threads are real; nothing is timed: the tests wait for the replies themselves (timeouts only bound a failure).
"""

from __future__ import annotations

import threading

import outcome
import pytest
import trio
import trio.lowlevel
import trio.testing

from auto_runtime.actors.reply import Reply
from auto_runtime.actors.thread_bridge import TrioPort


class CountingToken:
    """Trio's token, counting the calls made through it (a stand-in for Trio's own object, not for ours)."""

    def __init__(self, token: trio.lowlevel.TrioToken) -> None:
        self._token = token
        self.calls = 0

    def run_sync_soon(self, callback: object, *args: object) -> None:
        self.calls += 1
        self._token.run_sync_soon(callback, *args)  # type: ignore[arg-type]


async def test_a_thread_wakes_a_whole_batch_of_waiters_with_one_hop() -> None:
    token = CountingToken(trio.lowlevel.current_trio_token())
    port = TrioPort(token)  # type: ignore[arg-type]
    replies: list[Reply[int]] = [Reply() for _ in range(50)]
    answers: dict[int, int] = {}

    async def wait(number: int) -> None:
        answers[number] = await replies[number].wait("bridge", None)

    def settle_from_a_thread() -> None:
        port.settle([(reply, outcome.Value(number * 2)) for number, reply in enumerate(replies)])

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for number in range(50):
                nursery.start_soon(wait, number)
            await trio.testing.wait_all_tasks_blocked()
            thread = threading.Thread(target=settle_from_a_thread)
            thread.start()
    thread.join()
    assert answers == {number: number * 2 for number in range(50)}
    assert token.calls == 1


async def test_an_error_crosses_the_bridge_to_its_waiter() -> None:
    port = TrioPort()
    reply: Reply[int] = Reply()
    thread = threading.Thread(target=lambda: port.settle([(reply, outcome.Error(ValueError("refused")))]))
    thread.start()
    with trio.fail_after(10), pytest.raises(ValueError, match="refused"):
        await reply.wait("bridge", None)
    thread.join()


async def test_a_cancelled_waiter_is_abandoned_and_a_late_result_is_dropped() -> None:
    port = TrioPort()
    reply: Reply[int] = Reply()
    told: list[str] = []
    reply.on_abandon = lambda: told.append("abandoned")
    assert not reply.abandoned
    with trio.CancelScope() as scope:
        scope.cancel()
        await reply.wait("bridge", None)
    assert scope.cancelled_caught
    assert reply.abandoned and told == ["abandoned"]
    port.settle([(reply, outcome.Value(1))])
    settled = trio.Event()
    port.call_soon(settled.set)  # runs after the settlement: hops run in order
    with trio.fail_after(10):
        await settled.wait()
    assert reply.done  # the late result was taken by a reply nobody waits for, and woke nobody


def test_a_port_whose_run_has_finished_refuses_calls() -> None:
    async def make() -> TrioPort:
        return TrioPort()

    port = trio.run(make)
    assert port.call_soon(lambda: None) is False
