"""One kept MCP session to one server, over any transport, reconnected with back-off when it breaks.

`McpConnection.session()` yields a live `Client`:

- while the connection has a host nursery (`attach`), one session is kept per server and shared by every list
  and call; a task in the host nursery holds it open. A session whose transport ended, or whose request failed
  without an answer from the server, is dropped, and the next request connects again. A connect that fails
  starts a back-off window (the delay of the consecutive failures, none after a success): a request within it
  fails at once with `StillUnreachable` instead of waiting, so a server that is down costs each request
  nothing past its first failure, and the first request after the window tries again;
- without a host (the set is not running), each request opens its own session and closes it when it ends, as
  the seeds say of a call made when no run holds a connection.

Connecting (transport and `initialize`) is bounded by `connect_seconds` of the server's clock (`clock`).
Concurrency rules: connects are serialised by a lock, so one session at most is being opened per server; every
method runs on the Trio thread.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import cast

import mcp_types
import trio
from mcp.client import Client
from mcp.client._transport import TransportStreams
from mcp.shared.exceptions import MCPError

from auto_runtime.server_clock import WALL_CLOCK, ServerClock
from auto_runtime.supervision import Backoff

log = logging.getLogger("auto_runtime.tools")

TransportOpener = Callable[[], AbstractAsyncContextManager[TransportStreams]]


def mcp_error_in(error: BaseException) -> MCPError | None:
    """The MCP error inside `error`, which the client's task groups may wrap in exception groups."""
    if isinstance(error, MCPError):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = mcp_error_in(inner)
            if found is not None:
                return found
    if error.__cause__ is not None and error.__cause__ is not error:
        return mcp_error_in(error.__cause__)
    return None


def keeps_session(error: BaseException) -> bool:
    """Whether the session that raised `error` is still good: the server answered with a JSON-RPC error."""
    found = mcp_error_in(error)
    return found is not None and found.error.code != mcp_types.CONNECTION_CLOSED


class StillUnreachable(ConnectionError):
    """The server's last connect failed and its back-off window has not passed; nothing was tried."""


async def _raise_cancelled_if_cancelled() -> None:
    """Raise `trio.Cancelled` when the calling task is being cancelled, else return at once.

    A connect that is cancelled (its request gave up, or the set is closing) can surface from the SDK as another
    error: the transport's HTTP client is closed first and a pending send then fails with "the client has been
    closed". That is the cancellation, not a failure of the server, and it must travel as one.
    """
    if trio.current_effective_deadline() == -math.inf:
        await trio.lowlevel.checkpoint()


@dataclass(eq=False)
class _Kept:
    client: Client
    done: trio.Event


class McpConnection:
    def __init__(
        self,
        name: str,
        open_transport: TransportOpener,
        *,
        connect_seconds: float,
        backoff: Backoff,
        clock: ServerClock = WALL_CLOCK,
    ) -> None:
        self.name = name
        self.open_transport = open_transport
        self.connect_seconds = connect_seconds
        self.clock = clock
        self.backoff = backoff
        self._nursery: trio.Nursery | None = None
        self._kept: _Kept | None = None
        self._lock = trio.Lock()
        self._failures = 0
        self._retry_at = 0.0
        """The Trio time before which no connect is tried again, after a failure."""
        self.connects = 0
        """How many sessions have been opened (kept or per request): what the reconnect tests read."""

    def attach(self, nursery: trio.Nursery) -> None:
        """Keep sessions from now on, held by tasks of `nursery`."""
        self._nursery = nursery

    def detach(self) -> None:
        """Close the kept session (its task ends) and open one per request from now on."""
        self._nursery = None
        self.drop()

    def drop(self) -> None:
        """Forget the kept session; its holding task closes it."""
        kept, self._kept = self._kept, None
        if kept is not None:
            kept.done.set()

    @asynccontextmanager
    async def session(self) -> AsyncIterator[Client]:
        if self._nursery is None:
            async with self._one_off() as client:
                yield client
            return
        kept = await self._live(self._nursery)
        try:
            yield kept.client
        except Exception as error:  # a cancelled request leaves the session as it was
            if not keeps_session(error) and self._kept is kept:
                self.drop()
            raise

    @asynccontextmanager
    async def _one_off(self) -> AsyncIterator[Client]:
        """A session for one request; the caller's own limit bounds its connect (the client's task groups must
        open and close inside one cancel scope)."""
        try:
            async with Client(self.open_transport(), mode="legacy", cache=None) as client:
                self.connects += 1
                yield client
        except Exception:
            await _raise_cancelled_if_cancelled()
            raise

    async def _live(self, nursery: trio.Nursery) -> _Kept:
        async with self._lock:
            kept = self._kept
            if kept is not None and not kept.done.is_set():
                return kept
            if self._failures and trio.current_time() < self._retry_at:
                raise StillUnreachable(f"{self._failures} connects in a row failed; the next waits for its back-off")
            try:
                with self.clock.fail_after(self.connect_seconds):
                    kept = cast(_Kept, await nursery.start(self._hold))
            except trio.Cancelled:
                raise  # the request gave up waiting: nothing is known of the server
            except BaseException:
                self._failures += 1
                self._retry_at = trio.current_time() + self.backoff.delay(self._failures)
                raise
            self._failures = 0
            self.connects += 1
            self._kept = kept
            return kept

    async def _hold(self, task_status: trio.TaskStatus[_Kept]) -> None:
        """Open one session, report it, and hold it until it is dropped or its transport ends."""
        done = trio.Event()
        kept: _Kept | None = None
        try:
            async with Client(self.open_transport(), mode="legacy", cache=None) as client:
                kept = _Kept(client, done)
                task_status.started(kept)
                await done.wait()
        except Exception as error:
            if kept is None:
                await _raise_cancelled_if_cancelled()
                raise
            log.info("tool server %s: its session ended (%s)", self.name, type(error).__name__)
        finally:
            if kept is not None and self._kept is kept:
                self._kept = None
            done.set()
