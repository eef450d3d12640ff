"""Tool results: successes and refusals laid out as spec mcp.md §6 and §7 say.

Success: `content[0]` the plain words, `content[1]` the output as compact JSON, `structuredContent` the output
(the JSON object the HTTP route answers), `isError` false. An operation whose output is text (`get_guide`)
answers one text block holding it, without `structuredContent`.

Refusal: `isError` true, `content[0]` the plain words, `content[1]` the RFC 9457 problem document the HTTP route
would answer, as compact JSON; no `structuredContent`, no HTTP headers.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from auto_runtime.mcp_server.history_cut import cut_large_fields
from auto_runtime.mcp_server.words import refusal_words, success_words
from auto_runtime.operations.operation import Operation
from auto_runtime.problems import Rejection


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def success_result(operation: Operation, output: Any) -> types.CallToolResult:
    if isinstance(output, str):
        return types.CallToolResult(content=[types.TextContent(text=output)], is_error=False)
    shown = cut_large_fields(output)
    content: list[types.ContentBlock] = [
        types.TextContent(text=success_words(operation, shown)),
        types.TextContent(text=compact_json(shown)),
    ]
    if isinstance(shown, dict):
        return types.CallToolResult(content=content, structured_content=shown, is_error=False)
    return types.CallToolResult(content=content, is_error=False)


def refusal_result(operation: Operation, rejection: Rejection) -> types.CallToolResult:
    return types.CallToolResult(
        content=[
            types.TextContent(text=refusal_words(operation, rejection)),
            types.TextContent(text=compact_json(rejection.problem())),
        ],
        is_error=True,
    )
