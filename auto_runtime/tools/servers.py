"""The small interface a reasoning run uses to reach tool servers: offer the tools a document names, call one.

`ToolServers.offered` checks the names against the configuration (no server contacted for that), then asks each
named server for its list; it raises `ToolNotOffered` or `ToolServerFailed` (reasoning-format §7.1).
`ToolServers.call` makes one call and returns what the server answered, or raises `ToolCallFailed` with the
`because` of a `tool_call_failed` fact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

NotOfferedBecause = Literal[
    "tool_server_not_configured",
    "tool_not_allowed",
    "tool_not_listed",
    "connection_pending",
    "connection_broken",
    "connection_not_allowed",
]
ServerFailedBecause = Literal["unreachable", "failing", "rate_limited", "key_refused"]
CallFailedBecause = Literal["arguments_refused", "server_failure", "timed_out", "cancelled", "too_large"]


@dataclass(frozen=True)
class WantedTool:
    """A `tools` entry of a document: `tool` is `*` for every tool the server offers."""

    server: str
    tool: str


@dataclass(frozen=True)
class NamedServer:
    """What the configuration says of a server a name check found: whether calls through it keep their content
    (`record_content`), and the connection it is, for a connection."""

    server: str
    record_content: bool = True
    connection_id: str | None = None


@dataclass(frozen=True)
class OfferedTool:
    server: str
    tool: str
    description: str
    input_schema: Mapping[str, Any]
    read_only: bool
    record_content: bool = True
    connection_id: str | None = None


@dataclass(frozen=True)
class ContentBlock:
    """One block of a tool's result: `text` for a text block, else its `kind` and media type."""

    kind: str
    text: str | None = None
    mime_type: str | None = None


@dataclass(frozen=True)
class ToolCallResult:
    blocks: tuple[ContentBlock, ...]
    structured: Any = None
    is_error: bool = False
    jsonrpc_id: str | int | None = None
    server_request_id: str | None = None
    size: int = 0


@dataclass
class ToolNotOffered(Exception):
    because: NotOfferedBecause
    detail: str

    def __post_init__(self) -> None:
        Exception.__init__(self, self.detail)


@dataclass
class ToolServerFailed(Exception):
    because: ServerFailedBecause
    detail: str
    retry_after: int | None = None
    stale_session: bool = False
    """The request failed because a kept session's connection had closed, before the server answered anything."""

    def __post_init__(self) -> None:
        Exception.__init__(self, self.detail)


@dataclass
class ToolCallFailed(Exception):
    because: CallFailedBecause
    detail: str
    jsonrpc_id: str | int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        Exception.__init__(self, self.detail)


class ToolServers(Protocol):
    async def named(self, org: str, playbook: str, wanted: Sequence[WantedTool]) -> list[NamedServer]:
        """Check the names against the configuration alone, contacting no server: `ToolNotOffered` when one is not
        offered (an interaction request's check at its start); else each server named, once."""

    async def offered(self, org: str, playbook: str, wanted: Sequence[WantedTool]) -> list[OfferedTool]: ...

    async def call(
        self,
        org: str,
        playbook: str,
        tool: OfferedTool,
        arguments: Mapping[str, Any],
        run_id: str,
        *,
        delivery_id: str | None = None,
    ) -> ToolCallResult: ...

    def secrets(self) -> frozenset[str]: ...
