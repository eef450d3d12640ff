"""What the history keeps of a call the playbook makes through a tool server for a request (a delivery, a read
of replies): its arguments and result as kept (scrubbed of the tool servers' secrets), their sizes, and their
SHA-256 digests unless the server's `record_content` is false (interaction-format §9)."""

from __future__ import annotations

import hashlib
from typing import Any

from auto_runtime.json_limits import compact_json
from auto_runtime.ledger import PlaybookScope
from auto_runtime.tools import NamedServer, ToolNotOffered, ToolServers, WantedTool
from auto_runtime.tools.result_text import result_text
from auto_runtime.tools.scrubbing import SCRUBBED_LEAST


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def scrubbed(tools: ToolServers | None, text: str) -> str:
    """`text` without the secrets of the tool servers (those of 8 characters or more), as a call keeps it."""
    for secret in tools.secrets() if tools is not None else ():
        if len(secret) >= SCRUBBED_LEAST:
            text = text.replace(secret, "[redacted]")
    return text


async def named_server(tools: ToolServers | None, scope: PlaybookScope, server: str, tool: str) -> NamedServer | None:
    """What the configuration says of a server (no server contacted); None when it no longer serves the
    playbook (the call then fails `tool_not_offered`)."""
    if tools is None:
        return None
    try:
        found = await tools.named(scope.org, scope.playbook, [WantedTool(server, tool)])
    except ToolNotOffered:
        return None
    return found[0] if found else None


def arguments_measures(tools: ToolServers | None, arguments: Any, content_kept: bool) -> dict[str, Any]:
    """`arguments_bytes`, and `arguments_sha256` when the content is kept, of the arguments as kept."""
    kept = scrubbed(tools, compact_json(arguments))
    measures: dict[str, Any] = {"arguments_bytes": len(kept.encode("utf-8"))}
    if content_kept:
        measures["arguments_sha256"] = sha256(kept)
    return measures


def result_measures(tools: ToolServers | None, result: Any, content_kept: bool) -> dict[str, Any]:
    """`result_bytes`, and `result_sha256` when the content is kept, of a tool's result as kept."""
    text = scrubbed(tools, result_text(result))
    measures: dict[str, Any] = {"result_bytes": len(text.encode("utf-8"))}
    if content_kept:
        measures["result_sha256"] = sha256(text)
    return measures
