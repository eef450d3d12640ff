"""A kept MCP connection whose connect is cancelled ends as a cancellation, whatever error the transport raises on
the way out (`tools/mcp_connection.py`).

The streamable HTTP transport closes its HTTP client when it is cancelled; a send still pending then fails with
"Cannot send a request, as the client has been closed." That error once escaped a delivery attempt cancelled at
the test host's teardown. The transport below does the same, on purpose and every time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
import trio
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage

from auto_runtime.supervision import Backoff
from auto_runtime.tools.mcp_connection import McpConnection

BACKOFF = Backoff(initial=60.0, factor=2.0, maximum=60.0)
CLOSED = "Cannot send a request, as the client has been closed."


class SilentTransport:
    """Accepts the client's messages and never answers; when its connect is cancelled it fails as httpx does."""

    def __init__(self) -> None:
        self.entered = trio.Event()
        self.tries = 0

    @asynccontextmanager
    async def __call__(self) -> AsyncIterator[TransportStreams]:
        self.tries += 1
        to_client, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](8)
        to_server, from_client = anyio.create_memory_object_stream[SessionMessage](8)
        async with to_client, from_server, to_server, from_client:
            self.entered.set()
            try:
                yield from_server, to_server
            except BaseException:
                raise RuntimeError(CLOSED) from None


async def cancelled_while_connecting(connection: McpConnection, transport: SilentTransport) -> list[str]:
    """One request through `connection`, cancelled once its transport is entered: what it saw."""
    outcome: list[str] = []
    transport.entered = trio.Event()

    async def request() -> None:
        try:
            async with connection.session():
                outcome.append("connected")
        except trio.Cancelled:
            outcome.append("cancelled")
            raise

    async with trio.open_nursery() as requests:
        requests.start_soon(request)
        await transport.entered.wait()
        requests.cancel_scope.cancel()
    return outcome


async def test_a_connect_cancelled_by_its_request_raises_cancelled_and_starts_no_back_off() -> None:
    transport = SilentTransport()
    connection = McpConnection("silent", transport, connect_seconds=3600.0, backoff=BACKOFF)
    async with trio.open_nursery() as host:
        connection.attach(host)
        assert await cancelled_while_connecting(connection, transport) == ["cancelled"]
        assert await cancelled_while_connecting(connection, transport) == ["cancelled"]
        assert transport.tries == 2, "no back-off window: the server did not fail, the request gave up"
        connection.detach()


async def test_a_connect_past_its_bound_is_too_slow_not_the_transport_s_error() -> None:
    transport = SilentTransport()
    connection = McpConnection("silent", transport, connect_seconds=0.0, backoff=BACKOFF)
    async with trio.open_nursery() as host:
        connection.attach(host)
        with pytest.raises(trio.TooSlowError):
            async with connection.session():
                pass  # pragma: no cover - never connects
        connection.detach()


async def test_a_one_off_connect_cancelled_by_its_request_raises_cancelled() -> None:
    """Without a host nursery each request opens its own session; its cancelled connect ends the same way."""
    transport = SilentTransport()
    connection = McpConnection("silent", transport, connect_seconds=3600.0, backoff=BACKOFF)
    assert await cancelled_while_connecting(connection, transport) == ["cancelled"]
