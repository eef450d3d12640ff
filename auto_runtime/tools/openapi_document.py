"""Reading an `openapi` entry's document at start and turning its operations into tools.

Seeds ("How an HTTP API becomes tools", "The credentials of an HTTP API"): the document is at most 4 MiB and 500
operations, read within 10 seconds, never through a redirect; it is checked with `openapi-spec-validator`
(3.0 and 3.1 only) after every `$ref` is found to point inside it. Each refusal raises `SettingsError` naming
the entry (and, for the document's shape, the place in the document). Operations that cannot be tools are left
out with a warning naming the entry and the reason; so are those whose security the entry does not give.

A document is hostile input (a person adds a connection; its document comes from a server the rules allow), so
it is read with the bounds of a definition before anything walks it: in YAML no anchor, alias or merge key (the
same pre-scan as a definition's front matter, reading only the parser's events), no collection nested past
`MAX_DEPTH` levels (checked on the events for YAML, iteratively on the value for JSON), and no chain of `$ref`
that loops. What is left, the validator's walk above all, is third-party work whose cost on a crafted document
cannot be bounded from outside, so `convert_document` runs in a process of its own (`openapi_worker`), killed at
a time bound; `read_document` fetches, then converts there.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import trio
import yaml
from openapi_spec_validator import validate
from openapi_spec_validator.validation.exceptions import OpenAPIValidationError

from auto_runtime.functions.yaml_refusals import (
    NO_MERGE_KEYS,
    NestedTooDeep,
    compose,
    construct,
    read_events,
    refusals_in,
)
from auto_runtime.json_limits import depth_of
from auto_runtime.json_pointers import escape, pointer_of, tokens_of, unescape
from auto_runtime.settings import ToolServer
from auto_runtime.settings.addresses import has_query_or_fragment, is_https_or_loopback
from auto_runtime.settings.errors import SettingsError
from auto_runtime.tools.hosts import HostPolicy
from auto_runtime.tools.kinds import ListedTool

log = logging.getLogger("auto_runtime.tools")

MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
MAX_OPERATIONS = 500
READ_SECONDS = 10.0
MAX_LISTED_BYTES = 16 * 1024 * 1024
MAX_INPUT_SCHEMA_BYTES = 64 * 1024
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
READ_ONLY = frozenset({"get", "head"})
IDEMPOTENT = frozenset({"get", "head", "put", "delete"})
MAX_DEPTH = 64
"""The deepest a document may nest (objects and arrays): far past any API's, and within what the validator's
recursive walk can follow."""
CONVERT_SECONDS = 20.0
"""The time bound of one document's conversion (its process is killed then): a 4 MiB document that passes
takes a few seconds."""
CONVERT_MEBIBYTES = 1024
"""The data segment the conversion's process may take."""
CONVERSIONS_AT_ONCE = 2
"""Conversions running at once in this server, whichever org's: the others wait their turn."""
WORKER_ENVIRONMENT = ("PATH", "PYTHONPATH", "LANG", "LC_ALL")
"""The variables the conversion's process inherits: what starts Python, no secret."""
_NOT_IN_TOOL_NAME = re.compile(r"[^A-Za-z0-9_.-]")
_COMPONENT_SCHEMA = "#/components/schemas/"


def refused(name: str, where: str, expects: str) -> SettingsError:
    """A start-up refusal naming the entry (and the field or the place in the document), never a value."""
    place = f"tool_servers.{name}" + (f".{where}" if where else "")
    return SettingsError(f"{place}: {expects}")


@dataclass(frozen=True, slots=True)
class Parameter:
    name: str
    location: str  # "path" or "query"
    required: bool
    is_array: bool


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation offered as a tool."""

    tool: ListedTool
    method: str
    path: str
    parameters: tuple[Parameter, ...]
    has_body: bool
    security: tuple[tuple[str, ...], ...]
    """The alternatives, in the document's order; an empty tuple of alternatives sends nothing."""


@dataclass(frozen=True, slots=True)
class Scheme:
    name: str
    kind: str  # apiKey, http, oauth2, openIdConnect, mutualTLS
    location: str | None = None  # header, query, cookie (apiKey)
    parameter: str | None = None  # the header or query name (apiKey)
    http_scheme: str | None = None  # bearer, basic (http)


