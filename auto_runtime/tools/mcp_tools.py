"""Listing and calling the tools of an MCP server over a kept session (reasoning-format §7.1, §7.3, §7.6).

Shared by the Streamable HTTP and stdio kinds; the transport differs, and so does the result cap (16 MiB over
HTTP, 4 MiB on stdio). A listing is bounded by `Limits.list` after connecting; a call by `Limits.call`
(`timed_out`). A JSON-RPC -32602 is `arguments_refused`; anything else that keeps an answer away is a
`server_failure`; a 429 that asks for at most `Limits.longest_wait` seconds is waited out, up to three tries.
Every text of a result and every failure's detail is scrubbed of the shared secrets before it leaves.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types
import trio

from auto_runtime.settings import ToolServer
from auto_runtime.tools.kinds import DELIVERY_ID_META, RATE_LIMIT_TRIES, RUN_ID_META, Limits, ListedTool
from auto_runtime.tools.mcp_connection import McpConnection, keeps_session, mcp_error_in
from auto_runtime.tools.oauth import TokenFailed
from auto_runtime.tools.scrubbing import SecretSet
from auto_runtime.tools.servers import ContentBlock, ToolCallFailed, ToolCallResult, ToolServerFailed
from auto_runtime.tools.tracking import Pending, RequestTracker

MAX_PAGES = 20
DETAIL_CHARS = 300

BeforeRequest = Callable[[], Awaitable[None]]
"""Runs before each request (an auth block mints its token there, so its failure is the server's failure)."""


async def _nothing() -> None:
    return None


def listed(tool: mcp_types.Tool) -> ListedTool:
    annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else {}
    hints = {key: bool(value) for key, value in annotations.items() if key.endswith("Hint")}
    return ListedTool(tool.name, tool.description or "", dict(tool.input_schema), hints)


def _blocks(result: mcp_types.CallToolResult, scrub: Callable[[str], str]) -> tuple[ContentBlock, ...]:
    blocks: list[ContentBlock] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            blocks.append(ContentBlock("text", scrub(block.text)))
        else:
            kind = str(getattr(block, "type", "other"))
            mime = getattr(block, "mime_type", None)
            blocks.append(ContentBlock(kind, None, str(mime) if mime else None))
    return tuple(blocks)


class McpTools:
    """The tools of one MCP server, reached through `connection`."""

    def __init__(
        self,
        name: str,
        entry: ToolServer,
        connection: McpConnection,
        tracker: RequestTracker,
        secrets: SecretSet,
        limits: Limits,
        result_cap: int,
        before_request: BeforeRequest = _nothing,
    ) -> None:
        self.name = name
        self.entry = entry
        self.connection = connection
        self.tracker = tracker
        self.secrets = secrets
        self.limits = limits
        self.result_cap = result_cap
        self.before_request = before_request

    def attach(self, nursery: trio.Nursery) -> None:
        self.connection.attach(nursery)

    async def aclose(self) -> None:
        self.connection.detach()

    async def list_tools(self) -> list[ListedTool]:
        """The server's tools. A kept session whose transport closed before its holder noticed fails the list
        with a closed connection: listing is safe to repeat, so that list is made once more on a new session
        (a session opened for the list itself is never retried, so a server that is down fails at once)."""
        connects = self.connection.connects
        try:
            return await self._list_once()
        except ToolServerFailed as failed:
            if not failed.stale_session or self.connection.connects != connects:
                raise
        return await self._list_once()

    async def _list_once(self) -> list[ListedTool]:
        connecting: Pending | None = None
        try:
            await self.before_request()
            with (
                trio.fail_after(self.limits.connect + self.limits.list),
                self.tracker.track("initialize", None) as connecting,
            ):
                async with self.connection.session() as client:
                    tools: list[mcp_types.Tool] = []
                    cursor: str | None = None
                    for _ in range(MAX_PAGES):
                        with self.tracker.track("tools/list", {"cursor": cursor}) as pending:
                            try:
                                page = await client.list_tools(cursor=cursor)
                            except Exception as error:
                                failure = self._list_failure(error, pending)
                                failure.stale_session = pending.status == 0 and not keeps_session(error)
                                raise failure from None
                        tools.extend(page.tools)
                        cursor = page.next_cursor
                        if not cursor:
                            break
                    return [listed(tool) for tool in tools]
        except trio.TooSlowError:
            raise ToolServerFailed(
                "unreachable", f"The tool server {self.name} did not list its tools in time.", retry_after=5
            ) from None
        except ToolServerFailed:
            raise
        except Exception as error:  # connecting failed: transports raise many kinds, often grouped
            raise self._list_failure(error, connecting) from None

    def _list_failure(self, error: BaseException, pending: Pending | None) -> ToolServerFailed:
        if isinstance(error, TokenFailed):
            return ToolServerFailed(error.because, self.secrets(error.detail), 5)
        status = pending.status if pending is not None else 0
        if status == 429:
            wait = pending.retry_after if pending is not None else None
            seconds = round(wait) if wait is not None else 5
            return ToolServerFailed(
                "rate_limited",
                f"The tool server {self.name} is limiting requests; try again in {seconds} seconds.",
                seconds,
            )
        if status in (401, 403):
            return ToolServerFailed(
                "key_refused", f"The tool server {self.name} refused the runtime's credentials (HTTP {status}).", 5
            )
        if status >= 500:
            return ToolServerFailed("failing", f"The tool server {self.name} is failing (HTTP {status}).", 5)
        found = mcp_error_in(error)
        if found is not None and found.error.code != mcp_types.CONNECTION_CLOSED:
            words = self.secrets(found.error.message)[:DETAIL_CHARS]
            return ToolServerFailed("failing", f"The tool server {self.name} could not list its tools: {words}", 5)
        return ToolServerFailed(
            "unreachable", f"The tool server {self.name} could not be reached ({type(error).__name__}).", 5
        )

    async def call(
        self, tool: str, arguments: Mapping[str, Any], run_id: str, *, delivery_id: str | None = None
    ) -> ToolCallResult:
        meta: Any = {RUN_ID_META: run_id}
        if delivery_id is not None:
            meta[DELIVERY_ID_META] = delivery_id
        for attempt in range(RATE_LIMIT_TRIES):
            try:
                return await self._call_once(tool, arguments, meta)
            except _RateLimited as limited:
                last = attempt == RATE_LIMIT_TRIES - 1 or delivery_id is not None
                if last or limited.wait is None or limited.wait > self.limits.longest_wait:
                    raise limited.failure from None
                await trio.sleep(limited.wait)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    async def _call_once(self, tool: str, arguments: Mapping[str, Any], meta: Any) -> ToolCallResult:
        params = {"name": tool, "arguments": dict(arguments)}
        with self.tracker.track("tools/call", params) as pending:
            try:
                await self.before_request()
                with trio.fail_after(self.limits.call):
                    async with self.connection.session() as client:
                        result = await client.call_tool(tool, dict(arguments), meta=meta)
            except trio.TooSlowError:
                raise ToolCallFailed(
                    "timed_out",
                    f"The tool server {self.name} did not answer within {self.limits.call:g} seconds.",
                    pending.jsonrpc_id,
                ) from None
            except (TokenFailed, ToolServerFailed) as failed:
                raise ToolCallFailed("server_failure", self.secrets(failed.detail), pending.jsonrpc_id) from None
            except Exception as error:
                raise self._call_failure(error, pending) from None
        scrubbed = self.secrets.scrubber.value(result.model_dump(mode="json", by_alias=True, exclude_none=True))
        size = len(json.dumps(scrubbed, ensure_ascii=False).encode("utf-8"))
        if size > self.result_cap:
            raise ToolCallFailed(
                "too_large",
                f"The result took {size:,} bytes; one call may return {self.result_cap // (1024 * 1024)} MiB.",
                pending.jsonrpc_id,
            )
        structured = scrubbed.get("structuredContent") if isinstance(scrubbed, dict) else None
        return ToolCallResult(
            blocks=_blocks(result, self.secrets.scrubber),
            structured=structured,
            is_error=bool(result.is_error),
            jsonrpc_id=pending.jsonrpc_id,
            server_request_id=self._server_request_id(result, pending),
            size=size,
        )

    def _call_failure(self, error: BaseException, pending: Pending) -> Exception:
        known = pending.jsonrpc_id
        if pending.status == 429:
            wait = pending.retry_after
            extra = {"retry_after_ms": int(wait * 1000)} if wait is not None else {}
            failure = ToolCallFailed("server_failure", "The tool server is limiting requests (HTTP 429).", known, extra)
            return _RateLimited(failure, wait)
        found = mcp_error_in(error)
        if found is not None and found.error.code == mcp_types.INVALID_PARAMS:
            return ToolCallFailed("arguments_refused", self.secrets(found.error.message), known)
        if found is not None and found.error.code == TOO_LARGE_CODE:
            return ToolCallFailed("too_large", found.error.message, known)
        if pending.status >= 400:
            return ToolCallFailed("server_failure", f"The tool server answered HTTP {pending.status}.", known)
        if found is not None:
            return ToolCallFailed("server_failure", self.secrets(found.error.message), known)
        return ToolCallFailed("server_failure", f"The call failed ({type(error).__name__}).", known)

    def _server_request_id(self, result: mcp_types.CallToolResult, pending: Pending) -> str | None:
        """The server's own id of the call, where the entry's `request_id` says: a key of the result's
        metadata, else a response header."""
        key = self.entry.request_id
        if key is None:
            return None
        meta = result.meta if isinstance(result.meta, Mapping) else {}
        found = meta.get(key, pending.headers.get(key.lower()))
        return self.secrets(str(found)) if found is not None else None


TOO_LARGE_CODE = -32099
"""The JSON-RPC error code a transport answers in place of a message past its cap (server-defined range)."""


class _RateLimited(Exception):
    def __init__(self, failure: ToolCallFailed, wait: float | None) -> None:
        super().__init__(failure.detail)
        self.failure = failure
        self.wait = wait
