"""`tools/call`: the same dispatcher as the HTTP route, the org and playbook from the endpoint (spec mcp.md §3, §5).

Order on `/mcp` for a playbook tool: the `playbook` argument is checked first (missing, not a string or not a
well-formed id: `invalid_input` at `/playbook`), taken out of the arguments, and the rest dispatched to it. A tool
the connection does not list is `-32602`, never a tool result. Every rejection, and every exception a handler
throws (recorded as an incident), is a tool result with `isError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from auto_runtime.mcp_server.connection import Connection
from auto_runtime.mcp_server.results import refusal_result, success_result
from auto_runtime.mcp_server.toolset import PLAYBOOK_ARGUMENT_PATTERN, ServedTool, ToolSet
from auto_runtime.operations.dispatcher import Dispatcher, incident
from auto_runtime.problems import InputIssue, Rejection, invalid_input

PLAYBOOK_ID = re.compile(PLAYBOOK_ARGUMENT_PATTERN)
PLAYBOOK_NAME = "playbook, The id of the playbook to act in"


def unknown_tool(name: str) -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {name}")


def playbook_argument(arguments: dict[str, Any]) -> str:
    """Takes `playbook` out of the arguments, or refuses it with `invalid_input` at `/playbook`."""
    if "playbook" not in arguments:
        raise invalid_input([InputIssue("The input: expected the field playbook.", "/playbook")])
    value = arguments.pop("playbook")
    if not isinstance(value, str):
        raise invalid_input([InputIssue(f"{PLAYBOOK_NAME}: expected a string.", "/playbook")])
    if not PLAYBOOK_ID.match(value):
        rule = f"expected text matching the pattern {PLAYBOOK_ARGUMENT_PATTERN}"
        raise invalid_input([InputIssue(f"{PLAYBOOK_NAME}: {rule}.", "/playbook")])
    return value


class ToolCalls:
    def __init__(self, tools: ToolSet, dispatcher: Dispatcher) -> None:
        self.tools = tools
        self.dispatcher = dispatcher

    def tool_for(self, connection: Connection, name: str) -> ServedTool:
        served = self.tools.find(connection.endpoint.kind, connection.caller, name)
        if served is None:
            raise unknown_tool(name)
        return served

    async def call(
        self, connection: Connection, name: str, arguments: Mapping[str, Any] | None
    ) -> types.CallToolResult:
        served = self.tool_for(connection, name)
        operation = served.operation
        if connection.arguments_refusal is not None:
            return refusal_result(operation, connection.arguments_refusal)
        raw = dict(arguments or {})
        try:
            playbook: str | None = None
            if served.takes_playbook:
                playbook = playbook_argument(raw)
            elif operation.scope == "playbook":
                playbook = connection.endpoint.playbook
            output = await self.dispatcher.dispatch(
                operation,
                connection.caller,
                connection.org,
                playbook,
                raw,
                request_id=connection.request_id,
                transport="mcp",
            )
        except Rejection as rejection:
            return refusal_result(operation, rejection)
        except Exception as error:
            return refusal_result(operation, incident(error, operation.name, connection.request_id))
        return success_result(operation, output)
