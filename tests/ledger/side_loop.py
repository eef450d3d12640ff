"""A loop actor of the tests' own: runs coroutines on an asyncio loop thread beside the ledger's, for
PostgreSQL work the ledger must not do itself (a transaction held open by another session)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import trio

from auto_runtime.actors.loop_actor import LoopActor, LoopActorRef

T = TypeVar("T")


class CoroutineRunner(LoopActor[Coroutine[Any, Any, Any], Any]):
    """Awaits each coroutine it is sent, on its loop."""

    async def receive(self, message: Coroutine[Any, Any, Any]) -> Any:
        return await message


class SideLoop:
    def __init__(self, ref: LoopActorRef[Coroutine[Any, Any, Any], Any]) -> None:
        self._ref = ref

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the side loop and return its result."""
        result: T = await self._ref.ask(coro, timeout=None)
        return result


@asynccontextmanager
async def side_loop() -> AsyncIterator[SideLoop]:
    """A side loop for the block; it ends once the work sent to it has finished."""
    ref = LoopActorRef[Coroutine[Any, Any, Any], Any]("side-loop")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ref.serve_life, CoroutineRunner)
        try:
            yield SideLoop(ref)
        finally:
            ref.stop()
