"""Cross-process "something was appended" over LISTEN/NOTIFY, kept off the append path.

A transaction that runs NOTIFY takes a lock that PostgreSQL holds through its commit, the WAL flush
included, so every notifying transaction of the cluster commits one at a time. Appends therefore do
not notify. After an append commits, its process asks this notifier, which sends `NOTIFY` on a
connection of its own in a transaction of its own; requests that arrive while one is being sent are
folded into the next, so a busy process sends few. The same connection LISTENs and reports every
notification (its own included) to a callback, with its channel: `CHANNEL` for appends, `DUE_CHANNEL` for due
work a server recorded for the holder of another partition (`PostgresLedger.wake_other_servers`), each asked for
by `request(channel)` and folded the same way (the channels wanted meanwhile notified in one transaction).

Runs entirely on the ledger's asyncio thread.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from typing import Any

import asyncpg

CHANNEL = "auto_runtime_ledger_appended"
DUE_CHANNEL = "auto_runtime_due_work_recorded"


class Notifier:
    """Owns the listening connection and the task that sends coalesced notifications."""

    def __init__(self, on_notify: Callable[[str], None]) -> None:
        self._on_notify = on_notify
        self._wanted = asyncio.Event()
        self._channels: set[str] = set()
        self._connection: Any = None
        self._task: asyncio.Task[None] | None = None

    async def start(self, url: str, sign_in: Mapping[str, Any] | None = None) -> None:
        """Connect (with `sign_in`, asyncpg's sign-in arguments beside the URL), listen, and start the sending
        task (on the loop)."""
        self._connection = await asyncpg.connect(url, **(sign_in or {}))
        for channel in (CHANNEL, DUE_CHANNEL):
            await self._connection.add_listener(channel, lambda _conn, _pid, heard, _payload: self._on_notify(heard))
        self._task = asyncio.get_running_loop().create_task(self._send_when_wanted())

    def request(self, channel: str = CHANNEL) -> None:
        """Ask for a notification on `channel` (`CHANNEL` or `DUE_CHANNEL`) to be sent soon (on the loop)."""
        self._channels.add(channel)
        self._wanted.set()

    async def _send_when_wanted(self) -> None:
        while True:
            await self._wanted.wait()
            self._wanted.clear()
            channels, self._channels = sorted(self._channels), set()
            with contextlib.suppress(asyncpg.PostgresError, OSError, asyncpg.InterfaceError):
                await self._connection.execute("; ".join(f"NOTIFY {channel}" for channel in channels))

    async def close(self) -> None:
        """Stop sending and close the connection (on the loop)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._connection is not None:
            await self._connection.close()
