"""The server's clock (`auto_runtime.server_clock`): the wall clock, and a test's `MovableClock`, which only moves
forward, tells its listeners when it moves, and cuts a limit it was moved past."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import trio
import trio.testing

from auto_runtime.clock_text import microseconds_since_epoch
from auto_runtime.server_clock import ClockMovedBack, MovableClock, ServerClock

HOUR = timedelta(hours=1)


def test_the_wall_clock_reads_the_time_in_every_unit() -> None:
    clock = ServerClock()
    before = datetime.now(UTC)
    now, ms, us = clock.now(), clock.now_ms(), clock.now_us()
    after = datetime.now(UTC)
    assert before <= now <= after and not clock.movable
    assert microseconds_since_epoch(before) // 1000 <= ms <= microseconds_since_epoch(after) // 1000
    assert microseconds_since_epoch(before) <= us <= microseconds_since_epoch(after)


def test_a_movable_clock_moves_forward_by_a_duration_and_to_an_instant() -> None:
    clock = MovableClock()
    before = datetime.now(UTC)
    moved = clock.advance(HOUR)
    assert moved >= before + HOUR and clock.now() >= moved
    assert clock.now_us() >= microseconds_since_epoch(before + HOUR)
    assert clock.now_ms() >= microseconds_since_epoch(before + HOUR) // 1000
    target = moved + timedelta(days=2)
    assert target <= clock.set_to(target) < target + timedelta(minutes=1)


def test_a_movable_clock_never_moves_back() -> None:
    clock = MovableClock()
    moved = clock.advance(HOUR)
    with pytest.raises(ClockMovedBack, match="only moves forward"):
        clock.advance(-timedelta(seconds=1))
    with pytest.raises(ClockMovedBack, match="later than"):
        clock.set_to(moved - timedelta(minutes=1))
    with pytest.raises(ValueError, match="without an offset"):
        clock.set_to(datetime(2030, 1, 1))
    assert clock.now() >= moved


def test_every_move_tells_the_listeners_once_the_clock_reads_its_new_time() -> None:
    clock = MovableClock()
    told: list[datetime] = []
    clock.on_moved(lambda: told.append(clock.now()))
    before = clock.now()
    clock.advance(timedelta(seconds=1))
    target = before + HOUR
    clock.set_to(target)
    assert len(told) == 2 and told[0] >= before + timedelta(seconds=1) and told[1] >= target


async def test_a_limit_is_cut_by_the_move_past_it_and_not_by_a_shorter_one() -> None:
    clock = MovableClock()
    reached = False
    with pytest.raises(trio.TooSlowError), clock.fail_after(30):
        clock.advance(timedelta(seconds=29))  # short of the limit: nothing is cut
        await trio.lowlevel.checkpoint()
        reached = True
        clock.advance(timedelta(seconds=2))
        await trio.sleep_forever()
    assert reached
    with clock.fail_after(30):
        await trio.lowlevel.checkpoint()
    clock.advance(HOUR)  # a limit that ended is no longer cut by later moves


async def test_a_quiet_wait_ends_at_the_move_past_it_without_an_error_and_not_at_a_shorter_one() -> None:
    clock = MovableClock()
    reached = False
    with clock.move_on_after(10) as quiet:
        clock.advance(timedelta(seconds=9))  # short of its end: the wait goes on
        await trio.lowlevel.checkpoint()
        reached = True
        clock.advance(timedelta(seconds=2))
        await trio.sleep_forever()
    assert reached and quiet.cancelled_caught
    with ServerClock().move_on_after(0) as wall:
        await trio.sleep_forever()
    assert wall.cancelled_caught


async def test_a_sleep_is_woken_by_the_move_past_its_end_and_not_by_a_shorter_one() -> None:
    clock = MovableClock()
    woke = trio.Event()

    async def sleeper(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        deadline = clock.seconds() + 30
        task_status.started()
        await clock.sleep_until(deadline)
        woke.set()

    async with trio.open_nursery() as nursery:
        await nursery.start(sleeper)
        await trio.testing.wait_all_tasks_blocked()
        clock.advance(timedelta(seconds=29))
        await trio.testing.wait_all_tasks_blocked()
        assert not woke.is_set(), "a move short of the end leaves the sleep asleep"
        clock.advance(timedelta(seconds=2))
        await woke.wait()


async def test_a_sleep_until_a_time_passed_returns_at_once() -> None:
    clock = MovableClock()
    before = clock.seconds()
    clock.advance(timedelta(seconds=5))
    assert clock.seconds() >= before + 5
    with trio.fail_after(0):  # no wait: the cancel would be delivered at the first wait
        await clock.sleep_until(before + 5)


async def test_the_wall_clock_sleeps_on_trio_s_clock(mock_clock: trio.testing.MockClock) -> None:
    clock = ServerClock()
    woke = trio.Event()

    async def sleeper() -> None:
        await clock.sleep_until(clock.seconds() + 3600)
        woke.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sleeper)
        await trio.testing.wait_all_tasks_blocked()
        assert not woke.is_set()
        mock_clock.jump(3600)
        await woke.wait()
