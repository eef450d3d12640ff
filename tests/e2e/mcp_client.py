"""The SDK's own client against the real server: `mcp.Client` over Streamable HTTP, with or without a key."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.client_tls import tls_context

MODES = ("auto", "legacy")
"""Both protocol generations the SDK speaks: `auto` settles on 2026-07-28, `legacy` on the initialize handshake."""
PROTOCOL_OF_MODE = {"auto": "2026-07-28", "legacy": "2025-11-25"}


@asynccontextmanager
async def mcp_client(
    base_url: str, path: str = "/mcp", *, mode: str = "auto", secret: str | None = None
) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60.0, verify=tls_context()) as http,
        Client(streamable_http_client(base_url + path, http_client=http), mode=mode, cache=None) as client,
    ):
        yield client


def problem_of(result: types.CallToolResult) -> dict[str, Any]:
    """The problem document of a refused call, checking the layout of spec mcp.md §7 on the way."""
    assert result.is_error is True, result
    assert result.structured_content is None
    assert len(result.content) == 2
    words, problem = result.content
    assert isinstance(words, types.TextContent) and isinstance(problem, types.TextContent)
    assert 0 < len(words.text) <= 600
    document: dict[str, Any] = json.loads(problem.text)
    return document


def output_of(result: types.CallToolResult) -> dict[str, Any]:
    """The structured output of a successful call, checking the layout of spec mcp.md §6 on the way."""
    assert not result.is_error, result
    assert len(result.content) == 2
    words, text = result.content
    assert isinstance(words, types.TextContent) and isinstance(text, types.TextContent)
    assert 0 < len(words.text) <= 400
    assert isinstance(result.structured_content, dict)
    assert json.loads(text.text) == result.structured_content
    return result.structured_content


def sse_or_json(response: Any) -> dict[str, Any]:
    """The one JSON-RPC message of a response, whether it came as JSON or as one SSE `message` event."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        data = [d for d in data if d]
        assert len(data) == 1, response.text
        message: dict[str, Any] = json.loads(data[0])
        return message
    parsed: dict[str, Any] = response.json()
    return parsed
