"""The OpenAPI 3.1.1 document, built once at start from the catalog.

One operation per catalog entry: `operationId` its name (`search_in_org` for the org's `search`), summary its
title, one tag for the resource it acts on, its description (the MCP tool's). Inputs in the path, the query
(reads) or the JSON body (commands). Schemas are JSON Schema 2020-12, each with its own `$id`, with the keywords
an operation adds for the document (`Operation.openapi_keywords`: what its handler checks that JSON Schema can
state). Every problem an operation can return is listed under its status. The server URL is the relative `/v1`.
Every response names the two headers every response may carry: `x-request-id` and, with telemetry on, `x-trace-id`.
A success answer carries the operation's `links` (`Operation.links`): which value of it leads to which operation,
so a generated client follows the right id (a page of events to `get_event` by the event's own id).

Security: one `bearer` scheme (HTTP bearer: an API key or a signed-in person's access token). Each operation that
needs a permission requires it, one security requirement per permission it accepts, naming that permission as
its role (OpenAPI 3.1 lets a requirement of a non-OAuth scheme list roles); an operation that needs none declares
an empty `security`. A server in local mode asks for no credential, but the document is the same on every server.

`python -m auto_runtime.http.openapi > docs/assets/openapi.json` writes the release's document into the repository.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from auto_runtime import __version__
from auto_runtime.guides import load_guides
from auto_runtime.operations.catalog import Catalog
from auto_runtime.operations.operation import PATH_PARAMETER, Operation
from auto_runtime.operations.runtime_catalog import build_catalog
from auto_runtime.operations.schemas import DIALECT, SCHEMA_BASE, input_schema_of, output_schema_of
from auto_runtime.problems import KIND_PROBLEM_TYPES, PROBLEM_BASE, PROBLEM_REASONS

PROBLEM_SCHEMA_ID = SCHEMA_BASE + "problem"
PROBLEM_SCHEMA: dict[str, Any] = {
    "$schema": DIALECT,
    "$id": PROBLEM_SCHEMA_ID,
    "type": "object",
    "description": "An RFC 9457 problem document.",
    "required": ["type", "title", "status", "detail", "reason"],
    "properties": {
        "type": {"type": "string", "format": "uri"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "reason": {"type": "string"},
        "kind": {"type": "string"},
        "because": {"type": "string"},
        "instance": {"type": "string"},
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["detail", "pointer"],
                "properties": {"detail": {"type": "string"}, "pointer": {"type": "string"}},
            },
        },
    },
}
SCOPE_PARAMETERS = {
    "org": {
        "name": "org",
        "in": "path",
        "required": True,
        "description": "The org",
        "schema": {"type": "string"},
    },
    "playbook": {
        "name": "playbook",
        "in": "path",
        "required": True,
        "description": "The id of the playbook",
        "schema": {"type": "string", "pattern": "^[a-z][a-z0-9-]{2,47}$"},
    },
}
BEARER = "bearer"
SECURITY_SCHEMES: dict[str, Any] = {
    BEARER: {
        "type": "http",
        "scheme": "bearer",
        "description": "An API key (`auto-runtime key` prints one) or a signed-in person's access token, sent as "
        "`Authorization: Bearer <credential>`. The roles of a requirement are the permissions the credential may "
        "hold for the operation, any one of them. A server in local mode asks for none.",
    }
}
RESPONSE_HEADERS: dict[str, Any] = {
    "x-request-id": {
        "description": "The server's id of this request, which its log lines carry.",
        "schema": {"type": "string"},
    },
    "x-trace-id": {
        "description": "The trace id of this request, when the server sends telemetry.",
        "required": False,
        "schema": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
    },
}
RESPONSE_HEADER_REFS = {name: {"$ref": f"#/components/headers/{name}"} for name in RESPONSE_HEADERS}
BODY_REASONS = ("bad_request", "content_too_large", "unsupported_media_type")
ACCESS_REASONS = ("unauthenticated", "forbidden", "origin_not_allowed")


def _component_name(schema_id: str) -> str:
    return schema_id.removeprefix(SCHEMA_BASE).replace("/", "_")


def problem_reasons_of(operation: Operation) -> list[str]:
    reasons: list[str] = ["bad_request"]
    if operation.permissions:
        reasons.extend(ACCESS_REASONS)
    else:
        reasons.append("origin_not_allowed")
    if operation.takes_body:
        reasons.extend(BODY_REASONS)
    if operation.takes_bytes:
        reasons.append("length_required")
    reasons.append("not_found")
    if operation.scope == "playbook" and operation.is_command:
        reasons.append("conflict")
    reasons.append("invalid_input")
    reasons.extend(sorted(operation.reasons))
    reasons.append("internal")
    return list(dict.fromkeys(reasons))


def _problem_responses(operation: Operation) -> dict[str, Any]:
    by_status: dict[int, list[str]] = {}
    for reason in problem_reasons_of(operation):
        if reason in KIND_PROBLEM_TYPES:
            status = PROBLEM_REASONS[KIND_PROBLEM_TYPES[reason][0]].status
        else:
            status = PROBLEM_REASONS[reason].status
        by_status.setdefault(status, []).append(PROBLEM_BASE + reason)
    responses: dict[str, Any] = {}
    for status in sorted(by_status):
        types = ", ".join(by_status[status])
        responses[str(status)] = {
            "description": f"A problem: {types}",
            "headers": RESPONSE_HEADER_REFS,
            "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/problem"}}},
        }
    return responses


def with_keywords(schema: dict[str, Any], keywords: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` with `keywords` merged in: an object under a key both hold merged member by member, any other
    value replaced."""
    merged = dict(schema)
    for key, value in keywords.items():
        current = merged.get(key)
        if isinstance(value, Mapping) and isinstance(current, dict):
            merged[key] = with_keywords(current, value)
        else:
            merged[key] = value
    return merged


