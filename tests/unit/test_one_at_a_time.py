"""`OneAtATime`: blocks of one key run one after another in the order asked, other keys never wait, and a key
is kept only while a block holds or waits for its turn."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from auto_runtime.playbooks.one_at_a_time import OneAtATime


async def test_blocks_of_one_key_take_turns_in_the_order_asked() -> None:
    turns: OneAtATime[str] = OneAtATime()
    release = trio.Event()
    order: list[tuple[int, str]] = []

    async def block(index: int) -> None:
        async with turns.turn("pb"):
            order.append((index, "in"))
            if index == 0:
                await release.wait()
            await trio.lowlevel.checkpoint()
            order.append((index, "out"))

    async with trio.open_nursery() as nursery:
        for index in range(3):
            nursery.start_soon(block, index)
            await trio.testing.wait_all_tasks_blocked()
        assert order == [(0, "in")]
        assert len(turns) == 1
        release.set()
    assert order == [(0, "in"), (0, "out"), (1, "in"), (1, "out"), (2, "in"), (2, "out")]
    assert len(turns) == 0


async def test_another_key_does_not_wait() -> None:
    turns: OneAtATime[str] = OneAtATime()
    release = trio.Event()

    async def holds() -> None:
        async with turns.turn("a"):
            await release.wait()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(holds)
        await trio.testing.wait_all_tasks_blocked()
        async with turns.turn("b"):
            assert len(turns) == 2
        release.set()
    assert len(turns) == 0


async def test_a_block_cancelled_while_it_waits_leaves_nothing_behind() -> None:
    turns: OneAtATime[str] = OneAtATime()
    release = trio.Event()
    entered: list[str] = []

    async def holds() -> None:
        async with turns.turn("pb"):
            await release.wait()

    async def waits(cancel_scope: trio.CancelScope) -> None:
        with cancel_scope:
            async with turns.turn("pb"):
                entered.append("waiter")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(holds)
        await trio.testing.wait_all_tasks_blocked()
        scope = trio.CancelScope()
        nursery.start_soon(waits, scope)
        await trio.testing.wait_all_tasks_blocked()
        scope.cancel()
        await trio.testing.wait_all_tasks_blocked()
        assert len(turns) == 1
        release.set()
    assert entered == []
    assert len(turns) == 0


async def test_a_block_that_raises_gives_its_turn_up() -> None:
    turns: OneAtATime[str] = OneAtATime()
    with pytest.raises(ValueError, match="refused"):
        async with turns.turn("pb"):
            raise ValueError("refused")
    async with turns.turn("pb"):
        assert len(turns) == 1
    assert len(turns) == 0
