"""The data of the tool-call facts (`tool_call_started`, `tool_call_answered`, `tool_call_failed`), one shape for
a reasoning run's tool loop and for a call made by hand (`execute`).

Every text handed in is already scrubbed of secrets; what a fact keeps of the arguments and the answer follows the
tool's `record_content`: their sizes always, their SHA-256 digests and the content itself only when it is kept.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from auto_runtime.tools.servers import OfferedTool, ToolCallFailed, ToolCallResult

MAX_DETAIL_BYTES = 1024
"""A failure's detail is kept up to this many UTF-8 bytes (cut on a character)."""


def sha256_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def started_data(number: int, call_id: str, tool: OfferedTool, kept_arguments: str) -> dict[str, Any]:
    """`tool_call_started`: `kept_arguments` is the arguments' compact, scrubbed JSON."""
    data: dict[str, Any] = {"number": number, "call_id": call_id, "server": tool.server}
    if tool.connection_id is not None:
        data["connection_id"] = tool.connection_id
    data["tool"] = tool.tool
    data["arguments_bytes"] = len(kept_arguments.encode("utf-8"))
    if tool.record_content:
        data["arguments_sha256"] = sha256_of(kept_arguments)
        data["arguments"] = json.loads(kept_arguments)
    data["content_kept"] = tool.record_content
    if tool.read_only:
        data["read_only"] = True
    return data


def failed_data(number: int, failure: ToolCallFailed, scrubbed_detail: str, duration_ms: int) -> dict[str, Any]:
    """`tool_call_failed`, its detail cut to `MAX_DETAIL_BYTES`."""
    detail = scrubbed_detail.encode("utf-8")[:MAX_DETAIL_BYTES].decode("utf-8", "ignore")
    data: dict[str, Any] = {"number": number, "because": failure.because, "detail": detail, "duration_ms": duration_ms}
    if failure.jsonrpc_id is not None:
        data["jsonrpc_id"] = failure.jsonrpc_id
    return data


def answered_data(
    number: int,
    tool: OfferedTool,
    result: ToolCallResult,
    scrubbed_text: str,
    duration_ms: int,
    shown_bytes: int | None = None,
) -> dict[str, Any]:
    """`tool_call_answered`: `scrubbed_text` is the result as text; `shown_bytes`, when a model was shown less."""
    data: dict[str, Any] = {
        "number": number,
        "is_error": result.is_error,
        "result_bytes": len(scrubbed_text.encode("utf-8")),
    }
    if tool.record_content:
        data["result_sha256"] = sha256_of(scrubbed_text)
        data["answer"] = scrubbed_text
    data["content_kept"] = tool.record_content
    if shown_bytes is not None:
        data["shown_bytes"] = shown_bytes
    data["duration_ms"] = duration_ms
    if result.jsonrpc_id is not None:
        data["jsonrpc_id"] = result.jsonrpc_id
    if result.server_request_id is not None:
        data["server_request_id"] = result.server_request_id
    return data
