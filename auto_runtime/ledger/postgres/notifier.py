"""Cross-process "something was appended" over LISTEN/NOTIFY, kept off the append path.

A transaction that runs NOTIFY takes a lock that PostgreSQL holds through its commit, the WAL flush
included, so every notifying transaction of the cluster commits one at a time. Appends therefore do
not notify. After an append commits, its process asks this notifier, which sends `NOTIFY` on a
connection of its own in a transaction of its own; requests that arrive while one is being sent are
folded into the next, so a busy process sends few. The same connection LISTENs and reports every
notification (its own included) to a callback.

Runs entirely on the ledger's asyncio thread.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from typing import Any

import asyncpg

CHANNEL = "auto_runtime_ledger_appended"


class Notifier:
    """Owns the listening connection and the task that sends coalesced notifications."""

    def __init__(self, on_notify: Callable[[], None]) -> None:
        self._on_notify = on_notify
        self._wanted = asyncio.Event()
        self._connection: Any = None
        self._task: asyncio.Task[None] | None = None

    async def start(self, url: str, sign_in: Mapping[str, Any] | None = None) -> None:
        """Connect (with `sign_in`, asyncpg's sign-in arguments beside the URL), listen, and start the sending
        task (on the loop)."""
        self._connection = await asyncpg.connect(url, **(sign_in or {}))
        await self._connection.add_listener(CHANNEL, lambda *_: self._on_notify())
        self._task = asyncio.get_running_loop().create_task(self._send_when_wanted())

    def request(self) -> None:
        """Ask for a notification to be sent soon (on the loop)."""
        self._wanted.set()

    async def _send_when_wanted(self) -> None:
        while True:
            await self._wanted.wait()
            self._wanted.clear()
            with contextlib.suppress(asyncpg.PostgresError, OSError, asyncpg.InterfaceError):
                await self._connection.execute(f"NOTIFY {CHANNEL}")

    async def close(self) -> None:
        """Stop sending and close the connection (on the loop)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._connection is not None:
            await self._connection.close()
