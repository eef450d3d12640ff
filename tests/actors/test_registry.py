"""Registry: spawn on message, idle and LRU passivation, re-spawn, crash handling, the passivation race."""

from __future__ import annotations

import logging
import random
import tracemalloc
from collections import Counter as Tally
from dataclasses import dataclass, field

import pytest
import trio
import trio.lowlevel
import trio.testing

from auto_runtime.actors import Actor, ActorStoppedError, MailboxFull, Registry
from auto_runtime.supervision import Supervisor


@dataclass
class Journal:
    """What every life of every key did; stands in for the ledger a real actor would append to."""

    handled: list[tuple[str, int]] = field(default_factory=list)
    starts: Tally[str] = field(default_factory=Tally)
    stops: Tally[str] = field(default_factory=Tally)
    expected: int = -1
    all_handled: trio.Event = field(default_factory=trio.Event)

    def record(self, key: str, message: int) -> None:
        self.handled.append((key, message))
        if len(self.handled) == self.expected:
            self.all_handled.set()


class Note(Actor[int, int]):
    """Records each message id; `-1` raises; optionally yields inside `on_stop` to widen race windows."""

    def __init__(self, key: str, journal: Journal, *, slow_stop: bool = False) -> None:
        self.key = key
        self.journal = journal
        self.slow_stop = slow_stop
        self.count = 0

    async def on_start(self) -> None:
        self.journal.starts[self.key] += 1

    async def receive(self, message: int) -> int:
        if message == -1:
            raise RuntimeError(f"{self.key} cannot take -1")
        self.journal.record(self.key, message)
        self.count += 1
        return message

    async def on_stop(self) -> None:
        if self.slow_stop:
            await trio.lowlevel.checkpoint()
            await trio.lowlevel.checkpoint()
        self.journal.stops[self.key] += 1


def note_registry(journal: Journal, **options: object) -> Registry[str, int, int]:
    slow_stop = bool(options.pop("slow_stop", False))
    return Registry(
        "notes",
        lambda key: Note(key, journal, slow_stop=slow_stop),
        **options,  # type: ignore[arg-type]
    )


async def test_a_message_spawns_the_actor_and_a_keyed_ref_reaches_it() -> None:
    journal = Journal()
    registry = note_registry(journal)
    async with trio.open_nursery() as nursery:
        await nursery.start(registry.run)
        ref = registry.ref("a")
        assert not registry.is_live("a")
        assert await ref.ask(7) == 7
        ref.tell(8)
        assert await registry.ask("a", 9) == 9
        assert registry.is_live("a")
        assert journal.handled == [("a", 7), ("a", 8), ("a", 9)]
        assert journal.starts["a"] == 1
        nursery.cancel_scope.cancel()


