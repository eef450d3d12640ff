"""Trio actors: tell, ask, overload, timeouts, stop modes, and restarts under a supervisor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest
import trio
import trio.testing

from auto_runtime.actors import (
    Actor,
    ActorCrashedError,
    ActorRef,
    ActorStoppedError,
    AskTimeoutError,
    LifeEnd,
    MailboxFull,
)
from auto_runtime.supervision import NO_BACKOFF, Restart, RestartIntensity, Strategy, Supervisor


@dataclass(frozen=True)
class Add:
    amount: int


@dataclass(frozen=True)
class Fail:
    reason: str


@dataclass(frozen=True)
class Wait:
    until: trio.Event


Message = Add | Fail | Wait


class Counter(Actor[Message, int]):
    """Keeps a running total; its state resets on every new life (it would reload from the ledger)."""

    lives: ClassVar[list[Counter]] = []

    def __init__(self) -> None:
        self.total = 0
        self.stopped = False
        self.seen: list[Message] = []

    async def on_start(self) -> None:
        Counter.lives.append(self)

    async def receive(self, message: Message) -> int:
        self.seen.append(message)
        if isinstance(message, Fail):
            raise ValueError(message.reason)  # noqa: TRY004 - a domain failure, not a type error
        if isinstance(message, Wait):
            await message.until.wait()
            return self.total
        self.total += message.amount
        return self.total

    async def on_stop(self) -> None:
        self.stopped = True


@pytest.fixture(autouse=True)
def _reset_lives() -> None:
    Counter.lives = []


async def test_tell_and_ask_are_handled_in_order() -> None:
    ref = ActorRef[Message, int]("counter")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ref.run, Counter)
        ref.tell(Add(1))
        ref.tell(Add(2))
        assert await ref.ask(Add(3)) == 6
        ref.stop()
    assert Counter.lives[0].stopped


async def test_a_full_mailbox_raises_mailbox_full_for_tell_and_ask() -> None:
    ref = ActorRef[Message, int]("busy", capacity=3)
    gate = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ref.run, Counter)
        ref.tell(Wait(gate))
        await trio.testing.wait_all_tasks_blocked()
        assert ref.in_flight
        for _ in range(3):
            ref.tell(Add(1))
        with pytest.raises(MailboxFull) as full:
            ref.tell(Add(1))
        assert (full.value.actor, full.value.capacity) == ("busy", 3)
        with pytest.raises(MailboxFull):
            await ref.ask(Add(1))
        assert ref.pending == 3
        gate.set()
        await trio.testing.wait_all_tasks_blocked()
        assert ref.pending == 0
        assert await ref.ask(Add(0)) == 3
        ref.stop()


async def test_ask_times_out_with_a_clear_error(autojump_clock: trio.testing.MockClock) -> None:
    ref = ActorRef[Message, int]("slow")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ref.run, Counter)
        with pytest.raises(AskTimeoutError) as timeout:
            await ref.ask(Wait(trio.Event()), timeout=2.5)
        assert timeout.value.timeout == 2.5
        nursery.cancel_scope.cancel()


async def test_a_crashing_message_fails_its_asker_and_ends_the_life() -> None:
    ref = ActorRef[Message, int]("fragile")
    crashes: list[ActorCrashedError] = []

    async def ask_failing() -> None:
        with pytest.raises(ValueError, match="bad input"):
            await ref.ask(Fail("bad input"))

    async def serve() -> None:
        with pytest.raises(ActorCrashedError) as crash:
            await ref.run(Counter)
        crashes.append(crash.value)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask_failing)
        nursery.start_soon(serve)
    assert isinstance(crashes[0].error, ValueError)


async def test_stop_with_drain_handles_queued_messages_then_refuses_new_ones() -> None:
    ref = ActorRef[Message, int]("draining")
    gate = trio.Event()
    results: list[int] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ref.run, Counter)
        ref.tell(Wait(gate))
        await trio.testing.wait_all_tasks_blocked()

        async def ask(amount: int) -> None:
            results.append(await ref.ask(Add(amount)))

        nursery.start_soon(ask, 1)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(ask, 2)
        await trio.testing.wait_all_tasks_blocked()
        ref.stop(drain=True)
        with pytest.raises(ActorStoppedError):
            ref.tell(Add(5))
        gate.set()
    assert results == [1, 3]


async def test_stop_without_drain_refuses_queued_asks() -> None:
    ref = ActorRef[Message, int]("refusing")
    gate = trio.Event()
    errors: list[BaseException] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ref.run, Counter)
        ref.tell(Wait(gate))
        await trio.testing.wait_all_tasks_blocked()

        async def ask() -> None:
            try:
                await ref.ask(Add(1))
            except ActorStoppedError as error:
                errors.append(error)

        nursery.start_soon(ask)
        await trio.testing.wait_all_tasks_blocked()
        ref.stop(drain=False)
        gate.set()
    assert len(errors) == 1
    assert Counter.lives[0].total == 0


async def test_a_supervised_actor_is_restarted_and_its_mailbox_keeps_working(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ref = ActorRef[Message, int]("counter", capacity=10)
    supervisor = Supervisor("sup", [ref.child_spec(Counter)])
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        assert await ref.ask(Add(5)) == 5
        gate = trio.Event()
        ref.tell(Wait(gate))
        await trio.testing.wait_all_tasks_blocked()

        async def ask_failing() -> None:
            with pytest.raises(ValueError, match="poison"):
                await ref.ask(Fail("poison"))

        nursery.start_soon(ask_failing)
        await trio.testing.wait_all_tasks_blocked()
        ref.tell(Add(1))
        ref.tell(Add(1))
        gate.set()
        assert await ref.ask(Add(1)) == 3
        assert len(Counter.lives) == 2
        assert Counter.lives[1].seen == [Add(1), Add(1), Add(1)]
        await supervisor.stop()
    assert Counter.lives[1].stopped


async def test_a_graceful_stop_finishes_the_message_in_flight_and_keeps_the_queue(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ref = ActorRef[Message, int]("counter")
    other = ActorRef[Message, int]("other")
    supervisor = Supervisor(
        "sup",
        [ref.child_spec(Counter), other.child_spec(Counter)],
        strategy=Strategy.ONE_FOR_ALL,
        intensity=RestartIntensity(10, 1.0),
        backoff=NO_BACKOFF,
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        gate = trio.Event()
        answers: list[int] = []

        async def ask(message: Message) -> None:
            answers.append(await ref.ask(message))

        nursery.start_soon(ask, Add(1))
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(ask, Wait(gate))
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(ask, Add(10))
        await trio.testing.wait_all_tasks_blocked()

        async def crash_other() -> None:
            with pytest.raises(ValueError, match="sibling"):
                await other.ask(Fail("sibling"))

        nursery.start_soon(crash_other)
        await trio.sleep(0.5)
        gate.set()
        await trio.sleep(1)
        assert answers == [1, 1, 10]
        assert Counter.lives[0].stopped
        await supervisor.stop()


async def test_a_closed_address_makes_its_supervisor_forget_the_child(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ref = ActorRef[Message, int]("closing")
    supervisor = Supervisor("sup", [ref.child_spec(Counter, restart=Restart.PERMANENT)])
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        await ref.ask(Add(1))
        ref.stop()
        await trio.sleep(1)
        assert supervisor.children == []
        assert len(Counter.lives) == 1
        await supervisor.stop()


async def test_cancelling_a_life_mid_message_answers_the_asker() -> None:
    ref = ActorRef[Message, int]("cancelled")
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:

            async def ask() -> None:
                with pytest.raises(ActorStoppedError):
                    await ref.ask(Wait(trio.Event()))

            nursery.start_soon(ask)

            async def serve() -> None:
                with trio.CancelScope() as life:
                    scope_holder.append(life)
                    await ref.run(Counter)

            scope_holder: list[trio.CancelScope] = []
            nursery.start_soon(serve)
            await trio.testing.wait_all_tasks_blocked()
            scope_holder[0].cancel()
    assert not scope.cancelled_caught


async def test_run_returns_why_the_life_ended() -> None:
    ref = ActorRef[Message, int]("ending")
    async with trio.open_nursery() as nursery:
        ends: list[LifeEnd] = []

        async def serve() -> None:
            ends.append(await ref.run(Counter))

        nursery.start_soon(serve)
        await trio.testing.wait_all_tasks_blocked()
        ref.request_stop()
    assert ends == [LifeEnd.STOP_REQUESTED]


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least one"):
        ActorRef[Message, int]("none", capacity=0)
