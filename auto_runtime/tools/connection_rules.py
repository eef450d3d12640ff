"""The checks of a connection: its entry and credential (`invalid_input`), the operator's `connections` rules
(`forbidden`, with the sentence of the rule), and the tool-server entry a connected connection is served as.

The same checks run when `add_connection` is asked and when a connection is first used after the runtime
starts (seeds, "A connection that is not ready"), so a rule changed since reaches the connections already added.

What cannot travel is refused when it is given, never when it is sent: a header's value (an entry's header, a
credential's value sent in a header or through a security scheme) is printable ASCII, spaces and tabs
(`HEADER_TEXT`, RFC 9110's field value less the obsolete octets, which the HTTP client cannot encode); a URL holds
no space or control character; every other string holds no control character (NUL, a line break).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from auto_runtime.json_pointers import escape, pointer_of, unescape
from auto_runtime.problems import InputIssue
from auto_runtime.settings import ToolServer
from auto_runtime.settings.addresses import has_query_or_fragment, is_https_or_loopback
from auto_runtime.settings.connections import ConnectionsPolicy
from auto_runtime.settings.credentials import has_credential_shape, names_a_credential, written_out_problem
from auto_runtime.settings.identifiers import HEADER_PATTERN, VARIABLE_PATTERN
from auto_runtime.settings.references import parse_template
from auto_runtime.settings.tool_servers import RUNTIME_HEADERS, is_header_text, tool_server_problems
from auto_runtime.tools.hosts import HostPolicy, host_refusal

NO_CONNECTION = "This runtime uses no connection: its operator sets up its tool servers itself."
URL_EXPECTS = "expected an https URL, or an http URL on a loopback address"
REFERENCE = re.compile(r"\$\{[^}]*\}")
KIND_FIELDS: Mapping[str, frozenset[str]] = {
    "mcp": frozenset({"url", "headers", "allowed", "playbooks", "record_content", "request_id"}),
    "openapi": frozenset(
        {"document", "base_url", "headers", "query_params", "allowed", "playbooks", "record_content", "request_id"}
    ),
}
NAMING_FIELD = {"mcp": "url", "openapi": "document"}
CREDENTIAL_FIELDS: Mapping[str, tuple[frozenset[str], frozenset[str]]] = {
    # kind: (fields it needs, fields it may take besides)
    "none": (frozenset(), frozenset()),
    "secret": (frozenset({"name", "in"}), frozenset()),
    "reference": (frozenset({"variable", "name", "in"}), frozenset()),
    "client_credentials": (frozenset({"issuer", "client_id"}), frozenset({"scope"})),
}
CREDENTIAL_ORDER = ("kind", "name", "in", "variable", "issuer", "client_id", "scope")
PLACEHOLDER = "placeholder"
HEADER_TEXT = "expected text a header can carry: printable ASCII characters, spaces and tabs"
NO_CONTROL = "expected no control character, such as NUL or a line break"
URL_TEXT = "expected a URL without spaces or control characters"
URL_FIELDS = frozenset({"url", "document", "base_url", "issuer"})
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_URL_REFUSED = re.compile(r"[\x00-\x20\x7f]")


def text_problem(text: str, *, header: bool = False, url: bool = False) -> str | None:
    """Why `text` cannot travel where it goes (a header's value, a URL, any other field), or None."""
    if header and not is_header_text(text):
        return HEADER_TEXT
    if url and _URL_REFUSED.search(text):
        return URL_TEXT
    if _CONTROL.search(text):
        return NO_CONTROL
    return None


def sent_in_a_header(credential: Mapping[str, Any]) -> bool:
    """Whether a credential's value may be sent in a header: `in: header`, or a security scheme (an apiKey in a
    header or a bearer token; the document says which only once it is read)."""
    return credential.get("in") in ("header", "security")


def value_issues(credential: Mapping[str, Any], field: str, value: str) -> list[InputIssue]:
    """The issue of a credential's value given on Studio's page, at `/<field>`, or none."""
    problem = text_problem(value, header=field == "value" and sent_in_a_header(credential))
    return [InputIssue(f"{field}: {problem}.", f"/{field}")] if problem is not None else []


def _issue(pointer: str, words: str) -> InputIssue:
    field = pointer.rsplit("/", 1)[-1]
    return InputIssue(f"{field}: {words}.", pointer)


def _strings(value: Any, pointer: str) -> Iterator[tuple[str, str, str | None]]:
    """Every string of a JSON value with its pointer and the key it is under."""
    if isinstance(value, str):
        yield pointer, value, unescape(pointer.rsplit("/", 1)[-1])
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield f"{pointer}/{escape(key)}", str(key), None
            yield from _strings(item, f"{pointer}/{escape(key)}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings(item, f"{pointer}/{index}")


def _looks_like_a_credential(key: str | None, value: str, under: str) -> bool:
    if under in ("headers", "query_params") and key is not None and names_a_credential(key):
        return True
    if has_credential_shape(value):
        return True
    return written_out_problem(parse_template(value.replace("$", "$$")), None, judge_key=False) is not None


def entry_issues(kind: str, entry: Mapping[str, Any]) -> list[InputIssue]:
    """The issues of an entry, each at its pointer under `/entry`, before it is built as a tool server."""
    issues = [
        _issue(f"/entry/{field}", f"is not a field of a connection of kind {kind}")
        for field in entry
        if field not in KIND_FIELDS[kind]
    ]
    naming = NAMING_FIELD[kind]
    if naming not in entry:
        issues.append(InputIssue(f"entry: expected the field {naming} for a connection of kind {kind}.", "/entry"))
    for field in ("url", "document", "base_url"):
        value = entry.get(field)
        if isinstance(value, str) and field in KIND_FIELDS[kind] and not is_https_or_loopback(value):
            issues.append(_issue(f"/entry/{field}", URL_EXPECTS))
    for pointer, text, key in _strings(dict(entry), "/entry"):
        under = pointer.split("/")[2]
        problem = text_problem(text, header=under == "headers" and key is not None, url=under in URL_FIELDS)
        if problem is not None:
            issues.append(_issue(pointer, problem))
        elif REFERENCE.search(text):
            issues.append(_issue(pointer, "expected no reference such as ${NAME}: a connection refers to no variable"))
        elif _looks_like_a_credential(key if key != under else None, text, under):
            issues.append(
                _issue(pointer, "expected no credential: the entry holds none, and the credential is given apart")
            )
    return issues


def credential_issues(kind: str, credential: Mapping[str, Any]) -> list[InputIssue]:
    """The issues of a credential, each at its field under `/credential`."""
    credential_kind = str(credential.get("kind"))
    needs, may = CREDENTIAL_FIELDS[credential_kind]
    issues: list[InputIssue] = []
    for field in CREDENTIAL_ORDER[1:]:
        text = credential.get(field)
        problem = text_problem(text, url=field in URL_FIELDS) if isinstance(text, str) else None
        if problem is not None:
            issues.append(_issue(f"/credential/{field}", problem))
    if issues:
        return issues
    for field in CREDENTIAL_ORDER[1:]:
        given = credential.get(field) is not None
        if field in needs and not given:
            issues.append(_issue(f"/credential/{field}", f"expected for a credential of the kind {credential_kind}"))
        elif given and field not in needs | may:
            issues.append(_issue(f"/credential/{field}", f"is not taken by a credential of the kind {credential_kind}"))
    where = credential.get("in")
    if where in ("query", "security") and kind != "openapi" and "in" in needs:
        issues.append(_issue("/credential/in", f"expected header: only an openapi connection takes {where}"))
    name = credential.get("name")
    if "name" in needs and isinstance(name, str) and where == "header":
        if not re.fullmatch(HEADER_PATTERN, name):
            issues.append(_issue("/credential/name", "expected a header name"))
        elif name.lower() in RUNTIME_HEADERS:
            issues.append(_issue("/credential/name", "is a header the runtime sets itself"))
    variable = credential.get("variable")
    if "variable" in needs and isinstance(variable, str) and not re.fullmatch(VARIABLE_PATTERN, variable):
        issues.append(_issue("/credential/variable", "expected a variable name of letters, digits and _"))
    issuer = credential.get("issuer")
    if "issuer" in needs and isinstance(issuer, str) and not is_https_or_loopback(issuer):
        issues.append(_issue("/credential/issuer", URL_EXPECTS))
    return issues


def tool_server_of(
    org: str,
    kind: str,
    entry: Mapping[str, Any],
    credential: Mapping[str, Any],
    value: str | None,
    algorithm: str | None = None,
) -> ToolServer:
    """The tool-server entry a connection is served as, its credential's `value` placed where it says.

    Raises pydantic's `ValidationError` for an entry the tool-server model refuses."""
    fields: dict[str, Any] = {"type": kind, "org": org, **{key: item for key, item in entry.items()}}
    credential_kind = credential["kind"]
    if credential_kind in ("secret", "reference") and value is not None:
        place = {"header": "headers", "query": "query_params", "security": "security"}[credential["in"]]
        fields[place] = {**fields.get(place, {}), credential["name"]: value}
    elif credential_kind == "client_credentials":
        auth: dict[str, Any] = {"issuer": credential["issuer"], "client_id": credential["client_id"]}
        if credential.get("scope") is not None:
            auth["scope"] = credential["scope"]
        if algorithm is not None:
            auth.update(private_key=value or PLACEHOLDER, algorithm=algorithm)
        else:
            auth["client_secret"] = value or PLACEHOLDER
        fields["auth"] = auth
    return ToolServer.model_validate(fields)


def server_issues(
    org: str, name: str, kind: str, entry: Mapping[str, Any], credential: Mapping[str, Any], providers: frozenset[str]
) -> list[InputIssue]:
    """What an entry of the configuration would refuse of this one: its name, headers, allowed tools, base URL."""
    try:
        server = tool_server_of(org, kind, entry, credential, PLACEHOLDER)
    except ValidationError as error:
        return [
            _issue("/entry" + pointer_of(issue["loc"]), str(issue["msg"]).lower())
            for issue in error.errors()
            if issue["loc"] and issue["loc"][0] in KIND_FIELDS[kind]
        ] or [InputIssue("entry: expected an entry of a tool server.", "/entry")]
    issues: list[InputIssue] = []
    for path, words in tool_server_problems(name, server, providers, Path("/")):
        if path and path[0] == "document":
            continue  # a connection's document is a URL, checked above
        if not path:
            issues.append(InputIssue(f"name: {words.replace('expects', 'expected', 1)}.", "/name"))
        elif path[0] in ("auth", "security", "query_params") and path[0] not in entry:
            issues.append(_issue("/credential/name", words.replace("expects", "expected", 1)))
        else:
            issues.append(_issue("/entry" + pointer_of(path), words.replace("expects", "expected", 1)))
    if isinstance(entry.get("base_url"), str) and has_query_or_fragment(entry["base_url"]):
        issues.append(_issue("/entry/base_url", "expected a URL with no query and no fragment"))
    return _distinct(issues)


def _distinct(issues: list[InputIssue]) -> list[InputIssue]:
    seen: set[tuple[str, str]] = set()
    kept: list[InputIssue] = []
    for issue in issues:
        if (issue.detail, issue.pointer) not in seen:
            seen.add((issue.detail, issue.pointer))
            kept.append(issue)
    return kept


def addresses_of(entry: Mapping[str, Any], credential: Mapping[str, Any]) -> list[str]:
    """The addresses a connection names: an mcp url, an openapi document and base_url, an issuer."""
    named = [entry.get("url"), entry.get("document"), entry.get("base_url"), credential.get("issuer")]
    return [address for address in named if isinstance(address, str)]


def rule_refusal(policy: ConnectionsPolicy, entry: Mapping[str, Any], credential: Mapping[str, Any]) -> str | None:
    """The sentence of the first rule of the operator that does not take the connection, or None."""
    if not policy.people_may_add:
        return NO_CONNECTION
    hosts = HostPolicy.of(policy.allowed_hosts)
    for address in addresses_of(entry, credential):
        host = urlsplit(address).hostname or address
        if not hosts.allows(host):
            return host_refusal(host)
    kind = str(credential["kind"])
    if policy.credential_kinds is not None and kind not in policy.credential_kinds:
        return (
            f"The operator does not let a connection take a credential of the kind {kind} "
            "(connections.credential_kinds)."
        )
    variable = credential.get("variable")
    if kind == "reference" and variable not in policy.variables:
        return (
            f"The variable {variable} is not one the operator lets a reference credential name (connections.variables)."
        )
    return None
