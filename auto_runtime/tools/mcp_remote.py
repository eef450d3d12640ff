"""The `mcp` kind: a remote MCP server over Streamable HTTP, one kept session over one HTTP connection pool.

Every request carries the entry's headers (or the token its auth block mints, renewed once on a 401), passes
the host policy, and follows no redirect the SDK would not (it follows only same-origin ones, each checked
again by the host hook). The HTTP status of each answer reaches the call through the request tracker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx2
from mcp.client.streamable_http import streamable_http_client

from auto_runtime.server_clock import WALL_CLOCK, ServerClock
from auto_runtime.settings import ToolServer
from auto_runtime.supervision import Backoff
from auto_runtime.tools.hosts import HostPolicy
from auto_runtime.tools.kinds import HTTP_RESULT_CAP, Limits, ListedTool
from auto_runtime.tools.mcp_connection import McpConnection, TransportOpener
from auto_runtime.tools.mcp_tools import McpTools
from auto_runtime.tools.oauth import BearerFromSource, ClientCredentials
from auto_runtime.tools.scrubbing import SecretSet
from auto_runtime.tools.servers import ToolCallResult
from auto_runtime.tools.tracking import RequestTracker

HTTP_TIMEOUT_SECONDS = 60.0


def http_client(
    hosts: HostPolicy,
    *,
    headers: Mapping[str, str] | None = None,
    params: Mapping[str, str] | None = None,
    auth: httpx2.Auth | None = None,
    tracker: RequestTracker | None = None,
) -> httpx2.AsyncClient:
    """A pooled client that checks every request's host and follows no redirect."""
    request_hooks: list[Any] = [hosts.check_request]
    response_hooks: list[Any] = []
    if tracker is not None:

        async def sent(request: httpx2.Request) -> None:
            try:
                tracker.sent_body(request.content)
            except httpx2.RequestNotRead:
                return

        async def answered(response: httpx2.Response) -> None:
            try:
                identifier = tracker.sent_body(response.request.content) if response.request.method == "POST" else None
            except httpx2.RequestNotRead:
                return
            if identifier is not None:
                tracker.answered(identifier, response.status_code, dict(response.headers.items()))

        request_hooks.append(sent)
        response_hooks.append(answered)
    return httpx2.AsyncClient(
        headers=dict(headers or {}),
        params=dict(params or {}),
        auth=auth,
        timeout=httpx2.Timeout(HTTP_TIMEOUT_SECONDS),
        follow_redirects=False,
        trust_env=False,
        event_hooks={"request": request_hooks, "response": response_hooks},
    )


class McpHttpServer:
    """One `mcp` entry's client."""

    def __init__(
        self,
        name: str,
        entry: ToolServer,
        secrets: SecretSet,
        hosts: HostPolicy,
        limits: Limits,
        backoff: Backoff,
        clock: ServerClock = WALL_CLOCK,
    ) -> None:
        assert entry.url is not None
        self.name = name
        self.entry = entry
        self.url = entry.url
        self.tracker = RequestTracker()
        self._token_http = http_client(hosts)
        self.credentials = (
            ClientCredentials(
                name, entry.auth, self._token_http, secrets, resource_url=entry.url, limit_seconds=limits.token
            )
            if entry.auth is not None
            else None
        )
        auth = BearerFromSource(self.credentials) if self.credentials is not None else None
        self.http = http_client(hosts, headers=entry.headers, auth=auth, tracker=self.tracker)
        self.connection = McpConnection(
            name, self._transport_opener(), connect_seconds=limits.connect, backoff=backoff, clock=clock
        )
        self.tools = McpTools(
            name,
            entry,
            self.connection,
            self.tracker,
            secrets,
            limits,
            HTTP_RESULT_CAP,
            before_request=self._mint if self.credentials is not None else _nothing,
        )

    def _transport_opener(self) -> TransportOpener:
        def open_transport() -> Any:
            return streamable_http_client(self.url, http_client=self.http, terminate_on_close=True)

        return open_transport

    async def _mint(self) -> None:
        assert self.credentials is not None
        await self.credentials.token()

    def attach(self, nursery: Any) -> None:
        self.tools.attach(nursery)

    async def list_tools(self) -> list[ListedTool]:
        return await self.tools.list_tools()

    async def call(
        self, tool: str, arguments: Mapping[str, Any], run_id: str, *, delivery_id: str | None = None
    ) -> ToolCallResult:
        return await self.tools.call(tool, arguments, run_id, delivery_id=delivery_id)

    async def aclose(self) -> None:
        await self.tools.aclose()
        await self.http.aclose()
        await self._token_http.aclose()


async def _nothing() -> None:
    return None
