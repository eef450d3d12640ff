"""Small ASGI helpers of the outer callables (the framing guard, the MCP root): headers, whole responses,
problem documents, JSON-RPC errors. Neither transport room owns them, so both import them from here."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from starlette.types import Message, Scope, Send

from auto_runtime.problems import Rejection

Headers = list[tuple[bytes, bytes]]
AsgiApp = Callable[..., Awaitable[Any]]
"""Any ASGI application: Quart's, Hypercorn's and Starlette's type vocabularies differ, the protocol does not."""


def header_values(scope: Scope, name: str) -> list[str]:
    """Every value of one request header, in order (names compared in lower case)."""
    key = name.lower().encode("latin-1")
    return [value.decode("latin-1") for header, value in scope.get("headers", []) if header.lower() == key]


def header_value(scope: Scope, name: str) -> str | None:
    values = header_values(scope, name)
    return values[0] if values else None


def encoded(headers: Iterable[tuple[str, str]]) -> Headers:
    return [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]


async def send_whole(send: Send, status: int, body: bytes, headers: Sequence[tuple[str, str]]) -> None:
    all_headers = [*headers, ("content-length", str(len(body)))]
    await send({"type": "http.response.start", "status": status, "headers": encoded(all_headers)})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


async def send_problem(send: Send, rejection: Rejection, extra_headers: Sequence[tuple[str, str]] = ()) -> None:
    """An RFC 9457 problem document, with the rejection's own headers and its `Retry-After` where one applies."""
    headers = [("content-type", "application/problem+json"), ("cache-control", "no-store")]
    headers += list(rejection.headers.items())
    retry_after = rejection.effective_retry_after()
    if retry_after is not None:
        headers.append(("retry-after", str(retry_after)))
    headers += list(extra_headers)
    await send_whole(send, rejection.status, json_bytes(rejection.problem()), headers)


async def send_jsonrpc_error(send: Send, status: int, code: int, message: str) -> None:
    """A transport refusal: a JSON-RPC error with `id: null` under a 4xx status (spec mcp.md §7)."""
    body = json_bytes({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}})
    await send_whole(send, status, body, [("content-type", "application/json"), ("cache-control", "no-store")])


def adding_headers(send: Send, headers: Sequence[tuple[str, str]]) -> Send:
    """A `send` that adds headers to the response start, replacing any of the same name."""
    extra = encoded(headers)
    names = {name for name, _ in extra}

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            kept = [(n, v) for n, v in message.get("headers", []) if n.lower() not in names]
            message = {**message, "headers": [*kept, *extra]}
        await send(message)

    return wrapped
