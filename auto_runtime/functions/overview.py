"""Helpers for the overviews types write when a version is saved: Markdown a person reads instead of a document."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _type_words(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    if kind is None and "enum" in schema:
        return "one of " + ", ".join(f"`{v}`" for v in schema["enum"])
    return str(kind) if kind is not None else "any value"


def schema_table(schema: Mapping[str, Any] | None) -> str:
    """A table of an object schema's fields, or one line for any other schema."""
    if not schema:
        return "Any JSON value.\n"
    properties = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(properties, Mapping) or not properties:
        description = schema.get("description")
        return f"A {_type_words(schema)}{': ' + str(description) if description else ''}.\n"
    required = set(schema.get("required", []))
    lines = ["| Field | Type | Required | Meaning |", "| --- | --- | --- | --- |"]
    for name, field in properties.items():
        field_schema = field if isinstance(field, Mapping) else {}
        lines.append(
            f"| `{_cell(str(name))}` | {_cell(_type_words(field_schema))} | {'yes' if name in required else 'no'} "
            f"| {_cell(str(field_schema.get('description', '')))} |"
        )
    return "\n".join(lines) + "\n"
