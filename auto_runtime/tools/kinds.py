"""What every kind of tool server client gives the set: its listed tools and one call.

`ListedTool` is a tool as its server lists it (for an HTTP API, as its document gives it). `ServerClient` is the
interface of the three kinds (`mcp` over Streamable HTTP, `stdio`, `openapi`); the set picks the client by the
entry's type and never looks inside one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import trio

from auto_runtime.settings import ToolServer
from auto_runtime.tools.servers import ToolCallResult

CONNECT_SECONDS = 10.0
LIST_SECONDS = 10.0
CALL_SECONDS = 30.0
LONGEST_WAIT_SECONDS = 10.0
RATE_LIMIT_TRIES = 3
HTTP_RESULT_CAP = 16 * 1024 * 1024
STDIO_RESULT_CAP = 4 * 1024 * 1024
RUN_ID_META = "auto.on/run_id"
DELIVERY_ID_META = "auto.on/delivery_id"


@dataclass(frozen=True, slots=True)
class Limits:
    """The seeds' time limits (seconds). Tests shorten them; the server uses the defaults."""

    connect: float = CONNECT_SECONDS
    list: float = LIST_SECONDS
    call: float = CALL_SECONDS
    token: float = CONNECT_SECONDS
    longest_wait: float = LONGEST_WAIT_SECONDS


@dataclass(frozen=True, slots=True)
class ListedTool:
    name: str
    description: str
    input_schema: Mapping[str, Any]
    annotations: Mapping[str, bool] = field(default_factory=dict)
    """The hints the server gives (`readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint`)."""

    @property
    def read_only(self) -> bool:
        return bool(self.annotations.get("readOnlyHint"))


class ServerClient(Protocol):
    """One tool server's long-lived client."""

    name: str
    entry: ToolServer

    async def list_tools(self) -> list[ListedTool]:
        """Every tool it lists; raises `ToolServerFailed`."""
        ...

    async def call(
        self, tool: str, arguments: Mapping[str, Any], run_id: str, *, delivery_id: str | None = None
    ) -> ToolCallResult:
        """One call; raises `ToolCallFailed`. The result is scrubbed of every secret. A delivery's call
        (`delivery_id`, an interaction request's attempt) carries it in `_meta` and waits out no 429."""
        ...

    def attach(self, nursery: trio.Nursery) -> None:
        """Keep connections from now on, held by tasks of `nursery`."""
        ...

    async def aclose(self) -> None:
        """Close what it keeps (connections, pools)."""
        ...
