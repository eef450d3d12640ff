"""The connection operations (HTTP page "Connections"): `add_connection`, `list_connections`, `get_connection`,
`remove_connection`, and the three routes of Studio's link page, `read_link`, `approve` and `give_credential`.
What each does is `tools.connections.Connections`'s; these declare the inputs, outputs, permissions and hints.

`get_connection` and the link's routes are served over HTTP alone (spec mcp.md §4.4). The link's routes need no
permission: the token binds them (and, where people sign in, the adder's session).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from auto_runtime.auth.caller import Permission
from auto_runtime.operations.fields import OrLeftOut
from auto_runtime.operations.operation import Hints, Operation, OperationContext
from auto_runtime.operations.services import services_of
from auto_runtime.runs.ids import canonical_run_id
from auto_runtime.settings.tool_servers import SigningAlgorithm
from auto_runtime.tools.connections import Connections, GivenCredential

TAG = "connections"
ConnectionId = Annotated[
    str, Field(min_length=1, max_length=64, description="The id of the connection"), AfterValidator(canonical_run_id)
]
Token = Annotated[str, Field(min_length=1, max_length=256, description="The token of the connection's link")]
Text = Annotated[str, Field(min_length=1, max_length=2048)]
Secret = Annotated[str, Field(min_length=1, max_length=16384)]
CREDENTIAL_KINDS = Literal["none", "reference", "secret", "client_credentials"]


class EntryInput(BaseModel):
    """The server, without its credential, as an entry of the configuration file has it."""

    model_config = ConfigDict(extra="forbid")
    url: OrLeftOut[Text] = Field(default=None, description="The MCP server's URL, for an mcp connection")
    document: OrLeftOut[Text] = Field(
        default=None, description="The URL of the OpenAPI document, for an openapi connection"
    )
    base_url: OrLeftOut[Text] = Field(default=None, description="The API's base URL, when not the document's server")
    headers: OrLeftOut[dict[str, Text]] = Field(default=None, description="Headers sent with every request")
    query_params: OrLeftOut[dict[str, Text]] = Field(
        default=None, description="Query parameters sent with every request"
    )
    allowed: OrLeftOut[list[Annotated[str, Field(min_length=1, max_length=128)]]] = Field(
        default=None, description="The only tools a function may use; every tool when left out"
    )
    playbooks: OrLeftOut[list[Annotated[str, Field(min_length=1, max_length=48)]]] = Field(
        default=None, description="The playbooks that may use it; every playbook of the org when left out"
    )
    record_content: OrLeftOut[bool] = Field(default=None, description="Whether the calls' content is kept")
    request_id: OrLeftOut[Text] = Field(default=None, description="Where the server's request id is read")


class CredentialInput(BaseModel):
    """How the connection is credentialled, never its value."""

    model_config = ConfigDict(extra="forbid")
    kind: CREDENTIAL_KINDS = Field(description="none, secret, reference or client_credentials")
    name: OrLeftOut[Text] = Field(default=None, description="The header, query parameter or security scheme")
    in_: OrLeftOut[Literal["header", "query", "security"]] = Field(
        default=None, alias="in", description="Where the value is sent: header, query or security"
    )
    variable: OrLeftOut[Text] = Field(default=None, description="The runtime's variable a reference names")
    issuer: OrLeftOut[Text] = Field(default=None, description="The authorization server of client credentials")
    client_id: OrLeftOut[Text] = Field(default=None, description="The client id of client credentials")
    scope: OrLeftOut[Text] = Field(default=None, description="The scope client credentials ask for")


class AddInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Annotated[str, Field(min_length=1, max_length=64)] = Field(
        description="The name a function gives the server before the slash, as name/tool", examples=["crm"]
    )
    kind: Literal["mcp", "openapi"] = Field(description="mcp for an MCP server, openapi for an HTTP API")
    entry: EntryInput
    credential: CredentialInput


class ListInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    include_removed: bool = Field(default=False, description="Whether to list removed connections too")


class IdInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: ConnectionId


class LinkInput(IdInput):
    token: Token


class GiveInput(LinkInput):
    value: OrLeftOut[Secret] = Field(default=None, description="The secret, for a credential of the kind secret")
    client_secret: OrLeftOut[Secret] = Field(default=None, description="The client secret of client credentials")
    private_key: OrLeftOut[Secret] = Field(default=None, description="The PEM private key of client credentials")
    algorithm: OrLeftOut[SigningAlgorithm] = Field(default=None, description="The private key's algorithm")


class ConnectionOutput(BaseModel):
    id: str
    name: str
    kind: Literal["mcp", "openapi"]
    entry: dict[str, Any]
    credential: dict[str, Any]
    status: Literal["pending", "connected", "broken", "removed"]
    added_by: str
    added_at: str
    connected_at: str | None
    connected_by: str | None
    credential_ends_with: str | None
    broken: str | None


class Connect(BaseModel):
    url: str
    expires_at: str


class AddedOutput(ConnectionOutput):
    connect: Connect | SkipJsonSchema[None] = None


class ListOutput(BaseModel):
    connections: list[ConnectionOutput]


def connections_of(context: OperationContext) -> Connections:
    connections = services_of(context.services).connections
    if connections is None:
        raise RuntimeError("the runtime's services were composed without the connections")
    return connections


async def add_connection(context: OperationContext, data: AddInput) -> dict[str, Any]:
    entry = data.entry.model_dump(exclude_none=True)
    credential = data.credential.model_dump(exclude_none=True, by_alias=True)
    return await connections_of(context).add(context.caller, context.org, data.name, data.kind, entry, credential)


async def list_connections(context: OperationContext, data: ListInput) -> dict[str, Any]:
    return await connections_of(context).list(context.org, data.include_removed)


async def get_connection(context: OperationContext, data: IdInput) -> dict[str, Any]:
    return await connections_of(context).get(context.org, data.id)


async def remove_connection(context: OperationContext, data: IdInput) -> dict[str, Any]:
    return await connections_of(context).remove(context.caller, context.org, data.id)


async def read_link(context: OperationContext, data: LinkInput) -> dict[str, Any]:
    return await connections_of(context).read_link(context.org, data.id, data.token)


async def approve(context: OperationContext, data: LinkInput) -> dict[str, Any]:
    return await connections_of(context).approve(context.caller, context.org, data.id, data.token)


async def give_credential(context: OperationContext, data: GiveInput) -> dict[str, Any]:
    given = GivenCredential(data.value, data.client_secret, data.private_key, data.algorithm)
    return await connections_of(context).give_credential(context.caller, context.org, data.id, data.token, given)


ORG_READ = frozenset({Permission.ORG_READ})
ORG_WRITE = frozenset({Permission.ORG_WRITE})
READ = Hints(read_only=True, destructive=False, idempotent=True, open_world=False)
COMMAND = Hints(read_only=False, destructive=False, idempotent=False, open_world=False)

CONNECTION_OPERATIONS = (
    Operation(
        name="add_connection",
        title="Add a connection",
        description=(
            "Adds a tool server to the org for a person, without its credential: an MCP server (kind mcp, its url "
            "in entry) or an HTTP API described by an OpenAPI document (kind openapi, its document in entry). "
            "credential says how it is credentialled: none, secret (name and in), reference (variable, name and "
            "in) or client_credentials (issuer and client_id); never put a credential's value in the request. "
            "The connection is pending until the person opens connect.url, Studio's page, within ten minutes to "
            "approve it or give its credential there. Functions then name its tools as name/tool."
        ),
        scope="org",
        permissions=ORG_WRITE,
        method="POST",
        route="/connections",
        input_model=AddInput,
        output_model=AddedOutput,
        handler=add_connection,
        hints=COMMAND,
        tag=TAG,
        reasons=frozenset({"invalid_input", "forbidden", "conflict", "unavailable"}),
        success_status=201,
    ),
    Operation(
        name="list_connections",
        title="List the connections",
        description=(
            "Lists the org's connections, the tool servers people added, newest first. Each has its status: "
            "pending until the person approves it on Studio's page, connected, or broken. Each says how it is "
            "credentialled, never a credential's value. Removed connections are left out unless include_removed "
            "is true."
        ),
        scope="org",
        permissions=ORG_READ,
        method="GET",
        route="/connections",
        input_model=ListInput,
        output_model=ListOutput,
        handler=list_connections,
        hints=READ,
        tag=TAG,
    ),
    Operation(
        name="get_connection",
        title="Read a connection",
        description="Reads one connection of the org, as Studio shows it.",
        scope="org",
        permissions=ORG_READ,
        method="GET",
        route="/connections/{id}",
        input_model=IdInput,
        output_model=ConnectionOutput,
        handler=get_connection,
        hints=READ,
        tag=TAG,
        reasons=frozenset({"not_found"}),
        has_tool=False,
    ),
    Operation(
        name="remove_connection",
        title="Remove a connection",
        description=(
            "Removes a connection of the org for good and forgets its credential. Functions can no longer use its "
            "tools. Its name may then be given to a new connection. Removing a removed connection changes nothing; "
            "confirm with the person first."
        ),
        scope="org",
        permissions=ORG_WRITE,
        method="DELETE",
        route="/connections/{id}",
        input_model=IdInput,
        output_model=ConnectionOutput,
        handler=remove_connection,
        hints=Hints(read_only=False, destructive=True, idempotent=True, open_world=False),
        tag=TAG,
        reasons=frozenset({"not_found", "unavailable"}),
    ),
    Operation(
        name="read_link",
        title="Read a connection's link",
        description="Reads the connection a link of Studio's page opens, with the link's token.",
        scope="org",
        permissions=frozenset(),
        method="GET",
        route="/connections/{id}/link/{token}",
        input_model=LinkInput,
        output_model=ConnectionOutput,
        handler=read_link,
        hints=READ,
        tag=TAG,
        reasons=frozenset({"not_found"}),
        has_tool=False,
    ),
    Operation(
        name="approve",
        title="Approve a connection",
        description="Connects a connection whose credential is none or a reference, and uses its link up.",
        scope="org",
        permissions=frozenset(),
        method="POST",
        route="/connections/{id}/approve",
        input_model=LinkInput,
        output_model=ConnectionOutput,
        handler=approve,
        hints=COMMAND,
        tag=TAG,
        reasons=frozenset({"not_found", "forbidden", "conflict", "unavailable"}),
        has_tool=False,
    ),
    Operation(
        name="give_credential",
        title="Give a connection's credential",
        description=(
            "Keeps a connection's credential sealed in the runtime's secret store, connects the connection and "
            "uses its link up: value for a secret, or client_secret, or private_key with algorithm, for client "
            "credentials."
        ),
        scope="org",
        permissions=frozenset(),
        method="POST",
        route="/connections/{id}/credential",
        input_model=GiveInput,
        output_model=ConnectionOutput,
        handler=give_credential,
        hints=COMMAND,
        tag=TAG,
        reasons=frozenset({"not_found", "forbidden", "conflict", "invalid_input", "unavailable"}),
        has_tool=False,
    ),
)
