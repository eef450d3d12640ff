"""A kept MCP connection whose connect failed answers at once within its back-off window, and tries again after
it (`tools/mcp_connection.py`): a server that is down costs a request nothing past its first failure."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing
from mcp.client._transport import TransportStreams

from auto_runtime.supervision import Backoff
from auto_runtime.tools.mcp_connection import McpConnection, StillUnreachable

BACKOFF = Backoff(initial=2.0, factor=2.0, maximum=8.0)


class RefusedTransport:
    """Opens nothing: every connect is refused, as by an address nothing listens on. Counts the tries."""

    def __init__(self) -> None:
        self.tries = 0

    @asynccontextmanager
    async def __call__(self) -> AsyncIterator[TransportStreams]:
        self.tries += 1
        raise ConnectionRefusedError("nothing listens there")
        yield  # pragma: no cover - never reached


async def _connect(connection: McpConnection) -> None:
    async with connection.session():
        pass


async def test_within_the_back_off_a_request_fails_at_once_and_after_it_tries_again(
    mock_clock: trio.testing.MockClock,
) -> None:
    transport = RefusedTransport()
    connection = McpConnection("down", transport, connect_seconds=5.0, backoff=BACKOFF)
    async with trio.open_nursery() as nursery:
        connection.attach(nursery)
        with pytest.raises(BaseException, match="nothing listens there"):
            await _connect(connection)
        started = trio.current_time()
        with pytest.raises(StillUnreachable):
            await _connect(connection)
        assert (transport.tries, trio.current_time()) == (1, started), "nothing tried, no time waited"

        mock_clock.jump(BACKOFF.delay(1))
        with pytest.raises(BaseException, match="nothing listens there"):
            await _connect(connection)
        assert transport.tries == 2
        mock_clock.jump(BACKOFF.delay(1))  # the second failure's window is twice as long
        with pytest.raises(StillUnreachable):
            await _connect(connection)
        mock_clock.jump(BACKOFF.delay(2) - BACKOFF.delay(1))
        with pytest.raises(BaseException, match="nothing listens there"):
            await _connect(connection)
        assert transport.tries == 3
        connection.detach()
