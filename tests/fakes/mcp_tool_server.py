"""A small MCP tool server over Streamable HTTP, a real process for the reasoning tool-loop tests.

    python -m tests.fakes.mcp_tool_server --port 0 --log calls.jsonl

It prints ``listening on http://127.0.0.1:<port>/mcp`` once it accepts connections. Its tools:

* ``get_customer`` (``readOnlyHint: true``): answers ``{"id": <id>, "plan": "pro"}`` as a text block, with
  ``_meta: {"fake/request_id": "req-<id>"}``;
* ``create_ticket``: answers ``created <title>``; not read-only;
* ``broken``: answers an ``isError`` result saying ``the helpdesk is down``;
* ``picky``: refuses every call with JSON-RPC -32602;
* ``picture``: answers one image block and no text;
* ``crash``: raises inside the server, which answers a JSON-RPC internal error;
* ``busy``: its first call of each pair is answered HTTP 429 with ``retry-after: 0``, the next ``not busy now``;
* ``swamped``: every call is answered HTTP 429 with ``retry-after: 60`` (or its ``retry_after`` argument).

With ``--interaction-tools`` it also lists the tools the interaction tests call:

* ``list_invoices`` (``readOnlyHint: true``): answers ``structuredContent`` ``{"invoices": [...]}``, ``limit``
  invoices of the ``customer`` it is given, each ``{"id": "<customer>-<n>", "total": <n>}``;
* ``say``: answers its ``text`` argument as one text block (JSON when the text is JSON); not read-only;
* ``hang``: never answers (the caller's own timeout ends the call);
* ``replies`` (``readOnlyHint: true``): answers ``structuredContent`` ``{"items": [...]}``: one reply
  ``{"key": "<parent>-reply", "author": <who>, "body": <words>, "parent": <parent>}`` while ``since`` is empty,
  none after (a reader that keeps its cursor reads it once); with ``count`` N, N such replies, the n-th from
  the second on keyed ``<parent>-reply-<n>``. When ``words`` hold ``LONE_SURROGATE_MARK``, it answers the JSON
  as a text block alone, with the mark written as the escape ``\\ud800``: its reader parses a lone surrogate,
  which no MCP message could carry as text.

With ``--extra-tools N`` it also lists ``N`` more tools, ``extra_1`` to ``extra_N`` (``Extra tool <n>.``), which
answer ``extra <n>``.

Each ``tools/call`` is appended to the log file as a JSON line ``{"name", "arguments", "meta"}``.

With ``--require-header NAME=VALUE`` every request without that header is answered 401. With ``--issuer URL
--signing-key K --audience A`` it is an OAuth-protected resource: ``/.well-known/oauth-protected-resource/mcp``
names the issuer, and every request needs a bearer HS256 JWT of the signing key for the audience.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
import mcp_types as types
import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError

from tests.fakes.lifeline import end_with_parent

LONE_SURROGATE_MARK = "<lone surrogate>"
"""A mark in the `replies` tool's `words` that its answer writes as the JSON escape of a lone surrogate."""

OBJECT = {"type": "object", "properties": {"id": {"type": "string"}}, "additionalProperties": True}
TOOLS = [
    types.Tool(
        name="get_customer",
        description="Reads a customer by id.",
        input_schema=OBJECT,
        annotations=types.ToolAnnotations(
            read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
        ),
    ),
    types.Tool(
        name="create_ticket",
        description="Opens a ticket.",
        input_schema={"type": "object", "properties": {"title": {"type": "string"}}},
        annotations=types.ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
        ),
    ),
    types.Tool(name="broken", description="Always fails.", input_schema=OBJECT),
    types.Tool(name="picky", description="Refuses its arguments.", input_schema=OBJECT),
    types.Tool(name="picture", description="Answers an image.", input_schema=OBJECT),
    types.Tool(name="crash", description="Breaks.", input_schema=OBJECT),
    types.Tool(name="busy", description="Busy every other call.", input_schema=OBJECT),
    types.Tool(name="swamped", description="Always busy.", input_schema=OBJECT),
]


def extra_tools(count: int) -> list[types.Tool]:
    return [
        types.Tool(name=f"extra_{n}", description=f"Extra tool {n}.", input_schema={"type": "object"})
        for n in range(1, count + 1)
    ]


