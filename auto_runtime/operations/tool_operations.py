"""The five tool operations (HTTP page "Tool servers"): `search` on the org (`search_in_org`) and on a playbook,
`introspect`, `validate`, `dry_run` and `execute`. What each does is `tools.playbook_tools.PlaybookTools`'s;
these declare the inputs, outputs, permissions and hints, and check access on the org route.

On the org route, `search` covers the org's playbooks: a key limited to some playbooks must name one in
`playbook` (else `forbidden`), a `playbook` the org does not have is `not_found`, before any server is asked.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from auto_runtime.auth.caller import Permission
from auto_runtime.operations.definition_operations import PLAYBOOK_READ, PLAYBOOK_WRITE
from auto_runtime.operations.fields import ID_PATTERN, OrLeftOut
from auto_runtime.operations.operation import Hints, Operation, OperationContext
from auto_runtime.operations.services import services_of
from auto_runtime.problems import forbidden, not_found
from auto_runtime.tools.playbook_tools import PlaybookTools, SearchQuery
from auto_runtime.tools.tool_search import TERMS_PATTERN

SERVER_DESCRIPTION = "The name of the tool server, the part a function writes before the slash"
TOOL_DESCRIPTION = "The name of the tool, as its server lists it"
ARGUMENTS_DESCRIPTION = "The arguments of the call, the object the tool's input_schema takes; at most 16 KiB as JSON"
READ_HINTS = Hints(read_only=True, destructive=False, idempotent=True, open_world=True)
READ_REASONS = frozenset({"not_found", "invalid_input", "unavailable"})
TAG = "tool-servers"

ServerName = Annotated[str, Field(min_length=1, max_length=64, description=SERVER_DESCRIPTION)]
ToolName = Annotated[str, Field(min_length=1, max_length=128, description=TOOL_DESCRIPTION)]
Terms = Annotated[
    str,
    Field(
        pattern=TERMS_PATTERN,
        description="Up to 8 words of up to 64 characters each, separated by spaces",
        examples=["invoice"],
    ),
]
OnlyField = Literal["read", "write"]


TERMS_FIELD = Field(default=None, description="The words to look for; every tool when left out")
SERVER_FIELD = Field(default=None, description="Keep the server of that name and ask no other")
ONLY_FIELD = Field(default=None, description="read keeps the tools their server marks read-only, write the others")


class SearchInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    terms: OrLeftOut[Terms] = TERMS_FIELD
    server: OrLeftOut[ServerName] = SERVER_FIELD
    only: OrLeftOut[OnlyField] = ONLY_FIELD


class OrgSearchInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    playbook: OrLeftOut[Annotated[str, Field(pattern=ID_PATTERN)]] = Field(
        default=None, description="Only the servers that serve this playbook of the org"
    )
    terms: OrLeftOut[Terms] = TERMS_FIELD
    server: OrLeftOut[ServerName] = SERVER_FIELD
    only: OrLeftOut[OnlyField] = ONLY_FIELD


class ToolInPath(BaseModel):
    model_config = ConfigDict(extra="forbid")
    server: ServerName
    tool: ToolName


class ValidateInput(ToolInPath):
    arguments: dict[str, Any] = Field(description=ARGUMENTS_DESCRIPTION)


class DryRunInput(ToolInPath):
    arguments: OrLeftOut[dict[str, Any]] = Field(default=None, description=ARGUMENTS_DESCRIPTION)


class ExecuteInput(ToolInPath):
    arguments: OrLeftOut[dict[str, Any]] = Field(default=None, description=ARGUMENTS_DESCRIPTION + "; {} when left out")


class FoundServer(BaseModel):
    name: str
    connection: str | SkipJsonSchema[None] = None
    type: Literal["mcp", "stdio", "openapi"]
    record_content: bool
    tool_count: int | SkipJsonSchema[None] = None
    unavailable: str | SkipJsonSchema[None] = None
    because: str | SkipJsonSchema[None] = None
    playbooks: list[str] | SkipJsonSchema[None] = None


class FoundTool(BaseModel):
    server: str
    tool: str
    summary: str
    read_only: bool


class SearchOutput(BaseModel):
    servers: list[FoundServer]
    tools: list[FoundTool]
    scopes: list[str]


class IntrospectOutput(BaseModel):
    server: str
    tool: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, bool] | SkipJsonSchema[None] = None


class Issue(BaseModel):
    path: str
    message: str


class ValidateOutput(BaseModel):
    valid: bool | None
    issues: list[Issue]


class Reachability(BaseModel):
    reachable: Literal["yes", "no"]
    because: str | SkipJsonSchema[None] = None


class DryRunOutput(BaseModel):
    would_run: bool
    needs: Literal["playbook:write"]
    caller_may: bool
    playbook_retired: bool
    allowed: bool
    read_only: bool | None
    arguments: ValidateOutput | None
    server: Reachability


class ExecuteOutput(BaseModel):
    call_id: str
    server: str
    tool: str
    outcome: Literal["result", "tool_error", "server_failure", "timed_out", "too_large"]
    text: str
    answer: Any = None
    result_bytes: int | None
    duration_ms: int
    server_request_id: str | SkipJsonSchema[None] = None
    called_at: str


def tools_of(context: OperationContext) -> PlaybookTools:
    tools = services_of(context.services).tools
    if tools is None:
        raise RuntimeError("the runtime's services were composed without the tool operations")
    return tools


async def search_in_org(context: OperationContext, data: OrgSearchInput) -> dict[str, Any]:
    caller = context.caller
    if data.playbook is None and caller.playbooks is not None:
        raise forbidden("This key may access only some playbooks of the org: name one of its playbooks in playbook.")
    if data.playbook is not None:
        if not caller.may_access_playbook(data.playbook):
            raise forbidden(f"This key may not access the playbook {data.playbook}.")
        status = await services_of(context.services).playbooks.playbook_status(context.org, data.playbook)
        if status is None:
            raise not_found(f"The org {context.org} has no playbook {data.playbook}.")
    query = SearchQuery(
        org=context.org,
        playbook=data.playbook,
        terms=data.terms,
        server=data.server,
        only=data.only,
        on_org=True,
        visible=caller.playbooks,
    )
    return await tools_of(context).search(query)


async def search(context: OperationContext, data: SearchInput) -> dict[str, Any]:
    query = SearchQuery(
        org=context.org,
        playbook=context.scope.playbook,
        terms=data.terms,
        server=data.server,
        only=data.only,
        on_org=False,
        visible=None,
    )
    return await tools_of(context).search(query)


async def introspect(context: OperationContext, data: ToolInPath) -> dict[str, Any]:
    return await tools_of(context).introspect(context.org, context.scope.playbook, data.server, data.tool)


async def validate(context: OperationContext, data: ValidateInput) -> dict[str, Any]:
    return await tools_of(context).validate(context.org, context.scope.playbook, data.server, data.tool, data.arguments)


async def dry_run(context: OperationContext, data: DryRunInput) -> dict[str, Any]:
    scope = context.scope
    status = await services_of(context.services).playbooks.playbook_status(scope.org, scope.playbook)
    return await tools_of(context).dry_run(
        scope.org,
        scope.playbook,
        data.server,
        data.tool,
        data.arguments,
        caller_may=context.caller.holds_any(PLAYBOOK_WRITE),
        playbook_retired=status == "retired",
    )


async def execute(context: OperationContext, data: ExecuteInput) -> dict[str, Any]:
    arguments = data.arguments if data.arguments is not None else {}
    return await tools_of(context).execute(context.scope, data.server, data.tool, arguments, context.caller.id)


TOOL_PATH = "/tool-servers/{server}/tools/{tool}"

TOOL_OPERATIONS = (
    Operation(
        name="search",
        title="Search the org's tools",
        description=(
            "Lists the tool servers the operator set up for the org, each with the playbooks whose functions may "
            "use it, and the tools each allows, or finds tools by terms, best first. Give playbook to see only "
            "the servers of one playbook; a key limited to some playbooks must. A reasoning function names a "
            "tool in its tools as server/tool."
        ),
        scope="org",
        permissions=frozenset({Permission.ORG_READ, Permission.PLAYBOOK_READ}),
        method="GET",
        route="/tool-servers/search",
        input_model=OrgSearchInput,
        output_model=SearchOutput,
        handler=search_in_org,
        hints=READ_HINTS,
        tag=TAG,
        reasons=frozenset({"not_found", "invalid_input", "forbidden"}),
        operation_id="search_in_org",
    ),
    Operation(
        name="search",
        title="Search the playbook's tools",
        description=(
            "Lists the tool servers the playbook's functions may use and the tools each allows, or finds tools by "
            "terms, best first. Give only read or only write to keep the tools their server marks read-only or the "
            "others, and server to ask one server only. A reasoning function names a tool in its tools as "
            "server/tool; introspect reads one in full."
        ),
        scope="playbook",
        permissions=PLAYBOOK_READ,
        method="GET",
        route="/tool-servers/search",
        input_model=SearchInput,
        output_model=SearchOutput,
        handler=search,
        hints=READ_HINTS,
        tag=TAG,
        reasons=frozenset({"not_found", "invalid_input"}),
    ),
    Operation(
        name="introspect",
        title="Read a tool",
        description=(
            "Reads one tool of a tool server of the playbook in full: its description, the JSON Schema of the "
            "arguments it takes and the hints its server gives it. Use search first to find the tools. Use "
            "dry_run to check arguments for it before execute calls it."
        ),
        scope="playbook",
        permissions=PLAYBOOK_READ,
        method="GET",
        route=TOOL_PATH,
        input_model=ToolInPath,
        output_model=IntrospectOutput,
        handler=introspect,
        hints=READ_HINTS,
        tag=TAG,
        reasons=READ_REASONS,
    ),
    Operation(
        name="validate",
        title="Check a tool's arguments",
        description=(
            "Checks arguments against a tool's input schema without calling it, and answers valid with the "
            "issues, each at the JSON Pointer of the argument at fault; valid is null for a schema the checker "
            "cannot handle."
        ),
        scope="playbook",
        permissions=PLAYBOOK_READ,
        method="POST",
        route=TOOL_PATH + "/validate",
        input_model=ValidateInput,
        output_model=ValidateOutput,
        handler=validate,
        hints=READ_HINTS,
        tag=TAG,
        reasons=READ_REASONS,
        has_tool=False,
    ),
    Operation(
        name="dry_run",
        title="Try a tool call without making it",
        description=(
            "Reports what execute would check for a tool and its arguments, without calling the tool. It says "
            "whether the call would run now, whether the caller may make it, whether the operator allows the tool, "
            "and whether its server marks it read-only and responds. It also checks the arguments against the "
            "tool's input schema; nothing is called or recorded."
        ),
        scope="playbook",
        permissions=PLAYBOOK_READ,
        method="POST",
        route=TOOL_PATH + "/dry-run",
        input_model=DryRunInput,
        output_model=DryRunOutput,
        handler=dry_run,
        hints=READ_HINTS,
        tag=TAG,
        reasons=READ_REASONS,
    ),
    Operation(
        name="execute",
        title="Call a tool",
        description=(
            "Calls one tool of a tool server of the playbook, as a run of a reasoning function would, under the "
            "server's credential, and answers what the tool returned and what a run's model would see. The call "
            "is live: a tool its server does not mark read-only may change something, so confirm with the person "
            "first. The call is recorded in the playbook's events."
        ),
        scope="playbook",
        permissions=PLAYBOOK_WRITE,
        method="POST",
        route=TOOL_PATH + "/execute",
        input_model=ExecuteInput,
        output_model=ExecuteOutput,
        handler=execute,
        hints=Hints(read_only=False, destructive=True, idempotent=False, open_world=True),
        tag=TAG,
        reasons=frozenset({"not_found", "invalid_input", "unavailable", "conflict"}),
    ),
)
