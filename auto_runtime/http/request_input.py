"""Turning an HTTP request into an operation's input object, by the seeds' request rules.

- A command's body is UTF-8 JSON (`Content-Type: application/json`), a JSON object, at most 1 MiB; a larger
  `Content-Length` is refused before the body is read; compressed bodies are refused.
- Query parameters are for `GET` and `DELETE`, which take no body; a query beside a `POST`/`PUT` is refused.
- A field may be given in one place only (path, query or body), a query parameter only once, and a member of a
  body's object only once (`json_body`: `bad_request` at the member's pointer).
Query values are strings; they are read as the JSON types the input schema declares (integers, booleans).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from quart import Request

from auto_runtime.http.deep_json import json_integer
from auto_runtime.http.json_body import BodyNotJson, DuplicateField, duplicate_field_rejection, read_json_bytes
from auto_runtime.operations.operation import Operation
from auto_runtime.operations.schemas import input_schema_of
from auto_runtime.problems import Rejection, bad_request

MAX_JSON_BODY = 1_048_576
INTEGER_TEXT = re.compile(r"^-?[0-9]+$")
BEYOND_EVERY_BOUND = 10**100
"""Stands for an integer query value too long to convert; every integer query parameter has bounds far inside
it (`limit` 1 to 100, `days` 7, 14 or 30), so the input check refuses it with the words of the bound."""


def content_too_large(limit: int) -> Rejection:
    """Refused without reading the rest of the body, so the connection closes after the answer."""
    return Rejection(
        "content_too_large",
        f"The body is larger than this operation accepts ({limit:,} bytes).",
        headers={"Connection": "close"},
    )


def unsupported_media_type(detail: str) -> Rejection:
    return Rejection("unsupported_media_type", detail)


def _declared_length(request: Request) -> int | None:
    value = request.headers.get("Content-Length")
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise bad_request("The Content-Length header is not a number.") from None


def _has_body(request: Request) -> bool:
    length = _declared_length(request)
    return bool(length) or "chunked" in request.headers.get("Transfer-Encoding", "").lower()


async def read_limited_body(request: Request, limit: int) -> bytes:
    """The whole body, refusing a declared or streamed length past `limit` without keeping more of it."""
    length = _declared_length(request)
    if length is not None and length > limit:
        raise content_too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.body:
        size += len(chunk)
        if size > limit:
            raise content_too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _check_json_media_type(request: Request) -> None:
    encoding = request.headers.get("Content-Encoding", "").strip().lower()
    if encoding and encoding != "identity":
        raise unsupported_media_type("Compressed bodies are not accepted; send the JSON as it is.")
    content_type = request.headers.get("Content-Type", "")
    media_type, _, parameters = content_type.partition(";")
    if media_type.strip().lower() != "application/json":
        raise unsupported_media_type("Send the body as application/json.")
    for parameter in parameters.split(";"):
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() not in ("utf-8", "utf8"):
            raise unsupported_media_type("Send the JSON in UTF-8.")


async def discard_body(request: Request) -> None:
    """Reads and drops a body that is refused unread, so the connection can serve the next request."""
    await read_limited_body(request, MAX_JSON_BODY)


async def read_json_object(request: Request) -> dict[str, Any]:
    """The body of a command as a JSON object; `{}` when there is no body at all."""
    if not _has_body(request) and not request.headers.get("Content-Type"):
        return {}
    try:
        _check_json_media_type(request)
    except Rejection:
        await discard_body(request)
        raise
    body = await read_limited_body(request, MAX_JSON_BODY)
    if not body:
        return {}
    try:
        value = await read_json_bytes(body)
    except UnicodeDecodeError:
        raise bad_request("The body is not UTF-8.") from None
    except BodyNotJson as error:
        raise bad_request(f"The body is not JSON: {error}.") from None
    except DuplicateField as duplicate:
        raise duplicate_field_rejection(duplicate) from None
    if not isinstance(value, dict):
        raise bad_request("The body is not a JSON object.")
    return value


def _typed_query_value(text: str, schema: Mapping[str, Any] | None) -> Any:
    types: set[str] = set()
    if isinstance(schema, Mapping):
        declared = schema.get("type")
        if isinstance(declared, str):
            types.add(declared)
        elif isinstance(declared, list):
            types.update(str(t) for t in declared)
        for member in schema.get("anyOf", []) if isinstance(schema.get("anyOf"), list) else []:
            if isinstance(member, Mapping) and isinstance(member.get("type"), str):
                types.add(member["type"])
    if "integer" in types and INTEGER_TEXT.match(text):
        return _query_integer(text)
    if "number" in types:
        try:
            return float(text) if not INTEGER_TEXT.match(text) else _query_integer(text)
        except ValueError:
            return text
    if "boolean" in types and text in ("true", "false"):
        return text == "true"
    return text


def _query_integer(text: str) -> int:
    """The integer of a query value of digits; one longer than the interpreter converts (more than 4,300
    digits, leading zeros aside) as `BEYOND_EVERY_BOUND` of its sign, refused as any other value out of bounds."""
    negative = text.startswith("-")
    digits = text.removeprefix("-").lstrip("0") or "0"
    value = json_integer(digits)
    magnitude = value if isinstance(value, int) else BEYOND_EVERY_BOUND
    return -magnitude if negative else magnitude


def query_input(request: Request, operation: Operation) -> dict[str, Any]:
    if not request.query_string:
        return {}
    properties = input_schema_of(operation.name, operation.input_model).get("properties", {})
    values: dict[str, Any] = {}
    for name in request.args:
        given = request.args.getlist(name)
        if len(given) > 1:
            raise bad_request(f"The query parameter {name} is given more than once.")
        values[name] = _typed_query_value(given[0], properties.get(name))
    return values


async def operation_input(request: Request, operation: Operation, path_values: Mapping[str, str]) -> dict[str, Any]:
    """The operation's whole input: path fields plus the query (reads) or the JSON body (commands)."""
    if operation.takes_body:
        if request.query_string:
            await discard_body(request)
            raise bad_request(f"{operation.method} takes its input in the JSON body, not in the query string.")
        fields = await read_json_object(request)
    else:
        if _has_body(request):
            await discard_body(request)
            raise bad_request(f"{operation.method} takes no body; give its input in the query string.")
        fields = query_input(request, operation)
    for name, value in path_values.items():
        if name in fields:
            raise bad_request(f"The field {name} is given both in the path and in the request.")
        fields[name] = value
    return fields
