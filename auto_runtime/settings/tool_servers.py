"""The entries of ``tool_servers`` / ``TOOL_SERVERS`` and the checks that need no network.

The checks that need the OpenAPI document read (security schemes, the document's first server, its
operations) belong to the tool servers themselves, when they read the document.
"""

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictStr, model_validator

from auto_runtime.settings.addresses import has_query_or_fragment, is_https_or_loopback, split_url
from auto_runtime.settings.identifiers import (
    NAME_EXPECTS,
    ORG_PATTERN,
    TOOL_NAME_PATTERN,
    HeaderName,
    PlaybookId,
    VariableName,
    is_server_name,
    matching,
)
from auto_runtime.settings.model_settings import BUILT_IN_PROVIDERS
from auto_runtime.settings.places import KeyPath

ToolServerType = Literal["mcp", "stdio", "openapi"]
SigningAlgorithm = Literal["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]

NAMING_FIELD: dict[ToolServerType, str] = {"mcp": "url", "stdio": "command", "openapi": "document"}
TYPE_FIELDS: dict[ToolServerType, frozenset[str]] = {
    "mcp": frozenset({"url", "headers", "auth"}),
    "stdio": frozenset({"command", "args", "env"}),
    "openapi": frozenset({"document", "base_url", "headers", "query_params", "security", "auth"}),
}
COMMON_FIELDS = frozenset({"type", "org", "playbooks", "allowed", "record_content", "request_id"})
REFERENCE_FIELDS = frozenset({"headers", "query_params", "security", "env", "auth"})
RUNTIME_HEADERS = frozenset(
    {
        "accept",
        "accept-encoding",
        "connection",
        "content-encoding",
        "content-length",
        "content-type",
        "host",
        "keep-alive",
        "last-event-id",
        "mcp-protocol-version",
        "mcp-session-id",
        "te",
        "traceparent",
        "tracestate",
        "transfer-encoding",
        "upgrade",
    }
)
EVERY_ORG = "*"

_URL_EXPECTS = "expects an https URL, or an http URL on a loopback address"
HEADER_TEXT_EXPECTS = "expects text a header can carry: printable ASCII characters, spaces and tabs"
_HEADER_TEXT = re.compile(r"[\t\x20-\x7e]*")


def is_header_text(text: str) -> bool:
    """Whether `text` can be a header's value as the HTTP client sends it: printable ASCII, spaces and tabs (RFC
    9110's field value less the obsolete octets, which it cannot encode; no line break, no NUL)."""
    return _HEADER_TEXT.fullmatch(text) is not None


_org_id = matching(ORG_PATTERN, "expects an org id of 1 to 64 letters, digits, _ and -, a list of them, or *")


def _orgs(value: str | tuple[str, ...]) -> str | tuple[str, ...]:
    if value == EVERY_ORG:
        return value
    if isinstance(value, str):
        return _org_id(value)
    if not value or len(set(value)) != len(value):
        raise ValueError("expects a list of different org ids, at least one")
    return tuple(_org_id(item) for item in value)


def _http_url(value: str) -> str:
    if split_url(value) is None:
        raise ValueError("expects an http or https URL")
    return value


class OAuthClient(BaseModel):
    """OAuth client credentials: a client secret, or a private key with its algorithm."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    issuer: StrictStr = Field(description="The authorization server whose token endpoint issues the tokens")
    client_id: StrictStr = Field(description="The client's id at the issuer")
    client_secret: StrictStr | None = Field(
        default=None, repr=False, description="The client's secret; a ${NAME} reference. Or private_key"
    )
    private_key: StrictStr | None = Field(
        default=None,
        repr=False,
        description="A PEM private key that signs the client's assertion, with algorithm; a ${NAME} reference",
    )
    algorithm: SigningAlgorithm | None = Field(default=None, description="The algorithm private_key signs with")
    scope: StrictStr | None = Field(default=None, description="The scope asked for with each token")


def _type_may_be_left_out(schema: dict[str, Any]) -> None:
    required = schema.get("required")
    if isinstance(required, list):
        required.remove("type")


class ToolServer(BaseModel):
    """One entry of ``tool_servers``; ``type`` is filled in from url, command or document.

    The repr leaves out the fields that may hold secrets.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=_type_may_be_left_out)

    type: ToolServerType = Field(description="mcp, stdio or openapi; taken from url, command or document when left out")
    url: Annotated[StrictStr, AfterValidator(_http_url)] | None = Field(
        default=None, description="mcp: the server, spoken to over Streamable HTTP"
    )
    headers: dict[HeaderName, StrictStr] | None = Field(
        default=None,
        repr=False,
        description="mcp, openapi: headers sent with every request; a ${NAME} reference is a secret",
    )
    auth: OAuthClient | None = Field(
        default=None, description="mcp, openapi: OAuth client credentials instead of a header"
    )
    command: Annotated[StrictStr, Field(min_length=1)] | None = Field(
        default=None, description="stdio: an installed, pinned command, started when first needed"
    )
    args: tuple[StrictStr, ...] | None = Field(default=None, description="stdio: the command's arguments")
    env: dict[VariableName, StrictStr] | None = Field(
        default=None,
        repr=False,
        description="stdio: the command's whole environment; it inherits nothing else from the server",
    )
    document: Annotated[StrictStr, Field(min_length=1)] | None = Field(
        default=None,
        description="openapi: the API's OpenAPI 3.0 or 3.1 document, as an https or loopback http URL or a path "
        "relative to this file that stays inside its directory",
    )
    base_url: StrictStr | None = Field(
        default=None, description="openapi: the URL the calls go to, in place of the document's first server"
    )
    query_params: dict[StrictStr, StrictStr] | None = Field(
        default=None,
        repr=False,
        description="openapi: query parameters sent with every call that no security scheme places",
    )
    security: dict[StrictStr, StrictStr] | None = Field(
        default=None,
        repr=False,
        description="openapi: the credential of each security scheme of the document, by its name; always a reference",
    )
    org: Annotated[StrictStr | tuple[StrictStr, ...], AfterValidator(_orgs)] = Field(
        description="The org whose functions may use the server, a list of orgs, or * for every org"
    )
    playbooks: Annotated[tuple[PlaybookId, ...], Field(min_length=1)] | None = Field(
        default=None,
        description="The playbooks that may use it within each org; every playbook when left out",
    )
    allowed: tuple[StrictStr, ...] | None = Field(
        default=None,
        description="The tools a function may name and execute may call, as the server lists them; every tool "
        "when left out",
    )
    record_content: StrictBool = Field(
        default=True,
        description="Whether call arguments and results are kept whole, scrubbed of secrets, in the ledger; "
        "false keeps their sizes alone",
    )
    request_id: Annotated[StrictStr, Field(min_length=1)] | None = Field(
        default=None,
        description="The response header, or an MCP result's metadata key, holding the server's own request id",
    )

    @model_validator(mode="before")
    @classmethod
    def _fill_in_type(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "type" in data:
            return data
        named_by = [kind for kind, field in NAMING_FIELD.items() if field in data]
        if len(named_by) != 1:
            raise ValueError("expects exactly one of url, command and document")
        return {**data, "type": named_by[0]}

    @property
    def orgs(self) -> tuple[str, ...] | None:
        """The orgs the entry serves, or None when it serves every org."""
        if self.org == EVERY_ORG:
            return None
        return (self.org,) if isinstance(self.org, str) else self.org


def tool_server_problems(
    name: str, server: ToolServer, provider_names: frozenset[str], directory: Path
) -> Iterator[tuple[KeyPath, str]]:
    """Each problem of the entry ``name``, as a path inside the entry and what it expects.

    ``provider_names`` holds the gateway names; ``directory`` is the one a document path must stay in.
    """
    yield from _name_problems(name, provider_names)
    yield from _type_problems(server)
    if server.playbooks is not None and server.org == EVERY_ORG:
        yield ("playbooks",), "expects no playbooks beside org *, since a playbook id belongs to one org"
    yield from _header_problems(server)
    yield from _url_problems(server, directory)
    if server.allowed is not None:
        yield from _allowed_problems(server.allowed)


def _name_problems(name: str, provider_names: frozenset[str]) -> Iterator[tuple[KeyPath, str]]:
    if not is_server_name(name):
        yield (), f"expects a name of {NAME_EXPECTS.removeprefix('expects ')}"
    elif name in BUILT_IN_PROVIDERS or name in provider_names:
        yield (), "expects a name that is not the name of a model provider or gateway"


def _type_problems(server: ToolServer) -> Iterator[tuple[KeyPath, str]]:
    naming_field = NAMING_FIELD[server.type]
    if getattr(server, naming_field) is None:
        yield ("type",), f"expects {naming_field} for a server of type {server.type}"
    others = [field for field in NAMING_FIELD.values() if field != naming_field and getattr(server, field)]
    if others:
        yield (others[0],), "expects exactly one of url, command and document"
    for field in sorted(server.model_fields_set - COMMON_FIELDS - TYPE_FIELDS[server.type]):
        if field not in others:
            yield (field,), f"is a field of another type; a server of type {server.type} does not take it"
    auth = server.auth
    if auth is not None:
        if (auth.client_secret is None) == (auth.private_key is None):
            yield ("auth",), "expects client_secret, or private_key with algorithm, and not both"
        elif (auth.private_key is None) != (auth.algorithm is None):
            yield ("auth", "algorithm"), "expects algorithm beside private_key, and only there"


def _header_problems(server: ToolServer) -> Iterator[tuple[KeyPath, str]]:
    """The headers' names and the values sent in a header (a header's, a security scheme's), never a value."""
    for field, values in (("headers", server.headers), ("security", server.security)):
        for key, value in (values or {}).items():
            if not is_header_text(value):
                yield (field, key), HEADER_TEXT_EXPECTS
    for header in server.headers or {}:
        lowered = header.lower()
        if lowered == "authorization" and server.auth is not None:
            yield ("headers", header), "expects no Authorization header beside an auth block"
        if lowered in RUNTIME_HEADERS:
            yield ("headers", header), "is a header the runtime sets itself"


def _url_problems(server: ToolServer, directory: Path) -> Iterator[tuple[KeyPath, str]]:
    if server.auth is not None and not is_https_or_loopback(server.auth.issuer):
        yield ("auth", "issuer"), _URL_EXPECTS
    if server.base_url is not None:
        if not is_https_or_loopback(server.base_url):
            yield ("base_url",), _URL_EXPECTS
        elif has_query_or_fragment(server.base_url):
            yield ("base_url",), "expects a URL with no query and no fragment"
    if server.document is not None:
        problem = document_problem(server.document, directory)
        if problem is not None:
            yield ("document",), problem


def document_problem(document: str, directory: Path) -> str | None:
    """Why ``document`` is neither an https-or-loopback URL nor a path that stays inside ``directory``."""
    if "://" in document:
        return None if is_https_or_loopback(document) else _URL_EXPECTS
    path = Path(document)
    inside = (directory / path).resolve()
    if path.is_absolute() or not inside.is_relative_to(directory.resolve()):
        return "expects a path relative to the directory of this file that stays inside it"
    return None


def _allowed_problems(allowed: tuple[str, ...]) -> Iterator[tuple[KeyPath, str]]:
    if not allowed:
        yield ("allowed",), "expects at least one tool; leave allowed out to allow every tool"
    seen: set[str] = set()
    for index, tool in enumerate(allowed):
        if tool == "*" or "*" in tool:
            yield ("allowed", index), "expects tool names without *; leave allowed out to allow every tool"
        elif tool in seen:
            yield ("allowed", index), "expects each tool once"
        elif not re.fullmatch(TOOL_NAME_PATTERN, tool):
            yield (
                ("allowed", index),
                "expects a tool name of 1 to 128 letters, digits, underscores, hyphens and dots, "
                "as the server lists it, without the server's name",
            )
        seen.add(tool)
