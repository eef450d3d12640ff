"""`McpHttpToolServers`: the name the server composes its tool servers by, now the whole `ToolServerSet`.

Kept so `auto_runtime.server` needs no change until it builds a `ToolServerSet` from its settings (with the
settings' secrets and the configuration's directory) and runs it under the supervision tree. Built from the
entries alone, as here, it counts every value of a field that may hold a reference as a secret, and serves
`mcp` and `openapi` entries with one session per list and call.
"""

from __future__ import annotations

from auto_runtime.tools.tool_server_set import ToolServerSet, serves


class McpHttpToolServers(ToolServerSet):
    """`ToolServerSet` under the name `auto_runtime.server` imports."""


__all__ = ["McpHttpToolServers", "serves"]
