"""Cross-process "something was appended" over LISTEN/NOTIFY, kept off the append path.

A transaction that runs NOTIFY takes a lock that PostgreSQL holds through its commit, the WAL flush
included, so every notifying transaction of the cluster commits one at a time. Appends therefore do
not notify. After an append commits, its process asks this notifier, which sends `NOTIFY` on a
connection of its own in a transaction of its own; requests that arrive while one is being sent are
folded into the next, so a busy process sends few. The same connection LISTENs and reports every
notification (its own included) to a callback, with its channel and payload: `CHANNEL` for appends,
`DUE_CHANNEL` for due work a server recorded for the holder of another partition (`..due_wake`: asked after
such a write committed), each asked for by `request(channel)` and folded the same way (the channels wanted meanwhile
notified in one transaction); and `BEGUN_CHANNEL`, whose payload names runs a server began for another
(`PostgresLedger.tell_runs_begun`): the run ids asked for meanwhile, comma-separated, in as many notifications as
PostgreSQL's payload limit needs, in the same transaction.

Runs entirely on the ledger's asyncio thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final

import asyncpg

CHANNEL = "auto_runtime_ledger_appended"
DUE_CHANNEL = "auto_runtime_due_work_recorded"
BEGUN_CHANNEL = "auto_runtime_runs_begun"
MAX_PAYLOAD: Final = 7000
"""The most bytes of run ids one notification carries (PostgreSQL refuses a payload of 8000 bytes or more)."""
_RUN_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def payloads(run_ids: Iterable[str]) -> Iterator[str]:
    """The run ids (canonical UUIDs only: they are written into the statement) as comma-separated payloads, each
    at most `MAX_PAYLOAD` bytes."""
    chunk: list[str] = []
    size = 0
    for run_id in run_ids:
        if not _RUN_ID.fullmatch(run_id):
            raise ValueError(f"not a run id: {run_id!r}")
        if chunk and size + 1 + len(run_id) > MAX_PAYLOAD:
            yield ",".join(chunk)
            chunk, size = [], 0
        size += len(run_id) + (1 if chunk else 0)
        chunk.append(run_id)
    if chunk:
        yield ",".join(chunk)


class Notifier:
    """Owns the listening connection and the task that sends coalesced notifications."""

    def __init__(self, on_notify: Callable[[str, str], None]) -> None:
        self._on_notify = on_notify
        self._wanted = asyncio.Event()
        self._channels: set[str] = set()
        self._begun: set[str] = set()
        self._connection: Any = None
        self._task: asyncio.Task[None] | None = None

    async def start(self, url: str, sign_in: Mapping[str, Any] | None = None) -> None:
        """Connect (with `sign_in`, asyncpg's sign-in arguments beside the URL), listen, and start the sending
        task (on the loop)."""
        self._connection = await asyncpg.connect(url, **(sign_in or {}))
        for channel in (CHANNEL, DUE_CHANNEL, BEGUN_CHANNEL):
            await self._connection.add_listener(
                channel, lambda _conn, _pid, heard, payload: self._on_notify(heard, payload)
            )
        self._task = asyncio.get_running_loop().create_task(self._send_when_wanted())

    def request(self, channel: str = CHANNEL) -> None:
        """Ask for a notification on `channel` (`CHANNEL` or `DUE_CHANNEL`) to be sent soon (on the loop)."""
        self._channels.add(channel)
        self._wanted.set()

    def request_begun(self, run_ids: Iterable[str]) -> None:
        """Ask for `BEGUN_CHANNEL` notifications naming `run_ids` to be sent soon (on the loop)."""
        self._begun.update(run_ids)
        self._wanted.set()

    async def _send_when_wanted(self) -> None:
        while True:
            await self._wanted.wait()
            self._wanted.clear()
            channels, self._channels = sorted(self._channels), set()
            begun, self._begun = sorted(self._begun), set()
            statements = [f"NOTIFY {channel}" for channel in channels]
            statements += [f"NOTIFY {BEGUN_CHANNEL}, '{payload}'" for payload in payloads(begun)]
            with contextlib.suppress(asyncpg.PostgresError, OSError, asyncpg.InterfaceError):
                await self._connection.execute("; ".join(statements))

    async def close(self) -> None:
        """Stop sending and close the connection (on the loop)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._connection is not None:
            await self._connection.close()
