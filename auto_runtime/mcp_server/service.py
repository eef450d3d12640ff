"""The MCP server of the runtime: one low-level `mcp` `Server` for the three endpoints, composed once at start.

Every handler reads the connection (endpoint, caller, request id) the root ASGI callable attached to the request
scope, so one `Server` and one stateless session manager serve all three endpoints. The tools, resources,
prompts and instructions a connection sees all follow from the tools it lists. The served texts are checked
against their bounds here, so the server refuses to start when one breaks a bound.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import mcp_types as types
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from pydantic import BaseModel

from auto_runtime import __version__
from auto_runtime.auth.caller import LOCAL_CALLER
from auto_runtime.guides import RECIPES, Guide
from auto_runtime.mcp_server.bounds import (
    guide_problems,
    instructions_problems,
    require_within_bounds,
    tool_text_problems,
)
from auto_runtime.mcp_server.calls import ToolCalls
from auto_runtime.mcp_server.connection import Connection, connection_of
from auto_runtime.mcp_server.endpoints import Endpoint
from auto_runtime.mcp_server.guide_resources import GuideResources
from auto_runtime.mcp_server.instructions import Instructions
from auto_runtime.mcp_server.prompts import RecipePrompts
from auto_runtime.mcp_server.toolset import ServedTool, ToolSet
from auto_runtime.operations.catalog import Catalog
from auto_runtime.operations.dispatcher import Dispatcher

SERVER_NAME = "auto-runtime"
SERVER_TITLE = "Auto Runtime"
MAX_BODY_BYTES = 1_048_576
REQUEST_STATE_LABEL = b"auto-runtime/mcp-request-state"
INSTRUCTED_METHODS = frozenset({"initialize", "server/discover"})
SAMPLE_ENDPOINTS = (Endpoint("own"), Endpoint("org", org="local"), Endpoint("playbook", org="local", playbook="abc"))


def request_state_key(secret: bytes) -> bytes:
    """The key that seals MCP request state: derived from a `SECRETS_KEY` under a label of its own."""
    return HKDF(algorithm=SHA256(), length=32, salt=None, info=REQUEST_STATE_LABEL).derive(secret)


def _bound_principal(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """Request state is bound to the caller and the endpoint path (org and playbook included)."""
    connection = connection_of(ctx.request)
    return f"{connection.caller.id}|{connection.endpoint.path}"


class McpService:
    """The tools, guides, prompts and instructions of the MCP endpoints, and the `Server` that serves them.

    `outside_effects` is the † condition of spec §4.2, read once at start: a tool server is configured, or people
    may add connections on a runtime where a person can. `secrets_keys` are `SECRETS_KEY` and, while set,
    `SECRETS_KEY_PREVIOUS` (the first seals; a SQLite ledger without `SECRETS_KEY` gives its `secrets.key`).
    """

    def __init__(
        self,
        *,
        catalog: Catalog,
        dispatcher: Dispatcher,
        guides: Mapping[str, Guide],
        definition_types: Iterable[str],
        outside_effects: bool,
        secrets_keys: Sequence[bytes],
    ) -> None:
        self.tools = ToolSet(catalog, outside_effects=outside_effects)
        self.calls = ToolCalls(self.tools, dispatcher)
        self.resources = GuideResources(guides)
        self.prompts = RecipePrompts(RECIPES, guides, (served.name for served in self.tools.of_kind("playbook")))
        terminology = guides.get("terminology")
        if terminology is None:
            raise ValueError("the MCP endpoints need the terminology guide")
        self.instructions = Instructions(terminology.text, definition_types)
        self._check_bounds(guides)
        if not secrets_keys:
            raise ValueError("the MCP request state needs the secrets key")
        keys = [request_state_key(key) for key in secrets_keys]
        self.request_state = RequestStateSecurity(keys=keys, bind_principal=_bound_principal, audience=SERVER_NAME)

    def _check_bounds(self, guides: Mapping[str, Guide]) -> None:
        every_tool = {served.name: served for kind in ("own", "org", "playbook") for served in self.tools.of_kind(kind)}
        problems = tool_text_problems(every_tool.values())
        problems += guide_problems(guides, RECIPES)
        samples = [(e, self.tools.for_caller(e.kind, LOCAL_CALLER)) for e in SAMPLE_ENDPOINTS]
        texts = [(e.path, self._instructions_text(e, "local", listed)) for e, listed in samples]
        problems += instructions_problems(texts)
        require_within_bounds(problems)

    def _instructions_text(self, endpoint: Endpoint, org: str, listed: Sequence[ServedTool]) -> str:
        return self.instructions.compose(
            endpoint, org, [s.name for s in listed], playbook_tools=any(s.takes_playbook for s in listed)
        )

    def listed_tools(self, connection: Connection) -> list[ServedTool]:
        return self.tools.for_caller(connection.endpoint.kind, connection.caller)

    def instructions_for(self, connection: Connection) -> str:
        listed = self.listed_tools(connection)
        return self.instructions.build(
            connection.endpoint,
            connection.org,
            [s.name for s in listed],
            playbook_tools=any(s.takes_playbook for s in listed),
        )

    # Handlers of the low-level server -------------------------------------------------------------------------

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        listed = self.listed_tools(connection_of(ctx.request))
        return types.ListToolsResult(tools=[served.tool.model_copy(deep=True) for served in listed])

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await self.calls.call(connection_of(ctx.request), params.name, params.arguments)

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        connection_of(ctx.request)
        return self.resources.listed()

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        connection_of(ctx.request)
        return self.resources.read(str(params.uri))

    async def list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        listed = self.listed_tools(connection_of(ctx.request))
        return self.prompts.listed(s.name for s in listed)

    async def get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        listed = self.listed_tools(connection_of(ctx.request))
        return self.prompts.get([s.name for s in listed], params.name, params.arguments)

    async def instructions_middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Replaces the fixed instructions of `initialize` and `server/discover` by the connection's own."""
        result = await call_next(ctx)
        if ctx.method not in INSTRUCTED_METHODS or ctx.request is None:
            return result
        instructions = self.instructions_for(connection_of(ctx.request))
        if isinstance(result, dict):
            return {**result, "instructions": instructions}
        if isinstance(result, BaseModel) and "instructions" in type(result).model_fields:
            return result.model_copy(update={"instructions": instructions})
        return result

    def build_server(self) -> Server[Any]:
        server: Server[Any] = Server(
            SERVER_NAME,
            version=__version__,
            title=SERVER_TITLE,
            get_tool_input_schema=lambda name: None,
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_read_resource=self.read_resource,
            on_list_prompts=self.list_prompts,
            on_get_prompt=self.get_prompt,
        )
        server.middleware.append(RequestStateBoundary(self.request_state, default_audience=SERVER_NAME))
        server.middleware.append(self.instructions_middleware)
        return server

    def session_manager(self) -> StreamableHTTPSessionManager:
        """A new stateless session manager over a new `Server` (a manager runs once)."""
        return StreamableHTTPSessionManager(
            self.build_server(),
            json_response=False,
            stateless=True,
            security_settings=None,
            max_request_body_size=MAX_BODY_BYTES,
        )