@dataclass(frozen=True, slots=True)
class ApiDocument:
    base_url: str
    operations: Mapping[str, Operation]
    schemes: Mapping[str, Scheme] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    """The operations left out, each with why, for the log (the conversion itself logs nothing)."""

    def as_json(self) -> dict[str, Any]:
        """The document as JSON, as the conversion's process hands it back."""
        return {
            "base_url": self.base_url,
            "operations": [
                {
                    "tool": [o.tool.name, o.tool.description, o.tool.input_schema, dict(o.tool.annotations)],
                    "method": o.method,
                    "path": o.path,
                    "parameters": [[p.name, p.location, p.required, p.is_array] for p in o.parameters],
                    "has_body": o.has_body,
                    "security": [list(alternative) for alternative in o.security],
                }
                for o in self.operations.values()
            ],
            "schemes": [[s.name, s.kind, s.location, s.parameter, s.http_scheme] for s in self.schemes.values()],
            "notes": list(self.notes),
        }

    @classmethod
    def of_json(cls, data: Mapping[str, Any]) -> ApiDocument:
        operations: dict[str, Operation] = {}
        for item in data["operations"]:
            name, description, input_schema, annotations = item["tool"]
            operations[name] = Operation(
                ListedTool(name, description, input_schema, annotations),
                item["method"],
                item["path"],
                tuple(Parameter(*parameter) for parameter in item["parameters"]),
                item["has_body"],
                tuple(tuple(alternative) for alternative in item["security"]),
            )
        schemes = {scheme[0]: Scheme(*scheme) for scheme in data["schemes"]}
        return cls(data["base_url"], operations, schemes, tuple(data["notes"]))


async def read_document(
    name: str, entry: ToolServer, directory: Path, hosts: HostPolicy, seconds: float = READ_SECONDS
) -> ApiDocument:
    """Read, check and convert the entry's document (in the conversion's process); raises `SettingsError`
    naming the entry."""
    return await convert_in_worker(name, entry, await fetch_document(name, entry, directory, hosts, seconds))


_CONVERSIONS: trio.lowlevel.RunVar[trio.CapacityLimiter] = trio.lowlevel.RunVar("openapi_conversions")


def _conversions() -> trio.CapacityLimiter:
    try:
        return _CONVERSIONS.get()
    except LookupError:
        limiter = trio.CapacityLimiter(CONVERSIONS_AT_ONCE)
        _CONVERSIONS.set(limiter)
        return limiter


async def _kill(process: trio.Process) -> None:
    process.kill()


async def convert_in_worker(name: str, entry: ToolServer, raw: bytes, seconds: float = CONVERT_SECONDS) -> ApiDocument:
    """`convert_document` in a process of its own (`openapi_worker`), killed after `seconds`; raises
    `SettingsError` naming the entry. Logs the operations left out."""
    request = json.dumps({"name": name, "entry": entry.model_dump(mode="json", exclude_none=True)}).encode()
    command = [sys.executable, "-m", "auto_runtime.tools.openapi_worker", str(CONVERT_MEBIBYTES)]
    environment = {key: os.environ[key] for key in WORKER_ENVIRONMENT if key in os.environ}
    async with _conversions():
        with trio.move_on_after(seconds) as bound:
            done = await trio.run_process(
                command,
                stdin=request + b"\n" + raw,
                capture_stdout=True,
                stderr=subprocess.DEVNULL,
                check=False,
                env=environment,
                deliver_cancel=_kill,
            )
    if bound.cancelled_caught:
        raise refused(name, "document", f"could not be checked within {seconds:g} seconds")
    document = await trio.to_thread.run_sync(_answered, name, done.stdout, done.returncode)
    for note in document.notes:
        log.warning("%s", note)
    return document


def _answered(name: str, stdout: bytes, returncode: int) -> ApiDocument:
    """The conversion's answer (up to the 16 MiB its tools may take, so read in a worker thread)."""
    try:
        answer = json.loads(stdout)
    except ValueError:
        raise refused(name, "document", f"could not be checked: its check ended with status {returncode}") from None
    if not answer["ok"]:
        raise SettingsError(str(answer["refused"]))
    return ApiDocument.of_json(answer["document"])


async def fetch_document(
    name: str, entry: ToolServer, directory: Path, hosts: HostPolicy, seconds: float = READ_SECONDS
) -> bytes:
    """The entry's document as it was read, at most 4 MiB within `seconds`; raises `SettingsError`."""
    assert entry.document is not None
    try:
        with trio.fail_after(seconds):
            return await _fetch(name, entry.document, directory, hosts)
    except trio.TooSlowError:
        raise refused(name, "document", f"could not be read within {seconds:g} seconds") from None


