"""The tools of each endpoint, generated from the catalog once at start (spec mcp.md §3, §4).

Every catalog operation with `has_tool` becomes a tool: its name, title and description are the operation's,
its `inputSchema` the same JSON Schema the OpenAPI document uses (`schemas.input_schema_of`), its annotations
the operation's hints, all four always set. No tool declares an `outputSchema`. Nothing here names an
operation except the † rule of §4.2, so operations added to the catalog later become tools with no change.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from auto_runtime.auth.caller import Caller
from auto_runtime.mcp_server.endpoints import EndpointKind
from auto_runtime.operations.catalog import Catalog
from auto_runtime.operations.operation import Operation
from auto_runtime.operations.schemas import SCHEMA_BASE, input_schema_of

PLAYBOOK_ARGUMENT_PATTERN = "^[a-z][a-z0-9-]{2,47}$"
PLAYBOOK_ARGUMENT: Mapping[str, Any] = {
    "type": "string",
    "pattern": PLAYBOOK_ARGUMENT_PATTERN,
    "description": "The id of the playbook to act in",
}
OUTSIDE_EFFECT_TOOLS = frozenset({"execute", "run_definition"})
"""Tools marked destructive while a tool server is configured or people may add connections (the † of §4.2)."""


@dataclass(frozen=True)
class ServedTool:
    """One tool of one endpoint kind: the operation it runs and what `tools/list` shows of it.

    `takes_playbook` is true for a playbook tool on `/mcp`, whose `playbook` argument names where it acts.
    """

    operation: Operation
    tool: types.Tool
    takes_playbook: bool

    @property
    def name(self) -> str:
        return self.operation.name

    def callable_by(self, caller: Caller) -> bool:
        """Whether the caller holds one of the tool's permissions (a tool that needs none is everyone's)."""
        return not self.operation.permissions or caller.holds_any(self.operation.permissions)


def with_playbook_argument(schema: Mapping[str, Any], operation_name: str) -> dict[str, Any]:
    """The input schema with `playbook` as its first, required property; in every member of a root union."""

    def add(node: Mapping[str, Any]) -> dict[str, Any]:
        result = dict(node)
        result["properties"] = {"playbook": dict(PLAYBOOK_ARGUMENT), **dict(node.get("properties", {}))}
        result["required"] = ["playbook", *[r for r in node.get("required", []) if r != "playbook"]]
        return result

    extended = copy.deepcopy(dict(schema))
    members = [key for key in ("oneOf", "anyOf") if isinstance(extended.get(key), list)]
    if members:
        for key in members:
            extended[key] = [add(member) if isinstance(member, dict) else member for member in extended[key]]
        if "properties" in extended:
            extended = add(extended)
    else:
        extended = add(extended)
    if "$id" in extended:
        extended["$id"] = SCHEMA_BASE + f"{operation_name}/mcp-input"
    return extended


def annotations_of(operation: Operation, outside_effects: bool) -> types.ToolAnnotations:
    hints = operation.hints
    destructive = outside_effects if operation.name in OUTSIDE_EFFECT_TOOLS else hints.destructive
    return types.ToolAnnotations(
        read_only_hint=hints.read_only,
        destructive_hint=destructive,
        idempotent_hint=hints.idempotent,
        open_world_hint=hints.open_world,
    )


def _tool(operation: Operation, *, takes_playbook: bool, outside_effects: bool) -> ServedTool:
    schema = copy.deepcopy(input_schema_of(operation.name, operation.input_model))
    if takes_playbook:
        schema = with_playbook_argument(schema, operation.name)
    tool = types.Tool(
        name=operation.name,
        title=operation.title,
        description=operation.description,
        input_schema=schema,
        annotations=annotations_of(operation, outside_effects),
    )
    return ServedTool(operation=operation, tool=tool, takes_playbook=takes_playbook)


class ToolSet:
    """The tools of each endpoint kind, in the order §1 lists them; filtered per caller when listed."""

    def __init__(self, catalog: Catalog, *, outside_effects: bool) -> None:
        operations = [operation for operation in catalog if operation.has_tool]
        org_operations = [o for o in operations if o.scope == "org"]
        org_names = {o.name for o in org_operations}
        playbook_operations = [o for o in operations if o.scope == "playbook"]
        global_operations = [o for o in operations if o.scope == "global"]

        def served(items: Iterable[Operation], takes_playbook: bool) -> list[ServedTool]:
            return [_tool(o, takes_playbook=takes_playbook, outside_effects=outside_effects) for o in items]

        self._by_kind: dict[EndpointKind, tuple[ServedTool, ...]] = {
            "own": (
                *served(org_operations, False),
                *served((o for o in playbook_operations if o.name not in org_names), True),
                *served(global_operations, False),
            ),
            "org": (*served(org_operations, False), *served(global_operations, False)),
            "playbook": (*served(playbook_operations, False), *served(global_operations, False)),
        }

    def of_kind(self, kind: EndpointKind) -> tuple[ServedTool, ...]:
        """Every tool of an endpoint kind, whatever the caller may call."""
        return self._by_kind[kind]

    def for_caller(self, kind: EndpointKind, caller: Caller) -> list[ServedTool]:
        """The tools a connection lists: those of its endpoint whose permission the caller holds."""
        return [served for served in self._by_kind[kind] if served.callable_by(caller)]

    def find(self, kind: EndpointKind, caller: Caller, name: str) -> ServedTool | None:
        """The tool a connection lists under `name`, or None: a tool it does not list is unknown to it (§7)."""
        for served in self.for_caller(kind, caller):
            if served.name == name:
                return served
        return None
