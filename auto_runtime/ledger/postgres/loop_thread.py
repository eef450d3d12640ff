"""One asyncio event loop on a dedicated thread, and the bridge that awaits its work from Trio.

asyncpg needs asyncio; the runtime is Trio. The loop runs on its own thread for the life of the
ledger; everything asyncpg (the pool included, which binds to the loop it is created on) is created
and used on that thread. A Trio task submits one coroutine per unit of work (a whole transaction,
not single statements) and waits for it through `TrioToken.run_sync_soon`. Cancelling the Trio task
cancels the asyncio task, which makes asyncpg cancel the running query and roll back.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import trio

T = TypeVar("T")


class LoopThread:
    """An asyncio loop running on a daemon thread from `start` to `stop`."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="ledger-asyncpg-loop", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def start(self) -> None:
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule `coro` on the loop (any thread)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the loop and return its result to the calling Trio task (cancellable)."""
        future = self.submit(coro)
        token = trio.lowlevel.current_trio_token()
        done = trio.Event()

        def wake(_: concurrent.futures.Future[T]) -> None:
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(done.set)

        future.add_done_callback(wake)
        try:
            await done.wait()
        except trio.Cancelled:
            future.cancel()
            raise
        return future.result()

    def stop(self) -> None:
        """Stop the loop and join the thread (blocks; call after the work on it has finished)."""
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join()
        self.loop.close()
