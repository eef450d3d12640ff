"""Every catalog operation that is not HTTP-only has exactly one tool, with the OpenAPI operation's input schema.

Nothing here names today's operations: operations added to the catalog later are checked by the same tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from auto_runtime.auth.caller import LOCAL_CALLER, Caller, Permission
from auto_runtime.guides import load_guides
from auto_runtime.http.openapi import build_openapi, with_keywords
from auto_runtime.mcp_server.bounds import sentences_in
from auto_runtime.mcp_server.endpoints import EndpointKind
from auto_runtime.mcp_server.toolset import PLAYBOOK_ARGUMENT, ToolSet
from auto_runtime.operations.catalog import Catalog
from auto_runtime.operations.operation import Operation
from auto_runtime.operations.runtime_catalog import build_catalog
from auto_runtime.operations.schemas import input_schema_of

KINDS: tuple[EndpointKind, ...] = ("own", "org", "playbook")


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return build_catalog(load_guides())


@pytest.fixture(scope="module")
def tools(catalog: Catalog) -> ToolSet:
    return ToolSet(catalog, outside_effects=False)


def _kinds_of(operation: Operation, catalog: Catalog) -> tuple[EndpointKind, ...]:
    """Where the spec serves an operation's tool (§1, §3)."""
    if operation.scope == "global":
        return KINDS
    if operation.scope == "org":
        return ("own", "org")
    org_twin = any(o.name == operation.name and o.scope == "org" and o.has_tool for o in catalog)
    return ("playbook",) if org_twin else ("own", "playbook")


def _openapi_operations(document: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for methods in document["paths"].values():
        yield from methods.values()


def test_every_operation_with_a_tool_has_exactly_one_tool_per_endpoint_it_is_served_on(
    catalog: Catalog, tools: ToolSet
) -> None:
    for kind in KINDS:
        names = [served.name for served in tools.of_kind(kind)]
        assert len(names) == len(set(names)), f"{kind}: a tool is listed twice"
    for operation in catalog:
        for kind in KINDS:
            matching = [s for s in tools.of_kind(kind) if s.operation is operation]
            expected = 1 if operation.has_tool and kind in _kinds_of(operation, catalog) else 0
            assert len(matching) == expected, (operation.name, operation.scope, kind)


def test_http_only_operations_have_no_tool(catalog: Catalog, tools: ToolSet) -> None:
    http_only = {o.name for o in catalog if not o.has_tool} - {o.name for o in catalog if o.has_tool}
    for kind in KINDS:
        assert not http_only & {s.name for s in tools.of_kind(kind)}


def test_the_input_schema_is_the_openapi_operations(catalog: Catalog, tools: ToolSet) -> None:
    document = build_openapi(catalog, load_guides())
    by_id = {entry["operationId"]: entry for entry in _openapi_operations(document)}
    schemas = document["components"]["schemas"]
    for kind in KINDS:
        for served in tools.of_kind(kind):
            operation = served.operation
            schema = served.tool.input_schema
            expected = input_schema_of(operation.name, operation.input_model)
            if served.takes_playbook:
                assert next(iter(schema["properties"])) == "playbook"
                assert schema["properties"]["playbook"] == dict(PLAYBOOK_ARGUMENT)
                assert "playbook" in schema["required"]
                schema = {
                    **schema,
                    "$id": expected["$id"],
                    "properties": {k: v for k, v in schema["properties"].items() if k != "playbook"},
                    "required": [r for r in schema["required"] if r != "playbook"],
                }
                if not schema["required"] and "required" not in expected:
                    del schema["required"]
            assert schema == expected, (kind, operation.name)
            assert schema["type"] == "object"
            assert schema.get("additionalProperties") is False

            entry = by_id[operation.openapi_operation_id]
            assert entry["description"] == served.tool.description
            fields = {p["name"] for p in entry["parameters"]} - {"org"}
            if operation.scope == "playbook":
                fields -= {"playbook"}
            if "requestBody" in entry:
                reference = entry["requestBody"]["content"]["application/json"]["schema"]["$ref"]
                body = schemas[reference.removeprefix("#/components/schemas/")]
                fields |= set(body["properties"])
                for name, property_schema in body["properties"].items():
                    # The document adds the operation's openapi_keywords, and only those, to the tool's schema.
                    documented = with_keywords(expected["properties"][name], operation.openapi_keywords.get(name, {}))
                    assert documented == property_schema, (operation.name, name)
            assert fields == set(expected["properties"]), operation.name


def test_tools_carry_every_annotation_and_no_output_schema(tools: ToolSet) -> None:
    for kind in KINDS:
        for served in tools.of_kind(kind):
            hints = served.operation.hints
            annotations = served.tool.annotations
            assert annotations is not None
            wire = annotations.model_dump(by_alias=True, exclude_none=True)
            assert set(wire) == {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
            assert annotations.read_only_hint is hints.read_only
            assert annotations.idempotent_hint is hints.idempotent
            assert annotations.open_world_hint is hints.open_world
            assert served.tool.output_schema is None
            assert served.tool.title == served.operation.title


def test_running_a_definition_is_destructive_only_while_tools_may_change_things_outside(catalog: Catalog) -> None:
    calm = ToolSet(catalog, outside_effects=False)
    risky = ToolSet(catalog, outside_effects=True)
    for kind in KINDS:
        for quiet, loud in zip(calm.of_kind(kind), risky.of_kind(kind), strict=True):
            assert quiet.tool.annotations is not None and loud.tool.annotations is not None
            if quiet.name in ("run_definition", "execute"):
                assert quiet.tool.annotations.destructive_hint is False
                assert loud.tool.annotations.destructive_hint is True
            else:
                assert quiet.tool.annotations == loud.tool.annotations


def test_the_tool_list_follows_the_key(tools: ToolSet) -> None:
    reader = Caller(id="key_r", org="acme", permissions=frozenset({Permission.PLAYBOOK_READ}))
    for kind in KINDS:
        listed = tools.for_caller(kind, reader)
        assert listed, kind
        for served in listed:
            assert served.operation.hints.read_only, served.name
            assert not served.operation.permissions or Permission.PLAYBOOK_READ in served.operation.permissions
        assert len(tools.for_caller(kind, LOCAL_CALLER)) == len(tools.of_kind(kind))


def test_own_endpoint_lists_org_tools_then_playbook_tools_then_global(tools: ToolSet) -> None:
    order = {"org": 0, "playbook": 1, "global": 2}
    scopes = [order[s.operation.scope] for s in tools.of_kind("own")]
    assert scopes == sorted(scopes)
    assert all(s.takes_playbook == (s.operation.scope == "playbook") for s in tools.of_kind("own"))
    assert not any(s.takes_playbook for kind in ("org", "playbook") for s in tools.of_kind(kind))


def test_descriptions_keep_their_bounds(tools: ToolSet) -> None:
    for kind in KINDS:
        for served in tools.of_kind(kind):
            description = served.tool.description or ""
            assert 3 <= sentences_in(description) <= 8, served.name
            assert len(description) <= 800, served.name