async def test_an_idle_actor_passivates_and_its_next_message_respawns_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    journal = Journal()
    registry = note_registry(journal, idle_timeout=30.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(registry.run)
        await registry.ask("a", 1)
        await trio.sleep(29)
        assert registry.is_live("a")
        await trio.sleep(30 * 1.25 - 29 + 0.1)
        assert not registry.is_live("a")
        assert journal.stops["a"] == 1
        assert await registry.ask("a", 2) == 2
        assert journal.starts["a"] == 2
        nursery.cancel_scope.cancel()


async def test_ten_thousand_actors_passivate_down_to_the_live_bound_and_respawn_on_demand() -> None:
    journal = Journal()
    registry = note_registry(journal, max_live=1000, idle_timeout=3600.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(registry.run)
        for number in range(10_000):
            registry.tell(f"k{number}", number)
        await trio.testing.wait_all_tasks_blocked()
        assert len(journal.handled) == 10_000
        assert registry.live_count == 1000
        assert sum(journal.stops.values()) == 9000
        passivated = [f"k{number}" for number in range(10_000) if not registry.is_live(f"k{number}")]
        for key in passivated[:100]:
            assert await registry.ask(key, -2) == -2
            assert journal.starts[key] == 2
        await trio.testing.wait_all_tasks_blocked()
        assert registry.live_count == 1000
        assert len(journal.handled) == 10_100
        nursery.cancel_scope.cancel()


async def test_recently_used_actors_survive_eviction() -> None:
    journal = Journal()
    registry = note_registry(journal, max_live=2, idle_timeout=3600.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(registry.run)
        await registry.ask("a", 1)
        await registry.ask("b", 2)
        await registry.ask("a", 3)
        await registry.ask("c", 4)
        await trio.testing.wait_all_tasks_blocked()
        assert (registry.is_live("a"), registry.is_live("b"), registry.is_live("c")) == (True, False, True)
        nursery.cancel_scope.cancel()


async def test_messages_racing_passivation_are_delivered_exactly_once() -> None:
    """Many senders, few keys, a tiny live bound, forced passivations and a yielding `on_stop`."""
    senders, per_sender = 50, 200
    journal = Journal(expected=senders * per_sender)
    registry = note_registry(journal, max_live=3, idle_timeout=0.0005, capacity=10_000, slow_stop=True)
    keys = [f"k{n}" for n in range(12)]
    rng = random.Random(1234)
    plans = [[(rng.choice(keys), rng.random()) for _ in range(per_sender)] for _ in range(senders)]
    answered: list[int] = []

    async def sender(number: int) -> None:
        for index, (key, dice) in enumerate(plans[number]):
            message = number * per_sender + index
            if dice < 0.5:
                registry.tell(key, message)
            else:
                answered.append(await registry.ask(key, message))
            if dice < 0.3:
                registry.passivate(rng.choice(keys))
            if dice < 0.7:
                await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        await nursery.start(registry.run)
        async with trio.open_nursery() as senders_nursery:
            for number in range(senders):
                senders_nursery.start_soon(sender, number)
        with trio.fail_after(30):
            await journal.all_handled.wait()
        await trio.sleep(0.01)
        nursery.cancel_scope.cancel()

    delivered = Tally(message for _, message in journal.handled)
    assert len(delivered) == senders * per_sender
    assert set(delivered.values()) == {1}
    expected_keys = {n * per_sender + i: plan[0] for n, p in enumerate(plans) for i, plan in enumerate(p)}
    assert all(expected_keys[message] == key for key, message in journal.handled)
    assert len(answered) == len(set(answered))
    assert sum(journal.starts.values()) > len(keys)


async def test_a_crash_answers_the_asker_logs_and_the_key_continues_with_a_new_instance(
    caplog: pytest.LogCaptureFixture,
) -> None:
    journal = Journal()
    registry = note_registry(journal)
    caplog.set_level(logging.WARNING, logger="auto_runtime.supervision")
    async with trio.open_nursery() as nursery:
        await nursery.start(registry.run)
        await registry.ask("a", 1)
        with pytest.raises(RuntimeError, match="cannot take -1"):
            await registry.ask("a", -1)
        assert await registry.ask("a", 2) == 2
        assert journal.starts["a"] == 2
        nursery.cancel_scope.cancel()
    assert any("'a'" in r.getMessage() and "cannot take -1" in r.getMessage() for r in caplog.records)


async def test_a_failing_start_answers_queued_asks_and_the_next_message_tries_again() -> None:
    attempts: list[str] = []

    class Flaky(Actor[int, int]):
        async def on_start(self) -> None:
            attempts.append("start")
            if len(attempts) == 1:
                raise OSError("ledger unavailable")

        async def receive(self, message: int) -> int:
            return message

    registry: Registry[str, int, int] = Registry("flaky", lambda key: Flaky())
    async with trio.open_nursery() as nursery:
        await nursery.start(registry.run)
        with pytest.raises(OSError, match="ledger unavailable"):
            await registry.ask("a", 1)
        assert not registry.is_live("a")
        assert await registry.ask("a", 2) == 2
        nursery.cancel_scope.cancel()


async def test_a_full_key_mailbox_raises_mailbox_full() -> None:
    gate = trio.Event()

    class Blocked(Actor[int, int]):
        async def receive(self, message: int) -> int:
            await gate.wait()
            return message

    registry: Registry[str, int, int] = Registry("blocked", lambda key: Blocked(), capacity=2)
    async with trio.open_nursery() as nursery:
        await nursery.start(registry.run)
        registry.tell("a", 0)
        await trio.testing.wait_all_tasks_blocked()
        registry.tell("a", 1)
        registry.tell("a", 2)
        with pytest.raises(MailboxFull):
            registry.tell("a", 3)
        gate.set()
        nursery.cancel_scope.cancel()


async def test_a_supervised_registry_passivates_everything_on_stop_then_refuses(
    autojump_clock: trio.testing.MockClock,
) -> None:
    journal = Journal()
    registry = note_registry(journal)
    supervisor = Supervisor("root", [registry.child_spec()])
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        for key in "abc":
            await registry.ask(key, 1)
        await supervisor.stop()
    assert journal.stops == Tally({"a": 1, "b": 1, "c": 1})
    assert registry.live_count == 0
    with pytest.raises(ActorStoppedError):
        registry.tell("a", 2)


async def test_an_idle_registry_actor_costs_under_ten_kilobytes() -> None:
    journal = Journal()
    registry = note_registry(journal, max_live=5000, idle_timeout=3600.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(registry.run)
        await trio.testing.wait_all_tasks_blocked()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for number in range(2000):
                registry.tell(f"k{number}", number)
            await trio.testing.wait_all_tasks_blocked()
            after = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        assert registry.live_count == 2000
        per_actor = (after - before - sys_getsizeof_journal(journal)) / 2000
        assert per_actor < 10_000, per_actor
        nursery.cancel_scope.cancel()


def sys_getsizeof_journal(journal: Journal) -> int:
    """The journal grows with the test's own bookkeeping; count it out generously."""
    return 200 * len(journal.handled)
