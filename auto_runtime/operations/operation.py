"""One operation, defined once: what both transports, the OpenAPI document and the MCP tools are made from."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from auto_runtime.auth.caller import Caller, Permission
from auto_runtime.ledger import PlaybookScope

Scope = Literal["global", "org", "playbook"]
JsonObject = dict[str, Any]

SCOPE_PREFIXES: Mapping[Scope, str] = {
    "global": "/v1",
    "org": "/v1/orgs/{org}",
    "playbook": "/v1/orgs/{org}/playbooks/{playbook}",
}
PATH_PARAMETER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


@dataclass(frozen=True)
class Hints:
    """The MCP annotations of an operation's tool, derived from what it does (spec mcp.md §4)."""

    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool


@dataclass(frozen=True)
class ResponseLink:
    """An OpenAPI link from an operation's success answer to another operation, so that a generated client follows
    the right value (OpenAPI 3.1 Link Object). `operation` is the target's name; `parameters` maps each of its
    parameters to a runtime expression, such as `$request.path.org` or `$response.body#/events/0/id`."""

    operation: str
    parameters: Mapping[str, str]
    description: str


@dataclass(frozen=True)
class OperationContext:
    """What a handler sees: the caller, the org and playbook it acts in, and the runtime's services."""

    caller: Caller
    org: str
    playbook: str | None
    services: Any
    request_id: str
    transport: Literal["http", "mcp"] = "http"
    body: AsyncIterator[bytes] | None = None
    """The body of an operation that takes bytes (`Operation.body_media_types`), unread: its chunks as they
    arrive, after the transport checked its length and media type."""

    @property
    def scope(self) -> PlaybookScope:
        """The playbook the operation acts in: the only streams a playbook handler may address."""
        if self.playbook is None:
            raise TypeError("an org operation has no playbook scope")
        return PlaybookScope(self.org, self.playbook)


Handler = Callable[[OperationContext, Any], Awaitable[Any]]


@dataclass(frozen=True)
class RawResult:
    """What an HTTP-only operation answers that is not JSON (a brief in Markdown, rows as CSV): its media type
    and its bytes, or their chunks to stream."""

    media_type: str
    body: bytes | AsyncIterator[bytes]


@dataclass(frozen=True)
class Operation:
    """An operation of the catalog.

    `route` is relative to its scope's prefix; path parameters other than the scope's own (`org`, and
    `playbook` for playbook operations) are fields of `input_model`. `permissions` lists alternatives: the
    caller needs one of them (empty: no key needed). `reasons` are the rejection reasons the handler may
    return; any other is an internal error.
    """

    name: str
    title: str
    description: str
    scope: Scope
    permissions: frozenset[Permission]
    method: Literal["GET", "POST", "PUT", "DELETE"]
    route: str
    input_model: type[BaseModel]
    output_model: type[BaseModel] | None
    handler: Handler
    hints: Hints
    tag: str
    reasons: frozenset[str] = frozenset()
    success_status: int = 200
    has_tool: bool = True
    operation_id: str | None = None
    output_media_type: str = "application/json"
    path_enums: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    openapi_keywords: Mapping[str, JsonObject] = field(default_factory=dict)
    """JSON Schema keywords the OpenAPI document adds to an input field's schema, by field name (merged into it,
    nested objects member by member): rules the handler checks, in its own words, that JSON Schema can state.
    They stay out of the input schema, which the decoder and the MCP tool share, so refusals keep their words."""
    body_media_types: tuple[str, ...] = ()
    """For an HTTP-only operation whose body is bytes rather than JSON (a dataset, a model): the media types it
    takes. The transport refuses a body without `Content-Length` (`411`), one longer than `max_body` (`413`,
    before reading it) and another media type (`415`); the handler reads `OperationContext.body`."""
    max_body: int = 0
    links: Mapping[str, ResponseLink] = field(default_factory=dict)
    """OpenAPI links of the success answer, by name: where a value of the answer leads (`ResponseLink`)."""

    @property
    def path(self) -> str:
        """The full path, such as `/v1/orgs/{org}/playbooks/{playbook}/runs/{run_id}`."""
        return SCOPE_PREFIXES[self.scope] + self.route

    @property
    def path_fields(self) -> tuple[str, ...]:
        """The input fields taken from the path (the scope's own parameters excluded)."""
        return tuple(p for p in PATH_PARAMETER.findall(self.route))

    @property
    def takes_bytes(self) -> bool:
        return bool(self.body_media_types)

    @property
    def takes_body(self) -> bool:
        return self.method in ("POST", "PUT")

    @property
    def is_command(self) -> bool:
        return not self.hints.read_only

    @property
    def openapi_operation_id(self) -> str:
        return self.operation_id or self.name