def security_of(operation: Operation) -> list[dict[str, list[str]]]:
    """One requirement per permission the operation accepts (any one suffices); none for an open operation."""
    return [{BEARER: [str(permission)]} for permission in sorted(operation.permissions)]


def _input_schema(operation: Operation) -> dict[str, Any]:
    """The operation's input schema, with the keywords it adds for the document merged into its fields."""
    schema = input_schema_of(operation.name, operation.input_model)
    if not operation.openapi_keywords:
        return schema
    properties = schema.get("properties", {})
    unknown = set(operation.openapi_keywords) - set(properties)
    if unknown:
        raise ValueError(f"{operation.name}: openapi_keywords name fields its input does not have: {sorted(unknown)}")
    refined = {
        name: with_keywords(field, operation.openapi_keywords.get(name, {})) for name, field in properties.items()
    }
    return {**schema, "properties": refined}


def _parameters(operation: Operation, input_schema: dict[str, Any]) -> list[dict[str, Any]]:
    parameters: list[dict[str, Any]] = [SCOPE_PARAMETERS["org"]] if operation.scope != "global" else []
    if operation.scope == "playbook":
        parameters.append(SCOPE_PARAMETERS["playbook"])
    properties: dict[str, Any] = input_schema.get("properties", {})
    required = set(input_schema.get("required", []))
    for name in operation.path_fields:
        schema = dict(properties.get(name, {"type": "string"}))
        description = schema.pop("description", None)
        parameter: dict[str, Any] = {"name": name, "in": "path", "required": True, "schema": schema}
        if name in operation.path_enums:
            parameter["schema"] = {"type": "string", "enum": list(operation.path_enums[name])}
        if description:
            parameter["description"] = description
        parameters.append(parameter)
    if not operation.takes_body:
        for name, schema in properties.items():
            if name in operation.path_fields:
                continue
            query_schema = dict(schema)
            description = query_schema.pop("description", None)
            parameter = {"name": name, "in": "query", "required": name in required, "schema": query_schema}
            if description:
                parameter["description"] = description
            parameters.append(parameter)
    return parameters


