"""Tool servers as a reasoning run reaches them: the `ToolServers` interface and `ToolServerSet`, which serves it
for the three kinds of server (`mcp`, `stdio`, `openapi`); `scrubbing` removes their secrets."""

from auto_runtime.tools.servers import (
    ContentBlock,
    NamedServer,
    OfferedTool,
    ToolCallFailed,
    ToolCallResult,
    ToolNotOffered,
    ToolServerFailed,
    ToolServers,
    WantedTool,
)

__all__ = [
    "ContentBlock",
    "NamedServer",
    "OfferedTool",
    "ToolCallFailed",
    "ToolCallResult",
    "ToolNotOffered",
    "ToolServerFailed",
    "ToolServers",
    "WantedTool",
]
