"""`ToolServers` over MCP Streamable HTTP: the `tool_servers` entries of type `mcp` (reasoning-format §7.1).

Names are checked against the configuration first (no server contacted), then each named server is asked
for its list (10 s to connect, 10 s to list). Each call opens its own connection, carries
`_meta: {"auto.on/run_id": ...}`, and returns what the server answered; a JSON-RPC -32602 is
`arguments_refused`, anything else that keeps an answer away a `server_failure`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2
import mcp_types
import trio
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from auto_runtime.models.failures import retry_after_seconds
from auto_runtime.settings import ToolServer
from auto_runtime.tools.servers import (
    ContentBlock,
    OfferedTool,
    ToolCallFailed,
    ToolCallResult,
    ToolNotOffered,
    ToolServerFailed,
    WantedTool,
)

CONNECT_SECONDS = 10.0
LIST_SECONDS = 10.0
MAX_PAGES = 20
RUN_ID_META = "auto.on/run_id"
MAX_RESULT_BYTES = 16 * 1024 * 1024
LONGEST_WAIT_SECONDS = 10.0
RATE_LIMIT_TRIES = 3


@dataclass
class _Seen:
    """The HTTP status of the last response a connection got, which the MCP client does not pass on."""

    status: int = 0
    retry_after: float | None = None
    headers: dict[str, str] = field(default_factory=dict)
    jsonrpc_id: str | int | None = None

    async def hook(self, response: httpx2.Response) -> None:
        self.status = response.status_code
        self.headers = {name.lower(): value for name, value in response.headers.items()}
        self.retry_after = retry_after_seconds(self.headers) if response.status_code == 429 else None

    async def sent(self, request: httpx2.Request) -> None:
        """The JSON-RPC id of a `tools/call` the connection sends."""
        try:
            message = json.loads(request.content or b"null")
        except (ValueError, httpx2.RequestNotRead):
            return
        if isinstance(message, dict) and message.get("method") == "tools/call":
            identifier = message.get("id")
            self.jsonrpc_id = identifier if isinstance(identifier, str | int) else None


def _mcp_error(error: BaseException) -> MCPError | None:
    """The MCP error inside `error`, which the client's task groups may wrap in exception groups."""
    if isinstance(error, MCPError):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = _mcp_error(inner)
            if found is not None:
                return found
    return None


def _server_request_id(entry: ToolServer, result: mcp_types.CallToolResult, seen: _Seen) -> str | None:
    """The server's own id of the call, where the entry's `request_id` says to find it: a key of the result's
    metadata, else a response header."""
    if entry.request_id is None:
        return None
    meta = result.meta if isinstance(result.meta, Mapping) else {}
    found = meta.get(entry.request_id, seen.headers.get(entry.request_id.lower()))
    return str(found) if found is not None else None


def serves(entry: ToolServer, org: str, playbook: str) -> bool:
    orgs = entry.orgs
    if orgs is not None and org not in orgs:
        return False
    return entry.playbooks is None or playbook in entry.playbooks


def _blocks(result: mcp_types.CallToolResult) -> tuple[ContentBlock, ...]:
    blocks: list[ContentBlock] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            blocks.append(ContentBlock("text", block.text))
        else:
            kind = str(getattr(block, "type", "other"))
            mime = getattr(block, "mime_type", None)
            blocks.append(ContentBlock(kind, None, str(mime) if mime else None))
    return tuple(blocks)


