"""What the access chain learned of one MCP request, handed to the MCP handlers through the ASGI scope."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from auto_runtime.auth.caller import Caller
from auto_runtime.mcp_server.endpoints import Endpoint
from auto_runtime.problems import Rejection

SCOPE_KEY = "auto_runtime.mcp.connection"


@dataclass(frozen=True)
class Connection:
    """One request's endpoint, its authenticated caller and its request id (the `x-request-id` it answers);
    `arguments_refusal` when the body's tool arguments give a member twice (`asgi.Admitted`)."""

    endpoint: Endpoint
    caller: Caller
    request_id: str
    arguments_refusal: Rejection | None = None

    @property
    def org(self) -> str:
        return self.endpoint.org_for(self.caller)


def connection_of(request: Any) -> Connection:
    """The connection the root ASGI callable attached to the scope of the SDK's request."""
    scope = getattr(request, "scope", None)
    connection = scope.get(SCOPE_KEY) if isinstance(scope, dict) else None
    if not isinstance(connection, Connection):
        raise TypeError("an MCP request reached the handlers without passing the access chain")
    return connection