async def _fetch(name: str, document: str, directory: Path, hosts: HostPolicy) -> bytes:
    if "://" not in document:
        return await trio.to_thread.run_sync(_read_file, name, document, directory)
    if not hosts.allows_url(document):
        raise refused(name, "document", "names a host that is not allowed")
    async with httpx2.AsyncClient(follow_redirects=False, trust_env=False, timeout=READ_SECONDS) as client:
        try:
            async with client.stream("GET", document, headers={"accept": "application/json, application/yaml"}) as got:
                if got.is_redirect:
                    raise refused(name, "document", "answered a redirect, which the server does not follow")
                if got.status_code != 200:
                    raise refused(name, "document", f"could not be read (HTTP {got.status_code})")
                body = bytearray()
                async for chunk in got.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_DOCUMENT_BYTES:
                        raise refused(name, "document", "expects a document of at most 4 MiB")
                return bytes(body)
        except httpx2.HTTPError as error:
            raise refused(name, "document", f"could not be read ({type(error).__name__})") from None


def _read_file(name: str, document: str, directory: Path) -> bytes:
    path = (directory / document).resolve()
    if not path.is_relative_to(directory.resolve()):
        raise refused(name, "document", "expects a path relative to the directory of this file that stays inside it")
    try:
        if path.stat().st_size > MAX_DOCUMENT_BYTES:
            raise refused(name, "document", "expects a document of at most 4 MiB")
        return path.read_bytes()
    except OSError as error:
        raise refused(name, "document", f"could not be read ({error.strerror or type(error).__name__})") from None


def convert_document(name: str, entry: ToolServer, raw: bytes) -> ApiDocument:
    """The synchronous part: parse within the bounds, check the shape and the rules, build the tools.

    Its cost on a crafted document is bounded only by the process it runs in (`openapi_worker`)."""
    document = _parse(name, raw)
    version = str(document.get("openapi", document.get("swagger", "")))
    if not re.fullmatch(r"3\.[01](\.\d+)?(-.+)?", version):
        raise refused(name, "document", "expects an OpenAPI document of version 3.0 or 3.1 (Swagger 2.0 is refused)")
    _check_references(name, document)
    converter = _Converter(name, entry, document)
    paths = document.get("paths")
    for path in paths if isinstance(paths, dict) else ():
        converter.check_path(str(path))
    try:
        validate(document)
    except OpenAPIValidationError as error:
        place = "#" + pointer_of(error.absolute_path)
        words = error.message.splitlines()[0][:200] if error.message else "not valid"
        raise refused(name, "document", f"is not of the shape OpenAPI gives it at {place}: {words}") from None
    except RecursionError:
        raise refused(name, "document", REFERENCES_WITHOUT_END) from None
    return converter.convert()


NESTS_TOO_DEEP = f"expects a document nested at most {MAX_DEPTH} levels deep"
REFERENCES_WITHOUT_END = (
    "holds references the server cannot follow to an end, such as a schema that holds itself through allOf"
)


def _parse(name: str, raw: bytes) -> dict[str, Any]:
    try:
        document = json.loads(raw)
    except RecursionError:
        raise refused(name, "document", NESTS_TOO_DEEP) from None
    except ValueError:
        document = _parse_yaml(name, raw)
    if not isinstance(document, dict):
        raise refused(name, "document", "expects an object at its root")
    if depth_of(document) > MAX_DEPTH:
        raise refused(name, "document", NESTS_TOO_DEEP)
    return document


