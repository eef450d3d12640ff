"""JSON Schemas (2020-12) of operation inputs and outputs, generated from their pydantic models.

Each schema is self-contained, with its definitions under `$defs` and its own `$id` under
`https://on.auto/schemas/runtime/`. The same schema is an operation's OpenAPI input and its MCP tool's
`inputSchema`.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import BaseModel

SCHEMA_BASE = "https://on.auto/schemas/runtime/"
DIALECT = "https://json-schema.org/draft/2020-12/schema"
_SCHEMA_MAPS = ("properties", "$defs", "patternProperties", "dependentSchemas")


def _without_titles(node: Any) -> Any:
    """Drops pydantic's generated `title` keywords and `default: null` (fields that are only left out)."""
    if isinstance(node, list):
        return [_without_titles(item) for item in node]
    if not isinstance(node, dict):
        return node
    cleaned: dict[str, Any] = {}
    for key, value in node.items():
        if (key == "title" and isinstance(value, str)) or (key == "default" and value is None):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            cleaned[key] = {name: _without_titles(sub) for name, sub in value.items()}
        else:
            cleaned[key] = _without_titles(value)
    return cleaned


def _inline_definitions(schema: dict[str, Any]) -> dict[str, Any]:
    """Replaces local `$ref`s to `$defs` by the definitions themselves, so each schema reads whole without
    resolving references (tools that place a schema inside a larger document resolve them against it).
    A recursive definition keeps its reference and its `$defs` entry."""
    definitions: dict[str, Any] = schema.get("$defs", {})
    kept: set[str] = set()

    def inline(node: Any, trail: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [inline(item, trail) for item in node]
        if not isinstance(node, dict):
            return node
        reference = node.get("$ref")
        if isinstance(reference, str) and reference.startswith("#/$defs/"):
            name = reference.removeprefix("#/$defs/")
            if name in trail or name not in definitions:
                kept.add(name)
                return node
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            return {**inline(definitions[name], (*trail, name)), **inline(siblings, trail)}
        return {k: inline(v, trail) for k, v in node.items() if k != "$defs"}

    inlined: dict[str, Any] = inline(schema, ())
    if kept:
        inlined["$defs"] = {name: definitions[name] for name in sorted(kept)}
    return inlined


@cache
def model_schema(model: type[BaseModel], schema_id: str) -> dict[str, Any]:
    schema = _inline_definitions(_without_titles(model.model_json_schema(mode="validation")))
    return {"$schema": DIALECT, "$id": SCHEMA_BASE + schema_id, **schema}


def input_schema_of(operation_name: str, model: type[BaseModel]) -> dict[str, Any]:
    return model_schema(model, f"{operation_name}/input")


def output_schema_of(operation_name: str, model: type[BaseModel]) -> dict[str, Any]:
    return model_schema(model, f"{operation_name}/output")