def _body_schema(operation: Operation, input_schema: dict[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in input_schema.items() if k not in ("properties", "required", "$id")}
    body["$id"] = SCHEMA_BASE + f"{operation.name}/body"
    body["properties"] = {k: v for k, v in input_schema.get("properties", {}).items() if k not in operation.path_fields}
    required = [r for r in input_schema.get("required", []) if r not in operation.path_fields]
    if required:
        body["required"] = required
    return body


def links_of(operation: Operation, catalog: Catalog) -> dict[str, Any]:
    """The OpenAPI links of an operation's success answer; a link to an operation the catalog lacks, or naming a
    parameter its target does not take, is a mistake of the catalog, refused at start."""
    links: dict[str, Any] = {}
    for name, link in operation.links.items():
        target = next((o for o in catalog if o.name == link.operation), None)
        if target is None:
            raise ValueError(f"{operation.name} links to {link.operation}, which the catalog lacks")
        taken = set(PATH_PARAMETER.findall(target.path)) | set(target.input_model.model_fields)
        if not set(link.parameters) <= taken:
            raise ValueError(f"{operation.name} links to {link.operation} with parameters it does not take")
        links[name] = {
            "operationId": target.openapi_operation_id,
            "parameters": dict(link.parameters),
            "description": link.description,
        }
    return links


def build_openapi(catalog: Catalog, guide_names: Iterable[str]) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    schemas: dict[str, Any] = {"problem": PROBLEM_SCHEMA}
    tags: dict[str, None] = {}
    for operation in catalog:
        input_schema = _input_schema(operation)
        entry: dict[str, Any] = {
            "operationId": operation.openapi_operation_id,
            "summary": operation.title,
            "description": operation.description,
            "tags": [operation.tag],
            "security": security_of(operation),
            "parameters": _parameters(operation, input_schema),
        }
        tags[operation.tag] = None
        if operation.takes_bytes:
            entry["requestBody"] = {
                "required": True,
                "content": {
                    media_type: {"schema": {"type": "string", "format": "binary"}}
                    for media_type in operation.body_media_types
                },
            }
        elif operation.takes_body:
            body = _body_schema(operation, input_schema)
            name = _component_name(body["$id"])
            schemas[name] = body
            entry["requestBody"] = {
                "required": bool(body.get("required")),
                "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}},
            }
        success: dict[str, Any] = {"description": f"{operation.title}: done", "headers": RESPONSE_HEADER_REFS}
        if operation.output_model is not None:
            output = output_schema_of(operation.name, operation.output_model)
            name = _component_name(output["$id"])
            schemas[name] = output
            success["content"] = {operation.output_media_type: {"schema": {"$ref": f"#/components/schemas/{name}"}}}
        else:
            success["content"] = {operation.output_media_type: {"schema": {"type": "string"}}}
        if operation.links:
            success["links"] = links_of(operation, catalog)
        entry["responses"] = {str(operation.success_status): success, **_problem_responses(operation)}
        path = operation.path.removeprefix("/v1")
        paths.setdefault(path, {})[operation.method.lower()] = entry
    return {
        "openapi": "3.1.1",
        "info": {
            "title": "Auto Runtime",
            "version": __version__,
            "description": "Playbooks, their definitions, runs, events and analytics. Guides: "
            + ", ".join(guide_names)
            + ".",
        },
        "jsonSchemaDialect": DIALECT,
        "servers": [{"url": "/v1"}],
        "tags": [{"name": tag} for tag in tags],
        "paths": paths,
        "components": {"schemas": schemas, "headers": RESPONSE_HEADERS, "securitySchemes": SECURITY_SCHEMES},
    }


def release_document_text() -> str:
    """The document every server of this release serves, as `docs/assets/openapi.json` keeps it (the seeds: each
    release's document is kept in the repository, so a client can be generated without running a server)."""
    guides = load_guides()
    return json.dumps(build_openapi(build_catalog(guides), guides), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    print(release_document_text(), end="")