def _parse_yaml(name: str, raw: bytes) -> Any:
    """YAML read as a definition's is: its events first (nesting bounded, no anchor, alias or merge key), so
    nothing is built from a document that would expand."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise refused(name, "document", "expects JSON or YAML") from None
    read = read_events(text, MAX_DEPTH)
    if isinstance(read.fault, NestedTooDeep):
        raise refused(name, "document", f"{NESTS_TOO_DEEP}, at line {read.fault.line + 1}")
    if read.fault is not None:
        raise refused(name, "document", "expects JSON or YAML")
    for refusal in refusals_in(read.events, 1):
        what = "a YAML merge key (<<)" if refusal.words == NO_MERGE_KEYS else "a YAML anchor or alias"
        raise refused(name, "document", f"holds {what} at line {refusal.line}; write the value out where it is used")
    try:
        return construct(compose(read.events))
    except yaml.YAMLError:
        raise refused(name, "document", "expects JSON or YAML") from None


def _check_references(name: str, document: dict[str, Any]) -> None:
    """Every `$ref` points inside the document, resolves, and does not start a chain of references that loops.

    Iterative, and each reference's chain is followed once (`ends` keeps what each one leads to)."""
    ends: dict[str, bool] = {}
    stack: list[tuple[Any, str]] = [(document, "#")]
    while stack:
        value, place = stack.pop()
        if isinstance(value, dict):
            reference = value.get("$ref")
            if isinstance(reference, str):
                if not reference.startswith("#"):
                    raise refused(name, "document", f"holds a reference outside the document at {place}, never fetched")
                if _pointer(document, reference) is _MISSING:
                    raise refused(name, "document", f"holds a reference that does not resolve at {place}")
                if _loops(document, reference, ends):
                    raise refused(name, "document", f"holds references that loop, at {place}")
            stack.extend((item, f"{place}/{escape(key)}") for key, item in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((item, f"{place}/{index}") for index, item in reversed(list(enumerate(value))))


def _loops(document: dict[str, Any], reference: str, ends: dict[str, bool]) -> bool:
    """Whether following `reference` from one `$ref` object to the next comes back to one of them."""
    chain: list[str] = []
    current: str | None = reference
    loops = False
    while current is not None:
        if current in ends:
            loops = ends[current]
            break
        if current in chain:
            loops = True
            break
        chain.append(current)
        target = _pointer(document, current)
        following = target.get("$ref") if isinstance(target, dict) else None
        current = following if isinstance(following, str) and following.startswith("#") else None
    for seen in chain:
        ends[seen] = loops
    return loops


_MISSING: Any = object()


def _pointer(document: Any, reference: str) -> Any:
    current = document
    for part in tokens_of(reference.removeprefix("#")):
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return _MISSING
    return current


class _Converter:
    def __init__(self, name: str, entry: ToolServer, document: dict[str, Any]) -> None:
        self.name = name
        self.entry = entry
        self.document = document
        self.notes: list[str] = []
        self.schemes = self._schemes()

    def fail(self, where: str, expects: str) -> SettingsError:
        return refused(self.name, where, expects)

    def warn(self, what: str, reason: str) -> None:
        self.notes.append(f"tool_servers.{self.name}: {what} is not offered as a tool: {reason}")

    def resolve(self, value: Any) -> Any:
        """A value with a `$ref` (not to a component schema) replaced by what it points to."""
        seen = 0
        while isinstance(value, dict) and isinstance(value.get("$ref"), str) and seen < 32:
            value = _pointer(self.document, value["$ref"])
            seen += 1
        return value

    def convert(self) -> ApiDocument:
        self._check_security()
        base_url = self._base_url()
        operations: dict[str, Operation] = {}
        count = 0
        for path, item in (self.document.get("paths") or {}).items():
            item = self.resolve(item)
            for method in METHODS:
                operation = item.get(method) if isinstance(item, dict) else None
                if not isinstance(operation, dict):
                    continue
                count += 1
                if count > MAX_OPERATIONS:
                    raise self.fail("document", f"expects at most {MAX_OPERATIONS} operations")
                built = self._operation(path, method, item, operation)
                if built is None:
                    continue
                if built.tool.name in operations:
                    raise self.fail("document", f"has two operations that share the tool name {built.tool.name}")
                operations[built.tool.name] = built
        listed = sum(
            len(json.dumps([o.tool.name, o.tool.description, o.tool.input_schema]).encode())
            for o in operations.values()
        )
        if listed > MAX_LISTED_BYTES:
            raise self.fail("document", "has tools that take more than 16 MiB when listed")
        return ApiDocument(base_url, operations, self.schemes, tuple(self.notes))

    def _schemes(self) -> dict[str, Scheme]:
        declared = ((self.document.get("components") or {}).get("securitySchemes")) or {}
        schemes: dict[str, Scheme] = {}
        for scheme_name, raw in declared.items():
            scheme = self.resolve(raw)
            kind = str(scheme.get("type"))
            schemes[scheme_name] = Scheme(
                scheme_name,
                kind,
                location=scheme.get("in"),
                parameter=scheme.get("name"),
                http_scheme=str(scheme.get("scheme", "")).lower() or None,
            )
        return schemes

    def _check_security(self) -> None:
        given = self.entry.security or {}
        placed: set[tuple[str, str]] = set()
        for scheme_name, value in given.items():
            where = f"security.{scheme_name}"
            scheme = self.schemes.get(scheme_name)
            if scheme is None:
                raise self.fail(where, "expects the name of a security scheme the document declares")
            if scheme.kind == "apiKey" and scheme.location == "cookie":
                raise self.fail(where, "names an apiKey the document places in a cookie, which the server cannot send")
            if scheme.kind == "http" and scheme.http_scheme not in ("bearer", "basic"):
                raise self.fail(where, "names an http scheme other than bearer and basic")
            if scheme.kind == "mutualTLS":
                raise self.fail(where, "names a mutualTLS scheme, which the server cannot give")
            if scheme.kind in ("oauth2", "openIdConnect"):
                raise self.fail(where, f"names an {scheme.kind} scheme, whose credential comes from the auth block")
            if scheme.kind == "http" and scheme.http_scheme == "basic" and ":" not in value:
                raise self.fail(where, "expects user:password for a basic scheme")
            if scheme.kind == "apiKey" and scheme.parameter:
                placed.add((str(scheme.location), scheme.parameter.lower()))
            if scheme.kind == "http":
                placed.add(("header", "authorization"))
        for header in self.entry.headers or {}:
            if ("header", header.lower()) in placed:
                raise self.fail(f"headers.{header}", "is a header a scheme given under security also places")
        for parameter in self.entry.query_params or {}:
            if ("query", parameter.lower()) in placed:
                raise self.fail(
                    f"query_params.{parameter}", "is a query parameter a scheme given under security also places"
                )
        if self.entry.auth is not None and not any(
            s.kind in ("oauth2", "openIdConnect") for s in self.schemes.values()
        ):
            raise self.fail("auth", "expects a document that declares an oauth2 or openIdConnect scheme")

    def _given(self) -> set[str]:
        given = set(self.entry.security or {})
        if self.entry.auth is not None:
            given |= {s.name for s in self.schemes.values() if s.kind in ("oauth2", "openIdConnect")}
        return given

    def _base_url(self) -> str:
        if self.entry.base_url is not None:
            return self.entry.base_url.rstrip("/")
        servers = self.document.get("servers") or []
        first = servers[0] if servers and isinstance(servers[0], dict) else None
        if first is None:
            raise self.fail("base_url", "is required, since the document names no server")
        url = str(first.get("url", ""))
        for variable, spec in (first.get("variables") or {}).items():
            url = url.replace("{" + variable + "}", str((spec or {}).get("default", "")))
        if "://" not in url:
            raise self.fail("base_url", "is required, since the document names its server relative to a file")
        if not is_https_or_loopback(url):
            raise self.fail("document", "names a first server that is neither https nor on a loopback address")
        if has_query_or_fragment(url):
            raise self.fail("document", "names a first server with a query or a fragment")
        return url.rstrip("/")

    def check_path(self, path: str) -> None:
        at = "#/paths/" + escape(path)
        if not path.startswith("/"):
            raise self.fail("document", f"has a path that does not begin with /, at {at}")
        if "?" in path or "#" in path:
            raise self.fail("document", f"has a path holding a ? or a #, at {at}")
        if any(segment in (".", "..") for segment in path.split("/")):
            raise self.fail("document", f"has a path holding a . or .. segment, at {at}")

    def _operation(self, path: str, method: str, item: dict[str, Any], operation: dict[str, Any]) -> Operation | None:
        what = f"{method.upper()} {path}"
        tool_name = self._tool_name(path, method, operation)
        if method == "trace":
            self.warn(what, "a TRACE is never offered")
            return None
        merged: dict[tuple[str, str], dict[str, Any]] = {}
        for raw in [*(item.get("parameters") or []), *(operation.get("parameters") or [])]:
            parameter = self.resolve(raw)
            merged[(str(parameter.get("name")), str(parameter.get("in")))] = parameter
        properties: dict[str, Any] = {}
        required: list[str] = []
        parameters: list[Parameter] = []
        for (parameter_name, location), parameter in merged.items():
            if location in ("header", "cookie"):
                self.warn(what, f"it needs a {location} parameter, {parameter_name}")
                return None
            schema = self.resolve(parameter.get("schema") or {})
            if location == "path" and parameter.get("style", "simple") != "simple":
                self.warn(what, f"its path parameter {parameter_name} has a style other than simple")
                return None
            if location == "query":
                if parameter.get("style", "form") != "form" or parameter.get("explode", True) is False:
                    self.warn(what, f"its query parameter {parameter_name} is not of style form with explode")
                    return None
                if schema.get("type") == "object" or "properties" in schema:
                    self.warn(what, f"it takes an object in its query, {parameter_name}")
                    return None
            properties[parameter_name] = parameter.get("schema") or {}
            is_required = bool(parameter.get("required")) or location == "path"
            if is_required:
                required.append(parameter_name)
            parameters.append(Parameter(parameter_name, location, is_required, schema.get("type") == "array"))
        has_body = False
        body = self.resolve(operation.get("requestBody")) if operation.get("requestBody") else None
        if isinstance(body, dict):
            if method in ("get", "head"):
                self.warn(what, "a GET or HEAD that takes a body is never offered")
                return None
            content = body.get("content") or {}
            json_type = next((t for t in content if t == "application/json" or t.endswith("+json")), None)
            if json_type is None:
                self.warn(what, "it takes a body that is not JSON")
                return None
            properties["body"] = (content[json_type] or {}).get("schema") or {}
            has_body = True
            if body.get("required"):
                required.append("body")
        input_schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
        if required:
            input_schema["required"] = required
        definitions = self._definitions(properties)
        if definitions:
            input_schema["$defs"] = definitions
        input_schema = _rewrite_references(input_schema)
        if len(json.dumps(input_schema).encode()) > MAX_INPUT_SCHEMA_BYTES:
            self.warn(what, "its input schema takes more than 64 KiB")
            return None
        alternatives = self._alternatives(operation)
        if alternatives is None:
            return None
        description = "\n\n".join(
            str(part) for part in (operation.get("summary"), operation.get("description")) if part
        )
        hints = {"readOnlyHint": method in READ_ONLY, "destructiveHint": method == "delete"}
        hints["idempotentHint"] = method in IDEMPOTENT
        hints["openWorldHint"] = True
        annotations = {key: value for key, value in hints.items() if value}
        tool = ListedTool(tool_name, description, input_schema, annotations)
        return Operation(tool, method, path, tuple(parameters), has_body, alternatives)

    def _tool_name(self, path: str, method: str, operation: dict[str, Any]) -> str:
        operation_id = operation.get("operationId")
        if isinstance(operation_id, str) and operation_id:
            return _NOT_IN_TOOL_NAME.sub("_", operation_id)[:128]
        words = re.findall(r"[a-z0-9]+", path.lower())
        return "_".join([method, *words])[:128]

    def _alternatives(self, operation: dict[str, Any]) -> tuple[tuple[str, ...], ...] | None:
        requirement = operation.get("security", self.document.get("security"))
        if not requirement:
            return ()
        given = self._given()
        alternatives = [tuple(alternative) for alternative in requirement if isinstance(alternative, dict)]
        usable = tuple(alternative for alternative in alternatives if set(alternative) <= given)
        if not usable:
            needed = " or ".join("+".join(alternative) or "(none)" for alternative in alternatives)
            what = str(operation.get("operationId") or "an operation")
            self.warn(what, f"the entry gives none of the schemes it needs ({needed})")
            return None
        return usable

    def _definitions(self, properties: Mapping[str, Any]) -> dict[str, Any]:
        """Every component schema the properties refer to, directly or through each other, by name."""
        schemas = (self.document.get("components") or {}).get("schemas") or {}
        found: dict[str, Any] = {}
        pending = list(_schema_references(properties))
        while pending:
            schema_name = pending.pop()
            if schema_name in found or schema_name not in schemas:
                continue
            found[schema_name] = schemas[schema_name]
            pending.extend(_schema_references(schemas[schema_name]))
        return found


def _schema_references(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        reference = value.get("$ref")
        if isinstance(reference, str) and reference.startswith(_COMPONENT_SCHEMA):
            yield unescape(reference.removeprefix(_COMPONENT_SCHEMA))
        for item in value.values():
            yield from _schema_references(item)
    elif isinstance(value, list):
        for item in value:
            yield from _schema_references(item)


def _rewrite_references(value: Any) -> Any:
    """Component-schema references pointed at `$defs`, so the input schema is whole on its own."""
    if isinstance(value, dict):
        rewritten = {key: _rewrite_references(item) for key, item in value.items()}
        reference = rewritten.get("$ref")
        if isinstance(reference, str) and reference.startswith(_COMPONENT_SCHEMA):
            rewritten["$ref"] = "#/$defs/" + reference.removeprefix(_COMPONENT_SCHEMA)
        return rewritten
    if isinstance(value, list):
        return [_rewrite_references(item) for item in value]
    return value