INTERACTION_TOOLS = [
    types.Tool(
        name="list_invoices",
        description="Lists a customer's invoices.",
        input_schema={"type": "object"},
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    types.Tool(name="say", description="Says its text back.", input_schema={"type": "object"}),
    types.Tool(name="hang", description="Never answers.", input_schema={"type": "object"}),
    types.Tool(
        name="replies",
        description="Lists the replies to a message.",
        input_schema={"type": "object"},
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
]


def build(log: Path | None, extra: int = 0, interaction: bool = False) -> Server[Any]:
    listed = [*TOOLS, *(INTERACTION_TOOLS if interaction else []), *extra_tools(extra)]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        if log is not None:
            meta = params.meta if isinstance(params.meta, dict) else {}
            with log.open("a") as file:
                file.write(json.dumps({"name": params.name, "arguments": arguments, "meta": dict(meta)}) + "\n")
        if params.name == "get_customer":
            text = json.dumps({"id": arguments.get("id"), "plan": "pro"})
            meta = {"fake/request_id": f"req-{arguments.get('id')}"}
            return types.CallToolResult(content=[types.TextContent(text=text)], _meta=meta)
        if params.name == "create_ticket":
            return types.CallToolResult(content=[types.TextContent(text=f"created {arguments.get('title')}")])
        if params.name == "broken":
            return types.CallToolResult(content=[types.TextContent(text="the helpdesk is down")], is_error=True)
        if params.name == "picky":
            raise MCPError(code=types.INVALID_PARAMS, message="id must name a customer")
        if params.name == "picture":
            return types.CallToolResult(content=[types.ImageContent(data="iVBORw0KGgo=", mime_type="image/png")])
        if params.name == "busy":
            return types.CallToolResult(content=[types.TextContent(text="not busy now")])
        if params.name == "crash":
            raise MCPError(code=types.INTERNAL_ERROR, message="the server broke")
        if params.name == "list_invoices" and interaction:
            customer = str(arguments.get("customer"))
            invoices = [{"id": f"{customer}-{n}", "total": n} for n in range(1, int(arguments.get("limit", 0)) + 1)]
            return types.CallToolResult(
                content=[types.TextContent(text=json.dumps({"invoices": invoices}))],
                structured_content={"invoices": invoices},
            )
        if params.name == "replies" and interaction:
            parent = str(arguments.get("parent"))
            count = int(arguments.get("count", 1))
            keys = [f"{parent}-reply", *(f"{parent}-reply-{n}" for n in range(2, count + 1))]
            replies = [{"key": key, "author": arguments.get("who"), "body": arguments.get("words")} for key in keys]
            items = [] if arguments.get("since") else [{**reply, "parent": parent} for reply in replies]
            text = json.dumps({"items": items})
            if LONE_SURROGATE_MARK in text:
                return types.CallToolResult(
                    content=[types.TextContent(text=text.replace(LONE_SURROGATE_MARK, "\\ud800"))]
                )
            return types.CallToolResult(content=[types.TextContent(text=text)], structured_content={"items": items})
        if params.name == "hang" and interaction:
            await trio.sleep_forever()
        if params.name == "say" and interaction:
            return types.CallToolResult(content=[types.TextContent(text=str(arguments.get("text")))])
        if params.name.startswith("extra_"):
            return types.CallToolResult(content=[types.TextContent(text=f"extra {params.name.removeprefix('extra_')}")])
        raise MCPError(code=types.INVALID_PARAMS, message=f"no tool {params.name}")

    return Server("fake-tools", on_list_tools=list_tools, on_call_tool=call_tool)


@dataclass(frozen=True)
class Guard:
    """What a request must carry: a header, or a bearer token of the issuer."""

    header: tuple[str, str] | None = None
    issuer: str | None = None
    signing_key: str = ""
    audience: str = ""

    def refuses(self, headers: dict[str, str]) -> bool:
        if self.header is not None and headers.get(self.header[0].lower()) != self.header[1]:
            return True
        if self.issuer is not None:
            token = headers.get("authorization", "").removeprefix("Bearer ")
            try:
                jwt.decode(token, self.signing_key, algorithms=["HS256"], audience=self.audience)
            except jwt.PyJWTError:
                return True
        return False


class App:
    def __init__(self, manager: StreamableHTTPSessionManager, guard: Guard | None = None) -> None:
        self.manager = manager
        self.busy_calls = 0
        self.guard = guard or Guard()

    def _limited(self, body: bytes) -> str | None:
        """The retry-after to answer a 429 with, for a call of busy or swamped; else None."""
        try:
            message = json.loads(body)
        except ValueError:
            return None
        if not isinstance(message, dict) or message.get("method") != "tools/call":
            return None
        params = message.get("params") or {}
        name = params.get("name")
        if name == "swamped":
            return str((params.get("arguments") or {}).get("retry_after", 60))
        if name == "busy":
            self.busy_calls += 1
            return "0" if self.busy_calls % 2 == 1 else None
        return None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            message = await receive()
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["path"].startswith("/.well-known/oauth-protected-resource") and self.guard.issuer is not None:
            document = json.dumps({"resource": "mcp", "authorization_servers": [self.guard.issuer]}).encode()
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]}
            )
            await send({"type": "http.response.body", "body": document})
            return
        headers = {name.decode().lower(): value.decode() for name, value in scope.get("headers", [])}
        if self.guard.refuses(headers):
            await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        wait = self._limited(body)
        if wait is not None:
            headers = [(b"content-type", b"text/plain"), (b"retry-after", wait.encode())]
            await send({"type": "http.response.start", "status": 429, "headers": headers})
            await send({"type": "http.response.body", "body": b"slow down"})
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.manager.handle_request(scope, replay, send)


@asynccontextmanager
async def _running(manager: StreamableHTTPSessionManager) -> AsyncIterator[None]:
    async with manager.run():
        yield


async def run(
    port: int, log: Path | None, guard: Guard | None = None, extra: int = 0, interaction: bool = False
) -> None:
    manager = StreamableHTTPSessionManager(build(log, extra, interaction), stateless=True, json_response=True)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    config = Config()
    config.bind = [f"fd://{listener.fileno()}"]
    config.accesslog = None
    config.graceful_timeout = 1.0
    async with _running(manager), trio.open_nursery() as nursery:
        nursery.start_soon(serve, App(manager, guard), config)
        print(f"listening on http://127.0.0.1:{listener.getsockname()[1]}/mcp", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A small MCP tool server for tests")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", type=Path)
    parser.add_argument("--require-header")
    parser.add_argument("--issuer")
    parser.add_argument("--signing-key", default="")
    parser.add_argument("--audience", default="")
    parser.add_argument("--extra-tools", type=int, default=0)
    parser.add_argument("--interaction-tools", action="store_true")
    arguments = parser.parse_args(argv)
    header = tuple(arguments.require_header.split("=", 1)) if arguments.require_header else None
    guard = Guard(header, arguments.issuer, arguments.signing_key, arguments.audience)  # type: ignore[arg-type]
    try:
        end_with_parent()
        trio.run(run, arguments.port, arguments.log, guard, arguments.extra_tools, arguments.interaction_tools)
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