class McpHttpToolServers:
    """The MCP servers of `tool_servers`, reached over Streamable HTTP."""

    def __init__(self, entries: Mapping[str, ToolServer]) -> None:
        self.entries = dict(entries)

    def secrets(self) -> frozenset[str]:
        return frozenset(value for entry in self.entries.values() for value in (entry.headers or {}).values())

    def _entry(self, org: str, playbook: str, server: str) -> ToolServer | None:
        entry = self.entries.get(server)
        if entry is None or not serves(entry, org, playbook):
            return None
        return entry

    @asynccontextmanager
    async def _client(self, entry: ToolServer, seen: _Seen | None = None) -> AsyncIterator[Client]:
        assert entry.url is not None
        hooks: dict[str, list[Any]] = {"response": [seen.hook], "request": [seen.sent]} if seen is not None else {}
        async with httpx2.AsyncClient(
            headers=dict(entry.headers or {}), timeout=httpx2.Timeout(30.0), event_hooks=hooks
        ) as http:
            transport = streamable_http_client(entry.url, http_client=http)
            async with Client(transport, mode="legacy", cache=None) as client:
                yield client

    async def _listed(self, name: str, entry: ToolServer) -> list[mcp_types.Tool]:
        seen = _Seen()
        try:
            with trio.fail_after(CONNECT_SECONDS + LIST_SECONDS):
                async with self._client(entry, seen) as client:
                    tools: list[mcp_types.Tool] = []
                    cursor: str | None = None
                    for _ in range(MAX_PAGES):
                        page = await client.list_tools(cursor=cursor)
                        tools.extend(page.tools)
                        cursor = page.next_cursor
                        if not cursor:
                            break
                    return tools
        except trio.TooSlowError:
            raise ToolServerFailed(
                "unreachable", f"The tool server {name} did not list its tools in time.", retry_after=5
            ) from None
        except Exception as error:  # transports raise many kinds, often grouped
            if seen.status == 429:
                wait = round(seen.retry_after) if seen.retry_after is not None else 5
                raise ToolServerFailed(
                    "rate_limited", f"The tool server {name} is limiting requests; try again in {wait} seconds.", wait
                ) from None
            if seen.status in (401, 403):
                raise ToolServerFailed(
                    "key_refused", f"The tool server {name} refused the runtime's credentials (HTTP {seen.status}).", 5
                ) from None
            if seen.status >= 500:
                raise ToolServerFailed(
                    "failing", f"The tool server {name} is failing (HTTP {seen.status}).", 5
                ) from None
            found = _mcp_error(error)
            if found is not None:
                raise ToolServerFailed(
                    "failing", f"The tool server {name} could not list its tools: {found.error.message[:300]}", 5
                ) from None
            raise ToolServerFailed(
                "unreachable", f"The tool server {name} could not be reached ({type(error).__name__}).", 5
            ) from None

    async def offered(self, org: str, playbook: str, wanted: Sequence[WantedTool]) -> list[OfferedTool]:
        entries: dict[str, ToolServer] = {}
        for item in wanted:
            entry = self._entry(org, playbook, item.server)
            if entry is None:
                raise ToolNotOffered(
                    "tool_server_not_configured", f"No tool server named {item.server} serves this playbook."
                )
            if entry.type != "mcp":
                raise ToolNotOffered(
                    "tool_server_not_configured",
                    f"The tool server {item.server} is of type {entry.type}, which this server cannot reach yet.",
                )
            if item.tool != "*" and entry.allowed is not None and item.tool not in entry.allowed:
                raise ToolNotOffered(
                    "tool_not_allowed", f"The tool server {item.server} does not allow the tool {item.tool}."
                )
            entries[item.server] = entry
        listed = {name: await self._listed(name, entry) for name, entry in entries.items()}
        offered: list[OfferedTool] = []
        chosen: set[tuple[str, str]] = set()
        for item in wanted:
            entry = entries[item.server]
            tools = listed[item.server]
            if item.tool == "*":
                picked = [t for t in tools if entry.allowed is None or t.name in entry.allowed]
            else:
                picked = [t for t in tools if t.name == item.tool]
                if not picked:
                    raise ToolNotOffered(
                        "tool_not_listed", f"The tool server {item.server} does not list the tool {item.tool}."
                    )
            for tool in picked:
                if (item.server, tool.name) in chosen:
                    continue
                chosen.add((item.server, tool.name))
                annotations = tool.annotations
                offered.append(
                    OfferedTool(
                        server=item.server,
                        tool=tool.name,
                        description=tool.description or "",
                        input_schema=dict(tool.input_schema),
                        read_only=bool(annotations is not None and annotations.read_only_hint),
                        record_content=entry.record_content,
                    )
                )
        return offered

    async def call(
        self, org: str, playbook: str, tool: OfferedTool, arguments: Mapping[str, Any], run_id: str
    ) -> ToolCallResult:
        entry = self._entry(org, playbook, tool.server)
        if entry is None:
            raise ToolCallFailed("server_failure", f"The tool server {tool.server} no longer serves this playbook.")
        meta: Any = {RUN_ID_META: run_id}
        for _ in range(RATE_LIMIT_TRIES - 1):
            seen = _Seen()
            try:
                return await self._call_once(entry, tool, arguments, meta, seen)
            except ToolCallFailed:
                wait = seen.retry_after
                if seen.status != 429 or wait is None or wait > LONGEST_WAIT_SECONDS:
                    raise
                await trio.sleep(wait)
        return await self._call_once(entry, tool, arguments, meta, _Seen())

    async def _call_once(
        self, entry: ToolServer, tool: OfferedTool, arguments: Mapping[str, Any], meta: Any, seen: _Seen
    ) -> ToolCallResult:
        try:
            async with self._client(entry, seen) as client:
                result = await client.call_tool(tool.tool, dict(arguments), meta=meta)
        except Exception as error:
            known = seen.jsonrpc_id
            if seen.status == 429:
                raise ToolCallFailed(
                    "server_failure", "The tool server is limiting requests (HTTP 429).", known
                ) from None
            found = _mcp_error(error)
            if found is not None and found.error.code == mcp_types.INVALID_PARAMS:
                raise ToolCallFailed("arguments_refused", found.error.message, known) from None
            if found is not None:
                raise ToolCallFailed("server_failure", found.error.message, known) from None
            raise ToolCallFailed("server_failure", f"The call failed ({type(error).__name__}).", known) from None
        size = len(json.dumps(result.model_dump(mode="json", by_alias=True)).encode("utf-8"))
        if size > MAX_RESULT_BYTES:
            raise ToolCallFailed("too_large", f"The result took {size:,} bytes; one call may return 16 MiB.")
        return ToolCallResult(
            blocks=_blocks(result),
            structured=result.structured_content,
            is_error=bool(result.is_error),
            jsonrpc_id=seen.jsonrpc_id,
            server_request_id=_server_request_id(entry, result, seen),
            size=size,
        )
