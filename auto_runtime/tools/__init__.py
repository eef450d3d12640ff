"""Tool servers as a reasoning run reaches them: `ToolServers` and its MCP (Streamable HTTP) implementation."""

from auto_runtime.tools.servers import (
    ContentBlock,
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
    "OfferedTool",
    "ToolCallFailed",
    "ToolCallResult",
    "ToolNotOffered",
    "ToolServerFailed",
    "ToolServers",
    "WantedTool",
]
